"""The sensor-outage library file with the careful client: it pages across an offline device, a gap
and a spike without missing or repeating a point, and the server tells offline and online apart."""

from __future__ import annotations

import asyncio

import pytest

from hardware.ports.events import EventKind
from tests.conftest import SCENARIOS
from tests.twin.scenario.test_runner import client
from twin.scenario import report
from twin.scenario.runner import RunOptions, run


def test_careful_client_pages_across_the_outages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TWIN_CLIENT_ROUNDS", "55")  # polls until t=550: past the link coming back
    result = asyncio.run(
        run(SCENARIOS / "sensor_outage.yaml", RunOptions(step=True, client=client("careful")))
    )
    assert result.passed, report.summary(result)
    assert all("not exercised" not in v.message for v in result.verdicts), report.summary(result)
    changes = [
        (e.kind, e.source, round(e.at)) for e in result.record.events if e.kind.value.startswith("device.o")
    ]
    assert changes == [
        (EventKind.DEVICE_OFFLINE, "env_sensor-0001", 390),
        (EventKind.DEVICE_ONLINE, "env_sensor-0001", 500),
    ]
