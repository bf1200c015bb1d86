"""The figures of ``python -m bench.shards``: each part's runs summed up as medians, its targets, the
sizing for 100 000 sensors and 1 000 streaming cameras drawn from the per-unit costs, and the
plain-text report."""

from __future__ import annotations

import math
import os
import platform
import statistics
from typing import Any

SCALE_TARGET = 1.7
BARRIER_TARGET_MS = 15.0
BARRIER_TARGET_SHARDS = 4
DELIVERY_TARGET = 0.999
GOAL_SENSORS = 100_000
GOAL_SENSOR_PERIOD_S = 10.0
GOAL_CAMERAS = 1000


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_before": os.getloadavg()[0],
    }


def jsonable(value: Any) -> Any:
    """``value`` with NaN as None and paths as text (JSON has neither)."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, int | str | bool) or value is None:
        return value
    return str(value)


def median(values: list[float]) -> float:
    values = [v for v in values if v is not None and not math.isnan(v)]
    return statistics.median(values) if values else math.nan


def _middle(runs: list[dict[str, Any]], key: Any) -> dict[str, Any]:
    """The run with the median ``key`` (the lower of the middle two)."""
    ranked = sorted(runs, key=key)
    return ranked[(len(ranked) - 1) // 2]


def _last_sustained(sweep: dict[str, Any]) -> dict[str, Any] | None:
    kept = None
    for step in sweep["steps"]:
        if not step["sustained"]:
            break
        kept = step
    return kept


def summary(part: str, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The medians of a part's runs (and the runs themselves)."""
    out: dict[str, Any] = {"runs": runs}
    if not runs:
        return out | {"failed": True}
    if part == "barrier":
        out["by_shards"] = {
            n: {
                "median_ms": median([r[n]["median_ms"] for r in runs]),
                "p90_ms": median([r[n]["p90_ms"] for r in runs]),
                "ready_s": median([r[n]["ready_s"] for r in runs]),
            }
            for n in runs[0]
        }
    elif part == "idle":
        mid = _middle(runs, lambda r: r["per_camera_mb"])
        out |= {
            "cameras": runs[0]["cameras"],
            "shards": runs[0]["shards"],
            "per_camera_mb": median([r["per_camera_mb"] for r in runs]),
            "ready_s": median([r["ready_s"] for r in runs]),
            "base_ready_s": median([r["base"]["ready_s"] for r in runs]),
            "shard_base_mb": median([r["shard_base_mb"] for r in runs]),
            "shard_rss_mb": mid["full"]["rss_mb"],
        }
    elif part == "cameras":
        per_camera, stream_mb = [], []
        for r in runs:
            for shards in ("1", "2"):
                step = _last_sustained(r[shards])
                if step is not None:
                    per_camera.append(sum(step["shard_cores"].values()) / step["cameras"])
                    grown = sum(step["rss_mb"].values()) - sum(step["rss_before_mb"].values())
                    stream_mb.append(grown / step["cameras"])
        mid = _middle(runs, lambda r: r["ratio"] if not math.isnan(r["ratio"]) else -1)
        top = _last_sustained(mid["2"])
        out |= {
            "fleet": runs[0]["fleet"],
            "sustained_1": median([r["1"]["sustained"] for r in runs]),
            "sustained_2": median([r["2"]["sustained"] for r in runs]),
            "capped_1": any(r["1"]["capped"] for r in runs),
            "capped_2": any(r["2"]["capped"] for r in runs),
            "pinned": runs[0]["pinned"],
            "ratio": median([r["ratio"] for r in runs]),
            "core_per_camera": median(per_camera),
            "stream_mb_per_camera": median(stream_mb),
            "shard_cores_2": top["shard_cores"] if top else {},
            "bench_cores_2": top["bench_cores"] if top else math.nan,
        }
    elif part == "publish":
        mid = _middle(runs, lambda r: r["ratio"] if not math.isnan(r["ratio"]) else -1)
        per_message = [
            sum(r[s]["at"]["shard_cores"].values()) / r[s]["at"]["received_per_s"]
            for r in runs
            for s in ("1", "2")
            if r[s]["at"]["received_per_s"] > 0
        ]
        out |= {
            "sensors": runs[0]["sensors"],
            "pinned": runs[0]["pinned"],
            "capped_1": any(r["1"]["capped"] for r in runs),
            "capped_2": any(r["2"]["capped"] for r in runs),
            "capacity_1": median([r["1"]["capacity_per_s"] for r in runs]),
            "capacity_2": median([r["2"]["capacity_per_s"] for r in runs]),
            "ratio": median([r["ratio"] for r in runs]),
            "shard_cores_1": mid["1"]["at"]["shard_cores"],
            "shard_cores_2": mid["2"]["at"]["shard_cores"],
            "broker_cores_2": mid["2"]["at"]["broker_cores"],
            "shard_us_per_message": 1e6 * median(per_message),
        }
    elif part == "fleet":
        mid = _middle(runs, lambda r: r["delivered"])
        out |= {
            "sensors": runs[0]["sensors"],
            "shards": runs[0]["shards"],
            "seconds": median([r["seconds"] for r in runs]),
            "delivered": median([r["delivered"] for r in runs]),
            "delivered_min": min(r["delivered"] for r in runs),
            "produced": median([r["totals"]["produced"] for r in runs]),
            "received_per_s": median([r["received_per_s"] for r in runs]),
            "produced_per_s": median([r["produced_per_s"] for r in runs]),
            "shard_cores": mid["shard_cores"],
            "shard_cores_total": median([sum(r["shard_cores"].values()) for r in runs]),
            "rss_mb": mid["rss_mb"],
            "rss_total_mb": median([sum(r["rss_mb"].values()) for r in runs]),
            "broker_rss_mb": median([r["broker_rss_mb"] for r in runs]),
            "broker_cores": median([r["broker_cores"] for r in runs]),
            "ready_s": median([r["ready_s"] for r in runs]),
            "drained": all(r["drained"] for r in runs),
        }
    return out


