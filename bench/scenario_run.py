"""``python -m bench.scenario_run``: a day of a 1 000-sensor fleet at 1 Hz with rules active, no
client, on the step clock, as fast as the CPU allows. Reports wall time (target < 60 s for 24 h)
and world events per second.

The world is the scenario library's ``fleet_1000.yaml`` (its fleet, seed and epoch); ten threshold
rules watch the first ten sensors' temperature, so every sample of theirs is evaluated by the rules
engine as it is taken. Time moves in one-hour slices through the clock driver, the same path a
scenario run takes.

World events are the samples taken (one per sensor per tick: each is a reading the rules engine
and data push see, handed over a tick at a time as one block) plus every other event the world
emits (rule evaluations, firings, messages). With no client connected nobody subscribes to single
telemetry events, so none are built.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hardware.ports.types import ClockMode
from twin.automation.server import automation_of
from twin.clock import SimClock
from twin.scenario import load_scenario
from twin.sensors import sensors_of
from twin.wings import KINDS
from twin.world import World

SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "fleet_1000.yaml"
WALL_TARGET_S = 60.0
SLICE_S = 3600.0
RULES = 10


def rule(device: str) -> dict:
    return {
        "name": f"hot {device}",
        "condition": {
            "condition_type": "comparison",
            "source": f"device:{device}:temperature",
            "operator": "greater_than",
            "threshold": 24.0,
        },
        "actions": [{"type": "notify", "message": "temperature ${value}"}],
        "cooldown": 600_000,
    }


def samples_taken(world: World) -> int:
    return sum(fleet.samples_taken for fleet in sensors_of(world).groups.values())


def run(hours: float, rules: int = RULES) -> dict:
    scenario = load_scenario(SCENARIO)
    world = World(scenario.world_config(), kinds=KINDS)
    clock = SimClock(world, mode=ClockMode.STEP)
    fleet = next(iter(sensors_of(world).groups.values()))
    active = 0
    engine = automation_of(world).rules
    for device in fleet.device_ids[:rules]:
        engine.create_rule(rule(device))
        active += 1
    end = hours * 3600.0
    events0, samples0 = world.events_emitted, samples_taken(world)
    start = time.perf_counter()
    while world.env.now < end:
        clock.run_to(min(end, world.env.now + SLICE_S))
    wall = time.perf_counter() - start
    events = world.events_emitted - events0
    samples = samples_taken(world) - samples0
    return {
        "sensors": len(fleet.device_ids),
        "period_s": fleet.group.period,
        "sim_hours": hours,
        "rules": active,
        "wall_s": wall,
        "samples": samples,
        "other_events": events - samples,
        "events": events,
        "events_per_s": events / wall if wall else 0.0,
        "projected_24h_wall_s": wall * 24.0 / hours,
        "target_wall_s": WALL_TARGET_S,
        "verdict": "PASS" if wall * 24.0 / hours < WALL_TARGET_S else "MISS",
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.scenario_run", description=__doc__)
    p.add_argument("--hours", type=float, default=24.0, help="world hours to run (default 24)")
    p.add_argument("--rules", type=int, default=RULES, help="threshold rules (default 10)")
    p.add_argument("--trials", type=int, default=1, help="runs; the median wall time is reported (default 1)")
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    if args.hours <= 0 or args.rules < 0 or args.trials < 1:
        p.error("--hours must be > 0, --rules >= 0 and --trials >= 1")
    trials = [run(args.hours, args.rules) for _ in range(args.trials)]
    r = {
        **sorted(trials, key=lambda x: x["wall_s"])[len(trials) // 2],
        "trials_wall_s": [t["wall_s"] for t in trials],
    }
    print(
        f"scenario run: {r['sensors']} sensors at {1 / r['period_s']:g} Hz, {r['rules']} rules, no client, "
        f"step mode, {r['sim_hours']:g} h of world time, median of {len(trials)} trials"
    )
    walls = ", ".join(f"{w:.1f}" for w in r["trials_wall_s"])
    print(f"  wall time        {r['wall_s']:.1f} s (trials: {walls})")
    print(
        f"  world events     {r['events']} ({r['events_per_s']:,.0f} events/s): "
        f"{r['samples']} samples, {r['other_events']} other events"
    )
    scale = "" if r["sim_hours"] == 24 else f" (projected from {r['sim_hours']:g} h)"
    print(f"target 24 h wall < {WALL_TARGET_S:g} s: {r['projected_24h_wall_s']:.1f} s{scale}: {r['verdict']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
