"""``python -m bench.shards``: its options, the sweep's bookkeeping, the medians, the sizing and the
report, on made-up runs (no shard is started here: the bench itself is run by ``make bench``)."""

from __future__ import annotations

import json
import math

import pytest

from bench import shards, sizing
from twin.clock import Anchor


def test_quick_and_full_sizes_and_an_option_over_them() -> None:
    full = shards.parse_args([])
    assert full.runs == 3 and full.barrier_shards == [2, 4, 8] and full.fleet_sensors == 100_000
    assert full.idle_cameras == 200 and full.idle_shards == 4 and full.fleet_seconds == 60
    assert full.parts == list(shards.PARTS) and not full.pin
    quick = shards.parse_args(["--quick", "--runs", "2", "--parts", "fleet, barrier"])
    assert quick.runs == 2 and quick.barrier_shards == [2, 4] and quick.fleet_sensors < 100_000
    assert quick.parts == ["barrier", "fleet"]  # in the order a full run takes them
    assert shards.parse_args(["--publish-speeds", "1,2.5"]).publish_speeds == [1.0, 2.5]


@pytest.mark.parametrize(
    "argv",
    [
        ["--parts", "nope"],
        ["--parts", ","],
        ["--runs", "0"],
        ["--barrier-shards", "2,x"],
        ["--barrier-shards", "0"],
        ["--publish-speeds", "-1"],
        ["--seconds", "0"],
        ["--warmup", "-1"],
        ["--fleet-seconds", "0"],
        ["--idle-cameras", "4", "--idle-shards", "4"],
        ["--max-cameras", "1"],
        ["--fleet-sensors", "0"],
    ],
)
def test_bad_options_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        shards.parse_args(argv)
    assert exited.value.code == 2
    assert "error:" in capsys.readouterr().err


def test_the_part_is_listed_in_python_m_bench() -> None:
    import bench.__main__ as bench_main

    part = bench_main.BY_NAME["shards"]
    assert part.module == "shards"
    args = bench_main.parse_args(["--json", "out/b.json"])
    assert part.argv(args, "shards") == ["--json", "out/b.shards.json"]


def test_viewers_are_added_one_camera_at_a_time_in_turn_over_the_shards() -> None:
    order = shards._interleave([["c1", "c2", "c3"], ["c4", "c5"]])
    assert order == [["c1"], ["c4"], ["c2"], ["c5"], ["c3"]]
    assert shards._interleave([]) == []


def test_a_frame_s_age_is_read_on_the_shared_anchor_across_the_pts_wrap() -> None:
    window = shards.Window(anchor=Anchor(sim_at=100_000.0, wall_at=1000.0, speed=1.0, paused=False))
    frame_t = 100_000.0 - 0.040  # rendered 40 ms of sim time before the anchor's instant
    pts = round(frame_t * 1e9) // 11111 & 0xFFFFFFFF  # the device's PTS, wrapped (sim time > 47 721 s)
    assert window.late_ms(pts, arrived=1000.0) == pytest.approx(40.0, abs=0.05)
    assert window.late_ms(pts, arrived=1000.010) == pytest.approx(50.0, abs=0.05)


def _step(k: int, kept: bool, cores: float = 0.2) -> dict:
    return {
        "cameras": k, "min_fps": 25.0 if kept else 20.0, "mean_fps": 25.0, "late_p50_ms": 10.0,
        "sustained": kept, "shard_cores": {"shard-0": cores * k}, "bench_cores": 0.01,
        "rss_mb": {"shard-0": 200.0 + 50 * k}, "rss_before_mb": {"shard-0": 200.0},
    }  # fmt: skip


def _camera_run(one: int, two: int) -> dict:
    sweep = {
        str(n): {
            "sustained": count,
            "capped": False,
            "steps": [_step(k, True) for k in range(1, count + 1)] + [_step(count + 1, False)],
        }
        for n, count in ((1, one), (2, two))
    }
    return {"fleet": 12, "pinned": False, **sweep, "ratio": two / one}


def test_a_sweep_sustains_up_to_the_first_step_that_does_not_keep_up() -> None:
    steps = [_step(1, True), _step(2, True), _step(3, False), _step(4, True)]
    assert shards.sustained(steps) == 2
    assert shards.sustained([_step(1, False)]) == 0


def _publish_run(one: float, two: float) -> dict:
    def at(rate: float, n: int) -> dict:
        return {
            "offered_per_s": rate, "received_per_s": rate, "broker_cores": 0.2,
            "shard_cores": {f"shard-{k}": 0.1 for k in range(n)},
        }  # fmt: skip

    return {
        "sensors": 10_000,
        "pinned": False,
        "1": {"capacity_per_s": one, "at": at(one, 1), "steps": [at(one, 1)], "capped": False},
        "2": {"capacity_per_s": two, "at": at(two, 2), "steps": [at(two, 2)], "capped": True},
        "ratio": two / one,
    }


