"""The control plane of a sharded world, served by its coordinator: the routes of one process's.

The clock is the coordinator's: step mode moves every shard through the barrier, realtime sends
every shard one anchor (pause, resume and speed are new anchors). An action goes to the shard that
holds what it acts on (a clock action stays here); its id is the coordinator's. A snapshot is one
per shard at one sim time, kept as one manifest. The journal is the shards' journals merged by
(sim time, server, sequence). ``GET /fleet`` lists every member with its addresses, shard and node.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from hardware.ports.errors import InvalidInput, NotFound, Unavailable
from hardware.ports.types import ClockMode, ClockState, SnapshotInfo
from twin.clock import Anchor
from twin.cluster.coordinator import Coordinator
from twin.cluster.merge import merged_journal
from twin.cluster.plan import AUTOMATION_SHARD, ShardLost
from twin.journal import JournalEntry
from twin.scenario.actions import Reach
from twin.scenario.catalog import ACTIONS
from twin.scenario.reach import member
from twin.settings import AUTOMATION, Settings

MAX_SNAPSHOTS = 32


class ClusterClock:
    """The coordinator's reading of the one world clock (what ``GET /clock`` reports)."""

    def __init__(self, coordinator: Coordinator, mode: ClockMode, speed: float, epoch: float) -> None:
        self.coordinator = coordinator
        self.mode, self.speed, self.epoch = mode, speed, epoch
        self.paused = False
        self.sim_time = 0.0
        """Step mode: where the last barrier left every shard."""
        self.after_barrier: Callable[[], None] | None = None
        """Called after every barrier (a scenario's events that start another shard's steps)."""

    def anchor(self) -> Anchor:
        return self.coordinator.anchor or Anchor(self.sim_time, time.time(), self.speed, self.paused)

    def sim_now(self) -> float:
        if self.mode is ClockMode.STEP:
            return self.sim_time
        return max(self.sim_time, self.anchor().sim_time(time.time()))

    def now(self) -> float:
        return self.epoch + self.sim_now()

    def state(self) -> ClockState:
        return ClockState(self.mode, self.speed, self.paused, self.sim_now(), self.epoch)

    async def sleep(self, seconds: float, *, background: bool = False) -> None:
        if self.mode is ClockMode.STEP:
            raise Unavailable("a sharded world in step mode moves only by /clock/advance or /clock/sleep")
        await asyncio.sleep(seconds / self.speed)

    # Moving it -------------------------------------------------------------------------------------
    def retime(self, *, speed: float | None = None, paused: bool | None = None) -> None:
        """Realtime: every shard on a new anchor from where the current one is then."""
        speed = self.speed if speed is None else speed
        paused = self.paused if paused is None else paused
        going = self.mode is ClockMode.REALTIME and self.coordinator.anchor is not None
        self.coordinator.follow(speed=speed, paused=paused, sim_at=None if going else self.sim_time)
        self.mode, self.speed, self.paused = ClockMode.REALTIME, speed, paused

    def run_to(self, sim_time: float) -> None:
        """The barrier: every shard in step mode at ``sim_time``."""
        now = self.sim_now()
        if sim_time < now:
            raise InvalidInput("cannot run to a time in the past", field="sim_time")
        times = self.coordinator.run_to(sim_time)
        self.mode, self.sim_time = ClockMode.STEP, sim_time
        self.coordinator.anchor = None
        if self.after_barrier is not None:
            self.after_barrier()
        apart = {t.name: t.sim_time for t in times if t.sim_time != sim_time}
        if apart:
            raise Unavailable(f"shards did not reach t={sim_time:g}: {apart}")


