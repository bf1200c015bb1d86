"""Run by the cluster test in a process of its own (Ray reads its token when first imported): four
shards of ``site_shards`` on the cluster at ``argv[1]``; prints one JSON object of what it saw."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from twin.cluster.coordinator import Coordinator
from twin.cluster.merge import trace_hash
from twin.cluster.plan import split
from twin.cluster.run import merged_record, owners_of, relay
from twin.scenario.model import load_scenario
from twin.scenario.runner import RunOptions, runner_settings, trace_of
from twin.serve import world_config

SITE = Path(__file__).resolve().parents[2] / "scenarios" / "site_shards.yaml"
SLICE_S = 0.01


def main(address: str) -> dict:
    settings = runner_settings(SITE, RunOptions(step=True))
    config, _, _ = world_config(settings, load_scenario(SITE))
    specs = split(config, 4)
    c = Coordinator(settings, specs, owners_of(specs), address=address)
    c.start()
    seen: dict = {"nodes": len({i["node_id"] for i in c.info.values()}), "apart": [], "drift": []}
    try:
        scenario = load_scenario(SITE)
        for t in range(0, 601, 3):  # the barrier: every shard at t after each advance
            times = {x.name: x.sim_time for x in c.run_to(float(t))}
            if set(times.values()) != {float(t)}:
                seen["apart"].append(times)
            relay(c, scenario)  # what starts another shard's 'after' steps
        records = c.records()
        runs = sorted((t, r.name, i, n, p) for r in records for t, i, n, p in r.actions)
        numbered = [(t, k, n, p) for k, (t, _, _, n, p) in enumerate(runs, 1)]
        seen["hash"] = trace_hash(trace_of(merged_record(records, 600.0, None, False), numbered))
        start = 600.0
        for speed in (1.0, 10.0, 3.0):  # realtime: one anchor, speed changes are new anchors
            anchor = c.follow(sim_at=start, speed=speed, paused=False)
            time.sleep(0.3)
            for x in c.times():
                seen["drift"].append((speed, abs(x.sim_time - anchor.sim_time(x.wall))))
            start = anchor.sim_time(time.time() + 0.05)
        paused = c.follow(sim_at=start, speed=3.0, paused=True)
        time.sleep(0.2)
        seen["paused_at"] = paused.sim_at
        seen["paused"] = sorted({x.sim_time for x in c.times()})
        seen["barrier_ms"] = sorted(1000 * s for s in c.barrier_s)[len(c.barrier_s) // 2]
    finally:
        c.shutdown()
    return seen


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1])))