def _fleet_run(delivered: float) -> dict:
    return {
        "shards": 4, "sensors": 100_000, "seconds": 60.0, "ready_s": 20.0, "produced_per_s": 10_000.0,
        "received_per_s": 10_000.0, "delivered": delivered, "drained": True,
        "totals": {"produced": 700_000}, "shard_cores": {f"shard-{k}": 0.1 for k in range(4)},
        "rss_mb": {f"shard-{k}": 250.0 for k in range(4)}, "broker_rss_mb": 50.0, "broker_cores": 0.2,
    }  # fmt: skip


def _idle_run(per_camera: float) -> dict:
    rss = {f"shard-{k}": 200.0 for k in range(4)}
    return {
        "shards": 4, "cameras": 200, "per_camera_mb": per_camera, "ready_s": 30.0, "shard_base_mb": 200.0,
        "base": {"ready_s": 10.0, "rss_mb": rss}, "full": {"ready_s": 30.0, "rss_mb": rss},
    }  # fmt: skip


def test_medians_of_the_runs_and_the_ratio_within_each_run() -> None:
    cams = sizing.summary("cameras", [_camera_run(4, 6), _camera_run(3, 6), _camera_run(4, 8)])
    assert cams["sustained_1"] == 4 and cams["sustained_2"] == 6
    assert cams["ratio"] == pytest.approx(2.0)  # ratios 1.5, 2.0, 2.0: the median of ratios, not 6 / 4
    assert cams["core_per_camera"] == pytest.approx(0.2) and cams["stream_mb_per_camera"] == pytest.approx(50)
    pub = sizing.summary("publish", [_publish_run(20_000, 30_000), _publish_run(10_000, 40_000)])
    assert pub["capacity_1"] == 15_000 and pub["ratio"] == pytest.approx((1.5 + 4.0) / 2)
    assert pub["capped_2"] and not pub["capped_1"]
    fleet = sizing.summary("fleet", [_fleet_run(1.0), _fleet_run(0.998), _fleet_run(0.9995)])
    assert fleet["delivered"] == 0.9995 and fleet["delivered_min"] == 0.998
    assert fleet["rss_total_mb"] == 1000 and fleet["shard_cores_total"] == pytest.approx(0.4)
    barrier = sizing.summary(
        "barrier", [{"4": {"median_ms": m, "p90_ms": 9.0, "ready_s": 5.0}} for m in (3, 9, 5)]
    )
    assert barrier["by_shards"]["4"]["median_ms"] == 5
    assert sizing.summary("idle", []) == {"runs": [], "failed": True}


def test_the_sizing_follows_from_the_per_unit_costs() -> None:
    results = {
        "fleet": sizing.summary("fleet", [_fleet_run(1.0)]),
        "cameras": sizing.summary("cameras", [_camera_run(4, 8)]),
        "idle": sizing.summary("idle", [_idle_run(0.5)]),
    }
    sensors, cams = sizing.sizing(results)
    # 10 000 msg/s at (0.4 core of shards + 0.2 of broker) per 10 000 msg/s
    assert sensors["cores"] == pytest.approx(0.6) and sensors["memory_gb"] == pytest.approx(1050 / 1024)
    # 0.2 core per camera: 200 cores, a shard per core (200 of 200 MB), and 0.5 + 50 MB per camera
    assert cams["cores"] == pytest.approx(200) and cams["shards"] == 200
    assert cams["memory_gb"] == pytest.approx((200 * 200 + 1000 * 50.5) / 1024)
    assert sizing.sizing({"fleet": {"runs": [], "failed": True}}) == []


def test_the_report_gives_each_target_its_verdict_and_the_json_has_no_nan() -> None:
    results = {
        "machine": sizing.machine() | {"load_after": 1.0, "ray_init_s": 5.0, "wall_s": 100.0},
        "options": {"runs": 1, "barrier_rounds": 200},
        "barrier": sizing.summary("barrier", [{"4": {"median_ms": 5.0, "p90_ms": 9.0, "ready_s": 5.0}}]),
        "idle": sizing.summary("idle", [_idle_run(0.5)]),
        "cameras": sizing.summary("cameras", [_camera_run(4, 6)]),
        "publish": sizing.summary("publish", [_publish_run(20_000, 36_000)]),
        "fleet": sizing.summary("fleet", [_fleet_run(0.998)]),
    }
    results["sizing"] = sizing.sizing(results)
    text = sizing.report(results)
    assert "4 shards: median 5.00 ms" in text and "target ≤ 15 ms: PASS" in text
    assert "ratio 2/1 (median of the runs' ratios): 1.50, target ≥ 1.7: MISS" in text  # cameras
    assert "ratio 2/1 (median of the runs' ratios): 1.80, target ≥ 1.7: PASS" in text  # publish
    assert "target ≥ 0.999: MISS" in text and "| 1,000 cameras" in text
    data = json.loads(json.dumps(sizing.jsonable(results | {"x": math.nan}), allow_nan=False))
    assert data["x"] is None
    assert "failed" in sizing.report(results | {"fleet": {"runs": [], "failed": True}})