class ClusterControl:
    def __init__(self, coordinator: Coordinator, clock: ClusterClock, seed: int) -> None:
        self.coordinator = coordinator
        self._clock = clock
        self._seed = seed
        self._ids = itertools.count(1)
        self._snapshots: OrderedDict[str, tuple[SnapshotInfo, dict[str, str]]] = OrderedDict()
        self._action_ids = itertools.count(1)
        self.actions: dict[int, tuple[str, int, dict[str, Any]]] = {}
        """Each action run from here: its shard, its id there and what the shard said."""
        self.stop_at: float | None = None
        self.stopped = asyncio.Event()
        self.released = asyncio.Event()

    @property
    def clock(self) -> ClusterClock:
        return self._clock

    # The clock -------------------------------------------------------------------------------------
    def pause(self) -> ClockState:
        if self._clock.mode is ClockMode.REALTIME:
            self._clock.retime(paused=True)
        return self._clock.state()

    def resume(self) -> ClockState:
        if self._clock.mode is ClockMode.REALTIME:
            self._clock.retime(paused=False)
        return self._clock.state()

    def set_speed(self, speed: float) -> ClockState:
        if not speed > 0:
            raise InvalidInput("speed must be positive", field="speed")
        if self._clock.mode is ClockMode.REALTIME:
            self._clock.retime(speed=speed)
        self._clock.speed = speed
        return self._clock.state()

    def set_mode(self, mode: ClockMode) -> ClockState:
        if mode is ClockMode.STEP and self._clock.mode is ClockMode.REALTIME:
            self._clock.retime(paused=True)
            self._clock.run_to(self._clock.anchor().sim_at)
        elif mode is ClockMode.REALTIME and self._clock.mode is ClockMode.STEP:
            self._clock.retime(paused=False)
        return self._clock.state()

    def advance(self, seconds: float) -> ClockState:
        if seconds < 0:
            raise InvalidInput("cannot advance by a negative duration", field="seconds")
        return self.run_to(self._clock.sim_now() + seconds)

    def run_to(self, sim_time: float) -> ClockState:
        if self._clock.mode is ClockMode.REALTIME:
            self.set_mode(ClockMode.STEP)
        self._clock.run_to(sim_time)
        return self._clock.state()

    def reset(self, seed: int | None = None) -> ClockState:
        if seed is not None and seed < 0:
            raise InvalidInput("seed must be a non-negative integer", field="seed")
        self.coordinator.broadcast("reset", seed)
        self._seed = self._seed if seed is None else seed
        self._clock.sim_time = 0.0
        self.coordinator.anchor = None
        if self._clock.mode is ClockMode.REALTIME:
            self._clock.retime()
        return self._clock.state()

    def seed(self) -> int:
        return self._seed

    # Snapshots: one per shard at one sim time ------------------------------------------------------
    def snapshot(self, label: str = "") -> SnapshotInfo:
        was_running = self._clock.mode is ClockMode.REALTIME and not self._clock.paused
        if was_running:
            self.pause()
            time.sleep(0.1)  # every shard has taken the paused anchor
        at = {t.sim_time for t in self.coordinator.times()}
        if len(at) != 1:
            raise Unavailable(f"shards stand at different sim times {sorted(at)}; try again")
        parts = self.coordinator.broadcast("snapshot", label)
        info = SnapshotInfo(f"snap-{next(self._ids)}", at.pop(), self._seed, label)
        self._snapshots[info.id] = (info, parts)
        while len(self._snapshots) > MAX_SNAPSHOTS:
            _, (_, old) = self._snapshots.popitem(last=False)
            for shard, part in old.items():
                self.coordinator.call(shard, "forget", part)
        if was_running:
            self.resume()
        return info

    def snapshots(self) -> list[SnapshotInfo]:
        return [info for info, _ in self._snapshots.values()]

    def manifest(self, snapshot_id: str) -> dict[str, Any]:
        """One snapshot as the manifest it is: seed, epoch, sim time and each shard's part."""
        info, parts = self._kept(snapshot_id)
        return {"id": info.id, "seed": info.seed, "epoch": self._clock.epoch,
                "sim_time": info.sim_time, "shards": dict(parts)}  # fmt: skip

    def delete_snapshot(self, snapshot_id: str) -> None:
        _, parts = self._kept(snapshot_id)
        del self._snapshots[snapshot_id]
        for shard, part in parts.items():
            self.coordinator.call(shard, "forget", part)

    def restore(self, snapshot_id: str) -> ClockState:
        info, parts = self._kept(snapshot_id)
        for shard, part in parts.items():
            self.coordinator.call(shard, "restore", part)
        self._clock.sim_time = info.sim_time
        self.coordinator.anchor = None
        if self._clock.mode is ClockMode.REALTIME:
            self.coordinator.follow(sim_at=info.sim_time, speed=self._clock.speed, paused=self._clock.paused)
        return self._clock.state()

    def _kept(self, snapshot_id: str) -> tuple[SnapshotInfo, dict[str, str]]:
        kept = self._snapshots.get(snapshot_id)
        if kept is None:
            raise NotFound(f"no snapshot {snapshot_id!r}", resource="snapshot")
        return kept

    # Actions: on the shard that holds their target -------------------------------------------------
    def owner(self, name: str, params: dict[str, Any]) -> str | None:
        """The shard an action runs on; ``None`` for a clock action (the coordinator's own)."""
        action = ACTIONS.check(name)
        if action.reach is Reach.CLOCK:
            return None
        target = member(action, params) or AUTOMATION
        shard = self.coordinator.owners.get(target)
        if shard is None and target != AUTOMATION:
            raise NotFound(f"no member named {target!r}", resource="server")
        return shard or AUTOMATION_SHARD

    def run_action(
        self, name: str, params: dict[str, Any], for_seconds: float | None = None
    ) -> dict[str, Any]:
        shard = self.owner(name, params)
        said: dict[str, Any]
        if shard is None:
            parsed = ACTIONS[name].params.model_validate(params).model_dump()
            self.set_speed(parsed["speed"])  # the clock's one action
            said = {"action": name, "params": parsed, "undo_at": None}
        else:
            said = self.coordinator.call(shard, "control", "run_action", name, params, for_seconds)
        action_id = next(self._action_ids)
        self.actions[action_id] = (shard or "coordinator", said.get("id", 0), said)
        return {**said, "id": action_id, "shard": shard or "coordinator"}

    def undo_action(self, action_id: int) -> bool:
        found = self.actions.get(action_id)
        if found is None or found[0] == "coordinator":
            return False
        return bool(self.coordinator.call(found[0], "control", "undo_action", found[1]))

    def active_actions(self) -> list[int]:
        undoable = self.coordinator.broadcast("control", "active_actions")
        active = {name: set(ids) for name, ids in undoable.items()}
        return sorted(i for i, (shard, there, _) in self.actions.items() if there in active.get(shard, ()))

    def action_log(self, since_id: int = 0) -> list[dict[str, Any]]:
        active = set(self.active_actions())
        return [
            {"id": i, "shard": shard, "action": said.get("action"), "params": said.get("params"),
             "undo_at": said.get("undo_at"), "active": i in active}
            for i, (shard, _, said) in self.actions.items() if i > since_id
        ]  # fmt: skip

    async def sleep_world(self, seconds: float) -> ClockState:
        """A scripted client's pause: in step mode it moves every shard (held at a run's stop)."""
        if seconds < 0:
            raise InvalidInput("cannot sleep a negative duration", field="seconds")
        if self._clock.mode is ClockMode.STEP:
            target = self._clock.sim_time + seconds
            if self.stop_at is not None and target >= self.stop_at:
                if self.stop_at > self._clock.sim_time:
                    await asyncio.to_thread(self._clock.run_to, self.stop_at)
                self.stopped.set()
                await self.released.wait()
                return self._clock.state()
            await asyncio.to_thread(self._clock.run_to, target)
        else:
            await self._clock.sleep(seconds)
        return self._clock.state()

    # Where everything is ---------------------------------------------------------------------------
    def members(self) -> list[dict[str, Any]]:
        """Every server of the world: its listeners' URLs, its shard and the node that runs it."""
        out = []
        for shard, info in self.coordinator.info.items():
            names = sorted({url.split("/")[0] for url in info["urls"]})
            for name in names:
                mine = {k: v for k, v in info["urls"].items() if k.split("/")[0] == name}
                urls = {k.partition("/")[2] or "http": v for k, v in mine.items()}
                if name in info.get("rtsp", {}):
                    urls["rtsp"] = info["rtsp"][name]
                out.append(_member(name, shard, info, urls))
            if info.get("mqtt"):
                out.append(_member("mqtt", shard, info, {"mqtt": info["mqtt"]}))
        return out

    def shards(self) -> list[dict[str, Any]]:
        """Each shard: what it holds, where it runs, its sim time, and whether it is gone."""
        try:
            times = {t.name: t for t in self.coordinator.times()}
        except ShardLost:  # now left out: the others answer
            times = {t.name: t for t in self.coordinator.times()}
        out = []
        for name, info in self.coordinator.info.items():
            t = times.get(name)
            out.append({"name": name, "holds": info["holds"], "node": info.get("node_ip"),
                        "pid": info.get("pid"), "state": self.coordinator.lost.get(name, "running"),
                        "sim_time": None if t is None else t.sim_time,
                        "errors": None if t is None else t.errors})  # fmt: skip
        return out

    # What the console reads, on the shards that hold it ----------------------------------------------
    def readings(self, page: int, limit: int, points: int) -> dict[str, Any]:
        parts = self.coordinator.broadcast("readings", page, limit, points)
        out = dict(parts.get(AUTOMATION_SHARD, {}))
        cameras = [c for part in parts.values() for c in part.get("cameras", [])]
        order = {name: i for i, name in enumerate(self.coordinator.owners)}  # the fleet's order
        out["cameras"] = sorted(cameras, key=lambda c: order.get(c["id"], len(order)))
        return out

    def camera_detail(self, camera_id: str) -> dict[str, Any]:
        shard = self.coordinator.owners.get(camera_id)
        if shard is None or camera_id == AUTOMATION:
            raise NotFound(f"no camera {camera_id!r}", resource="camera")
        return self.coordinator.call(shard, "camera_detail", camera_id)


