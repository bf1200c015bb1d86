"""A coordinator of shards in this process: the Ray coordinator's calls, without Ray (fast tests of
what the coordinator does with its shards; the Ray one is tested on a real cluster)."""

from __future__ import annotations

import time
from typing import Any

from twin.clock import Anchor
from twin.cluster.coordinator import anchor_after
from twin.cluster.run import owners_of
from twin.cluster.shard import Shard, ShardTime
from twin.settings import Settings


class LocalCoordinator:
    def __init__(self, settings: Settings, specs) -> None:
        self.specs = tuple(specs)
        self.owners = owners_of(self.specs)
        now = time.time()
        self.shards = {s.name: Shard(settings, s, self.owners, wall_now=now) for s in self.specs}
        self.actors = self.shards
        self.info: dict[str, dict[str, Any]] = {}
        self.anchor: Anchor | None = None
        self.barrier_s: list[float] = []
        self.lost: dict[str, str] = {}

    async def start(self) -> None:
        for name, shard in self.shards.items():
            self.info[name] = await shard.start() | {"node_ip": "127.0.0.1", "node_id": "local"}

    async def stop(self) -> None:
        for shard in self.shards.values():
            await shard.stop()

    def call(self, shard: str, method: str, *args: Any, **kwargs: Any) -> Any:
        return getattr(self.shards[shard], method)(*args, **kwargs)

    def broadcast(self, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return {name: getattr(s, method)(*args, **kwargs) for name, s in self.shards.items()}

    def run_to(self, sim_time: float) -> list[ShardTime]:
        return list(self.broadcast("run_to", sim_time).values())

    def follow(self, *, speed: float, paused: bool, sim_at: float | None = None) -> Anchor:
        self.anchor = anchor_after(self.anchor, time.time() + 0.05, speed, paused, sim_at)
        self.broadcast("follow", self.anchor)
        return self.anchor

    def times(self) -> list[ShardTime]:
        return list(self.broadcast("time").values())

    def records(self):
        return list(self.broadcast("record").values())

    def check(self) -> None:
        pass
