"""``python -m bench.scenario_run``: a day of a 1 000-sensor fleet at 1 Hz with rules active, no
client, on the step clock, as fast as the CPU allows. Reports wall time (target < 60 s for 24 h)
and world events per second.

The world is the scenario library's ``fleet_1000.yaml`` (its fleet, seed and epoch); ten threshold
rules watch the first ten sensors' temperature, so every sample of theirs is evaluated by the rules
engine as it is taken. Time moves in one-hour slices through the clock driver, the same path a
scenario run takes.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from hardware.ports.types import ClockMode
from twin.clock import SimClock
from twin.scenario import load_scenario
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


def run(hours: float, rules: int = RULES) -> dict:
    scenario = load_scenario(SCENARIO)
    world = World(scenario.world_config())
    clock = SimClock(world, mode=ClockMode.STEP)
    fleet = next(iter(world.sensors.values()))
    active = 0
    engine = getattr(world, "rules", None)
    if engine is not None:
        for device in fleet.device_ids[:rules]:
            engine.create_rule(rule(device))
            active += 1
    end = hours * 3600.0
    published0 = world.bus.published
    start = time.perf_counter()
    while world.env.now < end:
        clock.run_to(min(end, world.env.now + SLICE_S))
    wall = time.perf_counter() - start
    events = world.bus.published - published0
    return {
        "sensors": len(fleet.device_ids),
        "period_s": fleet.group.period,
        "sim_hours": hours,
        "rules": active,
        "wall_s": wall,
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
    p.add_argument("--json", type=Path, metavar="PATH", help="also write the numbers as JSON to PATH")
    args = p.parse_args(argv)
    if args.hours <= 0 or args.rules < 0:
        p.error("--hours must be > 0 and --rules >= 0")
    r = run(args.hours, args.rules)
    print(
        f"scenario run: {r['sensors']} sensors at {1 / r['period_s']:g} Hz, {r['rules']} rules, no client, "
        f"step mode, {r['sim_hours']:g} h of world time"
    )
    print(f"  wall time        {r['wall_s']:.1f} s")
    print(f"  world events     {r['events']} ({r['events_per_s']:,.0f} events/s)")
    scale = "" if r["sim_hours"] == 24 else f" (projected from {r['sim_hours']:g} h)"
    print(f"target 24 h wall < {WALL_TARGET_S:g} s: {r['projected_24h_wall_s']:.1f} s{scale}: {r['verdict']}")
    if args.json:
        args.json.write_text(json.dumps(r, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
