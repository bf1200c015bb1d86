"""The delivery outbox on the world clock: a circuit per owner (opens after consecutive failures, due
jobs wait unattempted, a half-open probe after a cool-down of world time, a success releases them),
the bound on waiting jobs (given up and counted), seeded jitter; and the links: one pooled HTTP
client per owner, reused across attempts and closed when the owner goes or the worker stops."""

from __future__ import annotations

import asyncio
import contextlib

import httpx
import pytest

from hardware.ports.rules import DeliveryResult
from tests.receivers import HttpReceiver, closed_port
from tests.sockets import until
from twin.automation import delivery, transports
from twin.automation.circuit import COOL_DOWN_S, FAILURES_TO_OPEN, JITTER, Circuit
from twin.automation.delivery import Outbox, RetryPolicy, run_worker
from twin.automation.server import automation_of
from twin.automation.transports import Link
from twin.serve import Twin

FAIL = DeliveryResult(False, "ConnectError: refused", 1)
OK = DeliveryResult(True, "ok", 1, status_code=200)
PATIENT = RetryPolicy(max_retries=50, backoff_secs=5, max_backoff_secs=5)


def enqueue(
    outbox: Outbox, n: int, owner: str = "p1", url: str = "http://127.0.0.1:9/", first: int = 0
) -> list[str]:
    cfg = {"url": url}
    return [outbox.enqueue("probe", owner, "http", cfg, {"n": i}, PATIENT) for i in range(first, first + n)]


def stats(outbox: Outbox, owner: str = "p1"):
    (one,) = outbox.stats("probe", [owner])
    return one


def open_circuit(twin: Twin, seen: list | None = None) -> Outbox:
    """Owner p1 with FAILURES_TO_OPEN jobs that each failed once: its circuit is open."""
    outbox = automation_of(twin.world).outbox
    if seen is not None:
        outbox.register("probe", lambda job, result, final: seen.append((job["id"], result, final)))
    enqueue(outbox, FAILURES_TO_OPEN)
    for job in outbox.take():
        outbox.report(job, FAIL)
    return outbox


def test_the_circuit_opens_after_consecutive_failures_and_due_jobs_wait(twin: Twin) -> None:
    outbox = automation_of(twin.world).outbox
    enqueue(outbox, FAILURES_TO_OPEN - 1)
    for job in outbox.take():
        outbox.report(job, FAIL)
    assert stats(outbox).circuit == "closed" and stats(outbox).consecutive_failures == FAILURES_TO_OPEN - 1
    enqueue(outbox, 1)
    (job,) = outbox.take()
    outbox.report(job, FAIL)
    assert stats(outbox).circuit == "open"
    twin.clock.advance(5)  # every retry is due: none is attempted
    enqueue(outbox, 2)  # nor is anything new
    assert outbox.take() == []
    s = stats(outbox)
    assert (s.attempts, s.pending, s.waiting, s.failed, s.dropped) == (FAILURES_TO_OPEN, 7, 7, 0, 0)
    assert stats(outbox, "other").circuit == "closed"  # circuits are per owner


def test_a_success_resets_the_count(twin: Twin) -> None:
    outbox = automation_of(twin.world).outbox
    enqueue(outbox, FAILURES_TO_OPEN)
    jobs = outbox.take()
    for job in jobs[:-1]:
        outbox.report(job, FAIL)
    outbox.report(jobs[-1], OK)
    assert stats(outbox).circuit == "closed" and stats(outbox).consecutive_failures == 0


def test_half_open_probe_after_a_cool_down_in_world_time(twin: Twin) -> None:
    outbox = open_circuit(twin)
    twin.clock.advance(COOL_DOWN_S * (1 - JITTER) - 0.01)
    assert outbox.take() == [] and stats(outbox).circuit == "open"
    twin.clock.advance(COOL_DOWN_S * 2 * JITTER + 0.02)
    (probe,) = outbox.take()  # one job, the oldest waiting
    assert probe["payload"] == {"n": 0} and stats(outbox).circuit == "half_open"
    enqueue(outbox, 1, first=5)
    assert outbox.take() == []  # only the probe goes out while half-open
    outbox.report(probe, FAIL)
    assert stats(outbox).circuit == "open"
    twin.clock.advance(2 * COOL_DOWN_S * (1 - JITTER) - 0.01)  # the cool-down doubled
    assert outbox.take() == []
    twin.clock.advance(2 * COOL_DOWN_S * 2 * JITTER + 0.02)
    (probe,) = outbox.take()
    assert probe["payload"] == {"n": 1}
    outbox.report(probe, OK)
    released = outbox.take()  # the success releases every waiting job at once
    assert stats(outbox).circuit == "closed" and stats(outbox).waiting == 0
    assert sorted(j["payload"]["n"] for j in released) == [0, 2, 3, 4, 5]  # n=0: the first probe's retry
    assert stats(outbox).delivered == 1 and stats(outbox).attempts == FAILURES_TO_OPEN + 2


def test_cool_downs_are_seeded_and_spread_per_owner(twin: Twin) -> None:
    keys = [twin.world.streams.key(f"automation.delivery/push/{i}") for i in range(20)]
    downs = [Circuit(k, opened=1).cool_down() for k in keys]
    assert downs == [Circuit(k, opened=1).cool_down() for k in keys]  # the same seed, the same numbers
    assert len(set(downs)) == 20
    assert all(COOL_DOWN_S * (1 - JITTER) <= d < COOL_DOWN_S * (1 + JITTER) for d in downs)


