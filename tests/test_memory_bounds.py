"""Every in-memory record that grows with traffic has a bound: the request journal, the rate
limiter's clients, the realtime encoder's cache, a camera's login sessions, a server's fault
entries and the broker's outage log."""

from __future__ import annotations

import pytest

from api.automation import ratelimit
from api.automation.ratelimit import RateLimiter
from api.automation.realtime import EventEncoder
from api.faults import MAX_FAULTS, FaultSet
from api.realtime.broker import MAX_OUTAGES, SessionLog
from hardware.ports.errors import Unauthenticated
from hardware.ports.events import Event, EventKind
from twin.automation import users as users_mod
from twin.automation.server import automation_of
from twin.camera import camera as camera_mod
from twin.camera.wing import cameras_of
from twin.journal import RequestJournal
from twin.world import World


def test_the_journal_keeps_at_most_maxlen_entries_and_numbers_them_on(world: World) -> None:
    journal = RequestJournal(world, maxlen=3)
    for n in range(5):
        journal.record(float(n), "automation", "GET", "/api/x", f"/api/x/{n}", "", 200, "127.0.0.1")
    assert len(journal) == 3 and journal.dropped == 2
    assert [e.seq for e in journal.entries] == [3, 4, 5]
    assert [e.path for e in journal.entries] == ["/api/x/2", "/api/x/3", "/api/x/4"]
    assert [e.seq for e in journal.select(since=3)] == [4, 5]
    assert [e.seq for e in journal.select(since=0, limit=1)] == [3]
    journal.clear()
    journal.record(9.0, "automation", "GET", "/api/x", "/api/x", "", 200, "127.0.0.1")
    assert [e.seq for e in journal.entries] == [6]


def test_journal_entries_keep_every_field_and_share_equal_strings(world: World) -> None:
    journal = RequestJournal(world)
    path = "/api/devices/" + "d1"  # built at run time: two equal strings, two objects
    journal.record(1.0, "automation", "GET", "/api/devices/{id}", path, "a=1", 200, "127.0.0.1")
    journal.record(
        2.0, "automation", "GET", "/api/devices/{id}", "/api/devices/" + "d1", "", 429, "127.0.0.1",
        retry_after="40", fault="http_503", state="idle", stream=True, end=3.0,
    )  # fmt: skip
    first, second = journal.entries
    assert first.path is second.path
    assert (first.at, first.end, first.retry_after, first.fault, first.stream) == (
        1.0,
        0.0,
        None,
        None,
        False,
    )
    assert (second.at, second.end, second.status, second.retry_after) == (2.0, 3.0, 429, "40")
    assert (second.fault, second.state, second.stream) == ("http_503", "idle", True)


def test_the_rate_limiter_forgets_idle_clients_and_tracks_at_most_max_clients(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    now = [0.0]
    limiter = RateLimiter(100, lambda: now[0])
    for n in range(50):
        limiter.hit(f"token-{n}")
    assert len(limiter) == 50
    now[0] = 61.0
    limiter.hit("late")  # a new client after a whole window: the idle ones go
    assert len(limiter) == 1

    monkeypatch.setattr(ratelimit, "MAX_CLIENTS", 3)
    for n in range(5):
        limiter.hit(f"burst-{n}")
    assert len(limiter) == 3
    assert limiter.hit("burst-4") is None  # the newest is still tracked: its window goes on


def _telemetry(n: int) -> Event:
    return Event(EventKind.DEVICE_TELEMETRY, float(n), "s1", {"device_type": "env", "metrics": {"t": n}})


def test_the_encoder_cache_is_bounded_by_count_and_by_age() -> None:
    now = [0.0]
    encoder = EventEncoder(lambda: 0.0, cache=4, max_age=30.0, now=lambda: now[0])
    for seq in range(10):
        encoder.envelopes(seq, _telemetry(seq))
    assert len(encoder) == 4 and encoder.encoded == 10
    first = encoder.envelopes(9, _telemetry(9))
    assert encoder.encoded == 10  # a cached event is not encoded again
    now[0] = 31.0
    encoder.envelopes(10, _telemetry(10))
    assert len(encoder) == 1  # the others are older than max_age
    assert encoder.envelopes(9, _telemetry(9)) == first  # encoded again: the same envelope and id
    assert encoder.encoded == 12


def test_a_camera_keeps_at_most_max_sessions(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(camera_mod, "MAX_SESSIONS", 2)
    camera = cameras_of(world)["cam-01"]
    tokens = [camera.login("admin", "password", 0) for _ in range(3)]
    with pytest.raises(Unauthenticated):
        camera.check_token(tokens[0])  # the oldest login went
    assert [camera.check_token(t) for t in tokens[1:]] == ["admin", "admin"]


def test_a_server_keeps_at_most_max_faults_of_each_kind() -> None:
    faults = FaultSet()
    for n in range(MAX_FAULTS + 5):
        faults.add_latency(float(n), f"/p{n}")
        faults.add_errors(503, f"/p{n}")
    assert len(faults.latency) == MAX_FAULTS and len(faults.errors) == MAX_FAULTS
    assert faults.latency[0].path_prefix == "/p5" and faults.delay_for("/p4") == 0.0


def test_the_broker_log_keeps_at_most_max_outages() -> None:
    log = SessionLog(lambda: 1.0)
    for _ in range(MAX_OUTAGES + 3):
        log.broker_down()
        log.broker_up()
    assert len(log.outages) == MAX_OUTAGES and log.outages[-1] == (1.0, 1.0)


def test_expired_automation_sessions_are_deleted_at_a_later_login(
    world: World, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(users_mod, "SESSION_LIFETIME_S", 10)
    users = automation_of(world).users
    users.create("ann", "secret123", "admin")
    first = users.login("ann", "secret123").token
    second = users.login("ann", "secret123").token  # within the hour: no sweep yet
    assert len(users.sessions) == 2
    world.env.run(until=world.env.now + users_mod.SESSION_SWEEP_S + 1)
    third = users.login("ann", "secret123").token
    assert len(users.sessions) == 1
    for token in (first, second):
        with pytest.raises(Unauthenticated):
            users.authenticate(token)
    assert users.authenticate(third).username == "ann"


def test_the_store_keeps_at_most_max_remembered_document_texts(monkeypatch: pytest.MonkeyPatch) -> None:
    from twin import store as store_mod

    monkeypatch.setattr(store_mod, "_MAX_REMEMBERED", 10)
    store = store_mod.Store()
    for i in range(25):
        store._put("thing", f"t{i}", {"n": i})
        store._delete("thing", f"gone{i}")
        assert len(store._docs) <= 10
    assert store._get("thing", "t3") == {"n": 3} and store._get("thing", "gone3") is None
