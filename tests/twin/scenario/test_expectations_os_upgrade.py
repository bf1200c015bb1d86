"""polls_os_upgrade_to_terminal: the client follows an A/B OS upgrade through its reboot to a
terminal state, and comes back once the camera is up again. Judged from journal entries and world
events; the journal's ``state`` of a real status poll is checked against the gateway app."""

from __future__ import annotations

import itertools

import httpx
import pytest

from hardware.ports.events import Event, EventKind
from tests.clients.common import os_package
from tests.conftest import gateway_token
from twin.journal import JournalEntry
from twin.scenario import ScenarioError
from twin.scenario.expectations import PollsOsUpgradeToTerminal, RunRecord
from twin.scenario.model import parse_scenario
from twin.serve import Twin

BASE = "/api/v1/system/os-upgrade"
_seq = itertools.count(1)


def req(at: float, method: str, action: str, status: int = 200, state: str | None = None) -> JournalEntry:
    route = f"{BASE}/{action}"
    return JournalEntry(
        next(_seq), at, at, "cam-01", method, route, route, "", status, "127.0.0.1", state=state
    )


def poll(at: float, state: str) -> JournalEntry:
    return req(at, "GET", "status", state=state)


def up(at: float, camera: str = "cam-01") -> Event:
    return Event(EventKind.CAMERA_POWER_UP, at, camera, {"boot": 1})


Judged = tuple[bool | None, str]


def judge(journal: list[JournalEntry], events: list[Event] = (), end: float = 600, **kw) -> Judged:
    """(passed, message); passed is None when nothing exercised the expectation."""
    exp = PollsOsUpgradeToTerminal(expect="polls_os_upgrade_to_terminal", **kw)
    verdict = exp.judge(RunRecord(journal=journal, events=list(events), end=end))
    assert verdict.name == kw.get("name", "polls_os_upgrade_to_terminal")
    return (None if verdict.inconclusive else verdict.passed), verdict.message


INSTALLED = [req(1, "POST", "upload"), req(2, "POST", "validate"), req(3, "POST", "install")]


def test_followed_through_the_reboot_to_rollback_passes() -> None:
    journal = [
        *INSTALLED,
        poll(10, "installing"),
        poll(130, "awaiting_reboot"),
        req(131, "POST", "reboot"),
        poll(175, "verifying"),
        poll(195, "rollback"),
    ]
    ok, message = judge(journal, [up(172)], reconnect_within=30)
    assert ok and message == "polled to 'rollback' in 4 polls, back after 1 reboot"


def test_each_terminal_state_ends_the_job() -> None:
    for state in ("success", "rollback", "failed", "cancelled"):
        assert judge([*INSTALLED, poll(20, state)])[0]


def test_stopping_while_the_job_still_moves_fails() -> None:
    ok, message = judge([*INSTALLED, poll(5, "installing"), poll(10, "installing")])
    assert not ok
    assert message.startswith("stopped polling while the upgrade was 'installing' (t=10 GET ")
    assert "terminal: success, rollback, failed, cancelled" in message


def test_a_job_left_waiting_for_its_reboot_is_not_finished() -> None:
    ok, message = judge([*INSTALLED, poll(130, "awaiting_reboot")])
    assert not ok and "'awaiting_reboot'" in message


def test_never_polling_after_the_install_fails() -> None:
    journal = [poll(0, "idle"), *INSTALLED]
    assert judge(journal) == (False, "never polled os-upgrade/status after starting the install")


def test_the_last_install_is_the_one_judged() -> None:
    journal = [*INSTALLED, poll(10, "failed"), req(20, "POST", "install"), poll(25, "installing")]
    assert not judge(journal)[0]
    journal.append(poll(200, "success"))
    assert judge(journal)[0]


def test_a_refused_install_starts_nothing() -> None:
    journal = [req(1, "POST", "install", status=409), poll(2, "ready")]
    assert judge(journal) == (None, "not exercised: no OS-upgrade install was started")


def test_not_coming_back_after_the_reboot_fails() -> None:
    journal = [*INSTALLED, poll(130, "awaiting_reboot"), req(131, "POST", "reboot"), poll(132, "rebooting")]
    ok, message = judge(journal, [up(172)])
    assert not ok and message == "no successful request after the camera came back at t=172"


def test_coming_back_too_late_fails_when_a_bound_is_set() -> None:
    journal = [*INSTALLED, req(131, "POST", "reboot"), poll(250, "rollback")]
    assert judge(journal, [up(172)])[0]
    ok, message = judge(journal, [up(172)], reconnect_within=30)
    assert not ok
    assert message.startswith(
        "first successful request 78 s after the camera came back at t=172 (allowed 30)"
    )


def test_failed_requests_after_the_boot_do_not_count_as_back() -> None:
    journal = [*INSTALLED, req(131, "POST", "reboot"), req(175, "POST", "reboot", status=401)]
    journal.append(poll(240, "rollback"))
    ok, message = judge(journal, [up(172)], reconnect_within=30)
    assert not ok and "68 s after" in message


def test_a_boot_too_close_to_the_end_is_not_judged_for_the_bound() -> None:
    journal = [*INSTALLED, poll(2, "installing"), poll(130, "awaiting_reboot")]
    ok, message = judge(journal, [up(590)], end=600, reconnect_within=30)
    assert not ok and "'awaiting_reboot'" in message  # judged on its polls alone


def test_other_cameras_and_earlier_boots_are_not_this_job() -> None:
    journal = [*INSTALLED, poll(20, "success")]
    assert judge(journal, [up(0), up(15, "cam-02")]) == (True, "polled to 'success' in 1 polls")


def test_the_kind_validates_and_refuses_bad_fields() -> None:
    text = "name: x\nexpectations:\n  - expect: polls_os_upgrade_to_terminal\n    reconnect_within: {}\n"
    scenario = parse_scenario(text.format(30), "s.yaml")
    assert isinstance(scenario.expectations[0], PollsOsUpgradeToTerminal)
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text.format(0), "s.yaml")
    assert "s.yaml:4: expectations.0.reconnect_within" in str(err.value)
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text.format(30) + "    colour: red\n", "s.yaml")
    assert "s.yaml:5: expectations.0.colour" in str(err.value)


async def test_os_upgrade_status_polls_carry_the_job_state(twin: Twin, gateway: httpx.AsyncClient) -> None:
    auth = {"Authorization": await gateway_token(gateway)}
    assert (await gateway.get(f"{BASE}/status")).status_code == 200
    files = {"package": ("os.swu", os_package(), "application/octet-stream")}
    job = (await gateway.post(f"{BASE}/upload", files=files, headers=auth)).json()["data"]
    assert (await gateway.get(f"{BASE}/status")).status_code == 200
    await gateway.post(f"{BASE}/validate", json={"job_id": job["job_id"]}, headers=auth)
    assert (
        await gateway.post(f"{BASE}/install", json={"job_id": job["job_id"]}, headers=auth)
    ).status_code == 200
    assert (await gateway.get(f"{BASE}/status")).status_code == 200
    polls = [e for e in twin.journal.entries if e.route.endswith("/os-upgrade/status")]
    assert [e.state for e in polls] == ["idle", "validating", "installing"]
    ok, message = judge(twin.journal.entries, end=twin.world.env.now)
    assert not ok and "'installing'" in message