def test_retry_jitter_is_seeded_and_bounded() -> None:
    policy = RetryPolicy(max_retries=3, backoff_secs=10, max_backoff_secs=300, jitter=0.1)
    waits = [policy.delay(2, key) for key in range(50)]
    assert waits == [policy.delay(2, key) for key in range(50)]
    assert len(set(waits)) == 50 and all(18 <= w < 22 for w in waits)
    assert RetryPolicy(3, 10, 300).delay(2, 7) == 20  # no jitter: exactly the configured backoff


def test_waiting_jobs_past_the_bound_are_given_up_and_counted(
    twin: Twin, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(delivery, "MAX_WAITING", 3)
    seen: list = []
    outbox = open_circuit(twin, seen)
    twin.clock.advance(5)  # the 5 failed jobs are due again: 3 wait, the 2 oldest are given up
    dropped = [(r.message, r.attempts, final) for _, r, final in seen if r.message.startswith("Dropped")]
    assert dropped == [("Dropped: 3 deliveries were already waiting for an unreachable target", 1, True)] * 2
    s = stats(outbox)
    assert (s.waiting, s.pending, s.failed, s.dropped) == (3, 3, 2, 2)
    assert len(twin.world.store.collection("outbox")) == 3


async def test_a_test_send_that_gets_through_closes_the_circuit(twin: Twin) -> None:
    outbox = open_circuit(twin)
    async with HttpReceiver() as hook:
        result = await outbox.send_now("probe", "p1", "http", {"url": hook.url}, {"test": True})
    assert result.success and stats(outbox).circuit == "closed"
    assert outbox.take() == []  # the failed jobs' retries are not due yet...
    twin.clock.advance(5)
    assert len(outbox.take()) == FAILURES_TO_OPEN  # ...and then all go out
    await outbox.aclose()


class CountingClient(httpx.AsyncClient):
    made: list[CountingClient] = []

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        CountingClient.made.append(self)


@pytest.fixture
def clients(monkeypatch: pytest.MonkeyPatch) -> list[CountingClient]:
    CountingClient.made = []
    monkeypatch.setattr(transports.httpx, "AsyncClient", CountingClient)
    return CountingClient.made


async def test_one_pooled_client_per_owner_across_attempts(twin: Twin, clients: list) -> None:
    outbox = automation_of(twin.world).outbox
    dead = f"http://127.0.0.1:{closed_port()}/x"
    async with HttpReceiver() as hook:
        for _ in range(3):
            enqueue(outbox, 2, "live", hook.url)
            enqueue(outbox, 1, "dead", dead)
            assert await outbox.flush() == 3
        assert len(hook.requests) == 6
    assert len(clients) == 2  # one for each owner, reused by all nine attempts
    assert stats(outbox, "dead").attempts == 3 and stats(outbox, "dead").consecutive_failures == 3
    dead_client = outbox.links[("probe", "dead")].transports["http"].client
    outbox.cancel_owner("probe", "dead")  # the owner goes: its client is closed, its figures too
    await outbox.close_retired()
    assert dead_client.is_closed and ("probe", "dead") not in outbox.links
    assert stats(outbox, "dead").attempts == 0 and outbox.pending() == 0
    await outbox.aclose()  # the world stops: every client is closed
    assert all(c.is_closed for c in clients)


async def test_the_worker_closes_every_link_when_it_stops(twin: Twin, clients: list) -> None:
    outbox = automation_of(twin.world).outbox
    worker = asyncio.create_task(run_worker(lambda: automation_of(twin.world)))
    enqueue(outbox, 1, url=f"http://127.0.0.1:{closed_port()}/x")
    await until(lambda: stats(outbox).attempts == 1)
    assert len(clients) == 1 and not clients[0].is_closed
    worker.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await worker
    assert clients[0].is_closed and outbox.links == {}


async def test_the_worker_leaves_a_rebuilt_world_alone(twin: Twin, clients: list) -> None:
    old = automation_of(twin.world).outbox
    worker = asyncio.create_task(run_worker(lambda: automation_of(twin.world)))
    try:
        enqueue(old, 1, url=f"http://127.0.0.1:{closed_port()}/x")
        await until(lambda: stats(old).attempts == 1)
        (job,) = twin.world.store.collection("outbox").values()
        twin.world.reset()
        old.report({**job, "attempts": 1}, FAIL)  # an outcome arriving after the reset: not written
        assert len(twin.world.store.collection("outbox")) == 0
        await until(lambda: clients[0].is_closed)  # the worker closed the old world's links
        assert automation_of(twin.world).outbox is not old and automation_of(twin.world).outbox.pending() == 0
    finally:
        worker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await worker


async def test_a_dead_broker_or_an_unknown_transport_is_a_failed_attempt() -> None:
    link = Link("push/t1")
    dead = {"broker_url": f"mqtt://127.0.0.1:{closed_port()}", "topic": "lake"}
    result = await link.send("mqtt", dead, {"a": 1})
    assert not result.success and result.message and result.attempts == 1
    assert link.transports["mqtt"].client is None  # no half-open session is kept for the next attempt
    unknown = await link.send("pigeon", {}, {"a": 1})
    assert not unknown.success and unknown.message == "ValueError: unknown transport pigeon"
    await link.aclose()
