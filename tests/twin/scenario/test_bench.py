"""The scenario-run bench: a short slice of the 1 000-sensor day, its numbers and verdict."""

from __future__ import annotations

from bench import scenario_run


def test_a_slice_of_the_fleet_day_reports_events_and_a_projection() -> None:
    r = scenario_run.run(hours=36 / 3600, rules=3)
    assert r["sensors"] == 1000 and r["rules"] == 3
    assert r["events"] >= 36 * 1000  # a sample per sensor per second, plus what the rules emit
    assert r["events_per_s"] > 0 and r["projected_24h_wall_s"] == r["wall_s"] * 24 / r["sim_hours"]
    assert r["verdict"] in ("PASS", "MISS")