def _ok(results: dict[str, Any], part: str) -> dict[str, Any] | None:
    got = results.get(part)
    return None if got is None or got.get("failed") else got


def sizing(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Cores and memory for the goal's sensors and cameras, from the measured per-unit costs."""
    rows: list[dict[str, Any]] = []
    fleet, cams, idle = _ok(results, "fleet"), _ok(results, "cameras"), _ok(results, "idle")
    if fleet is not None and fleet["received_per_s"] > 0:
        rate = GOAL_SENSORS / GOAL_SENSOR_PERIOD_S
        scale = GOAL_SENSORS / fleet["sensors"]
        shard_core_msg = fleet["shard_cores_total"] / fleet["received_per_s"]
        broker_core_msg = fleet["broker_cores"] / fleet["received_per_s"]
        rows.append({
            "what": f"{GOAL_SENSORS:,} sensors published every {GOAL_SENSOR_PERIOD_S:g} s "
            f"({rate:,.0f} msg/s)",
            "unit_cost": (
                f"shards {1e6 * shard_core_msg:.0f} µs CPU per message + broker "
                f"{1e6 * broker_core_msg:.0f} µs; {fleet['rss_total_mb']:.0f} MB over "
                f"{fleet['shards']} shards for {fleet['sensors']:,} sensors"
            ),
            "cores": rate * (shard_core_msg + broker_core_msg),
            "memory_gb": (fleet["rss_total_mb"] * max(1.0, scale) + fleet["broker_rss_mb"]) / 1024,
            "shards": fleet["shards"],
        })  # fmt: skip
    if cams is not None and idle is not None and cams["core_per_camera"] > 0:
        core = cams["core_per_camera"]
        shards = math.ceil(GOAL_CAMERAS * core)  # a shard per core: its cameras use one core's time
        per_camera_mb = idle["per_camera_mb"] + max(0.0, cams["stream_mb_per_camera"])
        rows.append({
            "what": f"{GOAL_CAMERAS:,} cameras streaming main 720p25 + sub 360p25, each watched",
            "unit_cost": (
                f"{core:.2f} core and {per_camera_mb:.1f} MB per camera; a shard per core "
                f"({1 / core:.1f} cameras), {idle['shard_base_mb']:.0f} MB per shard"
            ),
            "cores": GOAL_CAMERAS * core,
            "memory_gb": (shards * idle["shard_base_mb"] + GOAL_CAMERAS * per_camera_mb) / 1024,
            "shards": shards,
        })  # fmt: skip
    return rows


def _f(value: Any, fmt: str) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return format(value, fmt)


def _verdict(ok: bool) -> str:
    return "PASS" if ok else "MISS"


def _cores(cores: dict[str, float]) -> str:
    return " ".join(f"{name} {v:.2f}" for name, v in cores.items()) or "-"


def report(results: dict[str, Any]) -> str:
    m, opts = results["machine"], results["options"]
    lines = [
        f"shards bench: {m['cpus']} CPUs, python {m['python']}, load average {m['load_before']:.2f} before, "
        f"{m.get('load_after', math.nan):.2f} after; Ray started in {m.get('ray_init_s', math.nan):.1f} s; "
        f"{opts['runs']} run(s) per part, medians; {m.get('wall_s', math.nan):.0f} s in all",
    ]
    if (b := results.get("barrier")) is not None:
        lines += [
            "",
            "barrier: wall ms per Coordinator.run_to (step mode, +1 sim s, one idle camera per shard)",
        ]
        if b.get("failed"):
            lines.append("  failed (see above)")
        for n, row in b.get("by_shards", {}).items():
            goal = ""
            if int(n) == BARRIER_TARGET_SHARDS:
                goal = (
                    f"  target ≤ {BARRIER_TARGET_MS:g} ms: {_verdict(row['median_ms'] <= BARRIER_TARGET_MS)}"
                )
            lines.append(
                f"  {n} shards: median {row['median_ms']:.2f} ms, p90 {row['p90_ms']:.2f} ms "
                f"({opts['barrier_rounds']} advances); shards ready in {row['ready_s']:.1f} s{goal}"
            )
    if (i := results.get("idle")) is not None:
        lines += ["", "idle cameras"]
        if i.get("failed"):
            lines.append("  failed (see above)")
        else:
            lines += [
                f"  {i['cameras']} idle cameras on {i['shards']} shards: {i['per_camera_mb']:.2f} MB RSS "
                f"per camera; ready in {i['ready_s']:.1f} s "
                f"(one camera per shard: {i['base_ready_s']:.1f} s)",
                f"  a shard's own RSS (one camera, no automation server): {i['shard_base_mb']:.0f} MB;"
                " "
                "RSS per shard: " + " ".join(f"{k} {v:.0f} MB" for k, v in i["shard_rss_mb"].items()),
            ]
    if (c := results.get("cameras")) is not None:
        pinned = "; shard k pinned to CPU k" if c.get("pinned") else ""
        lines += [
            "",
            f"watched cameras at 25 fps (main 720p + sub 360p, a WebSocket viewer per stream){pinned}",
        ]
        if c.get("failed"):
            lines.append("  failed (see above)")
        else:
            cap1 = " (the sweep's cap)" if c["capped_1"] else ""
            cap2 = " (the sweep's cap)" if c["capped_2"] else ""
            lines += [
                f"  sustained with 1 shard: {c['sustained_1']:g}{cap1}; "
                f"with 2 shards: {c['sustained_2']:g}{cap2} "
                f"(fleet of {c['fleet']}, --max-cameras)",
                f"  ratio 2/1 (median of the runs' ratios): {c['ratio']:.2f}, "
                f"target ≥ {SCALE_TARGET}: "
                f"{_verdict(c['ratio'] >= SCALE_TARGET)}",
                f"  CPU per shard at the 2 shards' last sustained step: {_cores(c['shard_cores_2'])} "
                f"(viewers, in the bench process: {_f(c['bench_cores_2'], '.2f')})",
                f"  per watched camera: {c['core_per_camera']:.3f} core, "
                f"{c['stream_mb_per_camera']:.1f} MB RSS more than idle",
                "  steps (cameras watched: slowest stream's fps / frame age p50; ! = not sustained):",
            ]
            for r in c["runs"]:
                for shards in ("1", "2"):
                    steps = " ".join(
                        f"{s['cameras']}:{s['min_fps']:.1f}/{s['late_p50_ms']:.0f}ms"
                        + ("" if s["sustained"] else "!")
                        for s in r[shards]["steps"]
                    )
                    lines.append(f"    {shards} shard(s): {steps}")
    if (p := results.get("publish")) is not None:
        pinned = "; shard k pinned to CPU k" if p.get("pinned") else ""
        lines += [
            "",
            f"sensor samples published per second into NATS (MQTT QoS 1), clock speed swept{pinned}",
        ]
        if p.get("failed"):
            lines.append("  failed (see above)")
        else:
            cap1 = " (the sweep's cap)" if p["capped_1"] else ""
            cap2 = " (the sweep's cap)" if p["capped_2"] else ""
            lines += [
                f"  capacity with 1 shard: {p['capacity_1']:,.0f}/s{cap1}; with 2 shards: "
                f"{p['capacity_2']:,.0f}/s{cap2} ({p['sensors']:,} sensors at period 1 s)",
                f"  ratio 2/1 (median of the runs' ratios): {p['ratio']:.2f}, "
                f"target ≥ {SCALE_TARGET}: "
                f"{_verdict(p['ratio'] >= SCALE_TARGET)}",
                f"  CPU at capacity: 1 shard: {_cores(p['shard_cores_1'])}; "
                f"2 shards: {_cores(p['shard_cores_2'])}, broker {p['broker_cores_2']:.2f}; "
                f"{p['shard_us_per_message']:.0f} µs shard CPU per message",
            ]
            for r in p["runs"]:
                for shards in ("1", "2"):
                    steps = " ".join(
                        f"{s['offered_per_s']:.0f}>{s['received_per_s']:.0f}" for s in r[shards]["steps"]
                    )
                    lines.append(f"    {shards} shard(s), offered>received per s: {steps}")
    if (f := results.get("fleet")) is not None:
        lines += ["", "a fleet published at its period into NATS (MQTT QoS 1)"]
        if f.get("failed"):
            lines.append("  failed (see above)")
        else:
            lines += [
                f"  {f['sensors']:,} sensors every 10 s on {f['shards']} shards, "
                f"{f['seconds']:.0f} s measured: "
                f"{f['produced_per_s']:,.0f} produced/s, {f['received_per_s']:,.0f} received/s",
                f"  received / produced (whole run, drained): {f['delivered']:.5f} (worst run "
                f"{f['delivered_min']:.5f}), target ≥ {DELIVERY_TARGET}: "
                f"{_verdict(f['delivered_min'] >= DELIVERY_TARGET)}"
                + ("" if f["drained"] else " (a run did not drain)"),
                "  RSS per shard: "
                + " ".join(f"{k} {v:.0f} MB" for k, v in f["rss_mb"].items())
                + f"; CPU per shard: {_cores(f['shard_cores'])}",
                f"  broker: {f['broker_rss_mb']:.0f} MB RSS, {f['broker_cores']:.2f} core",
            ]
    rows = results.get("sizing") or []
    if rows:
        lines += ["", "sizing (from the per-unit costs above)", ""]
        lines += ["| Goal | Per-unit cost (measured) | Cores | Memory |", "|---|---|---|---|"]
        for row in rows:
            lines.append(
                f"| {row['what']} | {row['unit_cost']} | {row['cores']:.1f} | {row['memory_gb']:.1f} GB "
                f"({row['shards']} shards) |"
            )
    return "\n".join(lines)
