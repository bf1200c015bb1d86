"""What went wrong with a run itself rather than with the client's behaviour, each said in one
sentence that names the remedy: a world clock that could not move while timeline steps were due
(step mode with a client that does not pace itself), and a client that sent nothing to this run's
servers (it talks to some other address). Each notice keeps a run from passing; the console, the
JUnit XML and the HTML report all show it."""

from __future__ import annotations

from twin.scenario.expect_base import RunRecord
from twin.scenario.model import Scenario
from twin.settings import AUTOMATION

CLIENT_VARIABLES = {
    "TWIN_AUTOMATION_URL": "the automation API, e.g. http://127.0.0.1:41234 (its routes are under /api)",
    "TWIN_GATEWAY_URL": "the first camera's edge gateway over HTTP (absent when the fleet has no camera)",
    "TWIN_GATEWAY_URLS": "every camera's gateway, space-separated CAMERA=URL pairs",
    "TWIN_CONTROL_URL": "the control plane (clock, journal, actions; POST /clock/sleep paces a client)",
    "TWIN_MQTT_URL": "the embedded MQTT broker, mqtt://HOST:PORT (absent when servers.mqtt is false)",
    "TWIN_SEED": "the world's seed",
    "TWIN_CLOCK_MODE": "realtime or step",
    "TWIN_SCENARIO": "the scenario file's path",
}
"""The environment a client under test gets from ``twin scenario run``, for its help and the README."""


def stalled(scenario: Scenario, end: float, stop_at: float, step_flag: bool) -> str | None:
    """In step mode with a client: the sentence saying the world stood still while timeline steps
    were due (``None`` if every step up to the stop time fired or the run reached its stop)."""
    if end >= stop_at:
        return None
    due = sorted((s for s in scenario.timeline if s.at is not None and end < s.at <= stop_at), key=_at)
    if not due:
        return None
    first = due[0]
    steps = f"{len(due)} timeline steps were" if len(due) != 1 else "1 timeline step was"
    remedy = (
        "drop --step (or run with --speed N)"
        if step_flag
        else f"run with --speed {scenario.clock.speed:g} or set clock: {{mode: realtime}} in the file"
    )
    return (
        f"the world clock stood still at t={end:g} s in step mode while {steps} due (first: "
        f"{first.do} at t={_at(first):g} s), because in step mode time moves only when the client "
        f"calls POST /clock/sleep: for a client that sleeps on its own clock, {remedy}"
    )


def _at(step) -> float:
    return float(step.at)


def unreached(scenario: Scenario, record: RunRecord, client_ok: bool | None) -> str | None:
    """The sentence for a client that ran and ended as expected (``client_ok``; ``None``: no client
    ran) but sent nothing to this run's servers. A scenario whose point is the client's exit status
    (``client.expect_exit`` other than 0) is left alone."""
    if not client_ok or record.journal or record.mqtt or scenario.client.expect_exit != 0:
        return None
    servers = [e.server for e in scenario.expectations if e.server is not None]
    cameras = [s for s in servers if s != AUTOMATION]
    if cameras and AUTOMATION not in servers:
        return (
            f"the client made no request to this run's gateway {cameras[0]}: does it read "
            "TWIN_GATEWAY_URL or TWIN_GATEWAY_URLS?"
        )
    return "the client made no request to this run's automation server: does it read TWIN_AUTOMATION_URL?"