class ClusterJournal:
    """The shards' request journals as one, merged by (sim time, server, sequence)."""

    def __init__(self, coordinator: Coordinator) -> None:
        self.coordinator = coordinator
        self.dropped = 0

    def _entries(self) -> list[JournalEntry]:
        return merged_journal(self.coordinator.broadcast("journal_all").values())

    @property
    def last_seq(self) -> int:
        return len(self)

    def __len__(self) -> int:
        return len(self._entries())

    def select(self, *, since: int = 0, limit: int = 1000, **match: Any) -> list[JournalEntry]:
        keep = {k: v for k, v in match.items() if v is not None}
        rows = [e for e in self._entries() if e.seq > since]
        return [e for e in rows if all(getattr(e, k) == v for k, v in keep.items())][:limit]

    def distinct(self, since: int = 0) -> dict[str, set]:
        rows = [e for e in self._entries() if e.seq > since]
        return {k: {getattr(e, k) for e in rows} for k in ("server", "route", "status", "client")}


def _member(name: str, shard: str, info: dict[str, Any], urls: dict[str, str]) -> dict[str, Any]:
    node = {"node": info.get("node_ip"), "node_id": info.get("node_id"), "pid": info.get("pid")}
    return {"name": name, "shard": shard, **node, "urls": urls}


def control_app(
    control: ClusterControl, coordinator: Coordinator, settings: Settings
) -> tuple[Any, str | None]:
    """The control plane's app over the shards, behind the guard every control plane has (its
    token when bound beyond loopback, returned with it): a call that meets a shard that is gone
    answers 503 naming it, in the control plane's error shape."""
    from fastapi.responses import JSONResponse

    from api.control.app import create_app
    from api.control.guard import guarded
    from twin.scenario.catalog import ACTIONS

    app = create_app(control, journal=ClusterJournal(coordinator), actions=ACTIONS.describe())

    async def gone(_request: Any, exc: Exception) -> JSONResponse:
        return JSONResponse({"error": {"code": "unavailable", "message": str(exc)}}, status_code=503)

    app.add_exception_handler(ShardLost, gone)
    return guarded(app, settings.control_host, settings.state_dir, settings.public_host)
