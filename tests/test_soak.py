"""The soak's verdict: which errors an injected fault explains, and when the run fails."""

from __future__ import annotations

import argparse

from bench.soak import Rss, report
from bench.soak_load import FAULTS, GRACE_S, Fault, Tally, Window


def _fault(name: str) -> Fault:
    return next(f for f in FAULTS if f.name.startswith(name))


def test_a_counted_fault_explains_at_most_what_it_injects_on_its_own_server() -> None:
    burst = _fault("503 burst")
    tally = Tally(windows=[Window(burst, 0.0, 55.0, 2)])
    for _ in range(3):
        tally.error("gateway", "503", "GET /api/v1/system/info", sent=1.0)
    tally.error("automation", "503", "GET /api/devices", sent=1.0)  # not the burst's server
    assert sum(tally.expected.values()) == 2
    assert tally.unexpected == {"gateway 503": 1, "automation 503": 1}


def test_a_lasting_fault_explains_its_kinds_until_its_end_and_grace() -> None:
    storm = _fault("rate-limit storm")
    tally = Tally(windows=[Window(storm, 0.0, 20.0, None)])
    tally.error("automation", "429", "GET /api/rules", sent=20.0 + GRACE_S - 0.1)
    tally.error("automation", "429", "GET /api/rules", sent=20.0 + GRACE_S + 0.1)
    tally.error("automation", "500", "GET /api/rules", sent=5.0)
    assert tally.expected == {"automation 429 (rate-limit storm 120/min)": 1}
    assert tally.unexpected == {"automation 429": 1, "automation 500": 1}
    assert len(tally.samples) == 2


def _args() -> argparse.Namespace:
    return argparse.Namespace(minutes=30.0, rate=40.0, fault_every=60.0, baseline_minutes=5.0, json=None)


def test_the_run_fails_on_growth_past_ten_percent_or_any_unexpected_error() -> None:
    tally = Tally(requests=10, latencies=[0.01] * 10)
    text, ok = report(tally, Rss(start=150.0, baseline=200.0, end=219.0), _args())
    assert ok and "+9.5% since 5 min" in text and text.endswith("soak: PASS")
    _, ok = report(tally, Rss(start=150.0, baseline=200.0, end=221.0), _args())
    assert not ok
    tally.error("automation", "timeout", "GET /api/devices", sent=1.0)
    text, ok = report(tally, Rss(start=150.0, baseline=200.0, end=200.0), _args())
    assert not ok and "UNEXPECTED      1  automation timeout" in text
