"""The twin's implementation of the control-plane port: clock, reset, snapshot, restore, seed, the
scenario actions (faults, storms, device and camera events) with their timed undo, and what the
console reads of the fleet."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import ValidationError

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.types import ClockMode, ClockState, SnapshotInfo
from twin.automation.server import automation_of
from twin.camera.wing import cameras_of
from twin.clock import SimClock
from twin.journal import RequestJournal
from twin.scenario.actions import BrokerSwitch, Undo
from twin.scenario.catalog import ACTIONS
from twin.sensors import sensors_of
from twin.world import World, WorldSnapshot

if TYPE_CHECKING:
    from api.automation.ratelimit import RateLimiter
    from api.faults import FaultSet
    from hardware.ports.devices import Device
    from hardware.ports.gateway import GatewayBackend
    from twin.camera.camera import Camera
    from twin.sensors import SensorFleet

MAX_SNAPSHOTS = 32
MAX_LABEL = 200
"""Characters a snapshot's label may have."""
ACTION_LOG = 200
"""Actions the console's log shows at the most (the newest)."""
ACTIONS_KEPT = 10_000
"""Actions remembered for reports and the log; older ones are forgotten."""
MAX_POINTS = 240


class LiveRuns(Protocol):
    """Scenarios run on this world (:class:`twin.scenario.live.LiveScenarios`)."""

    def interrupt(self, reason: str) -> None:
        """End a run whose world is about to be rebuilt."""


class SessionGate(Protocol):
    """The gate in front of a real member (:class:`api.members.gates.Gate`)."""

    def expire_tokens(self) -> int:
        """End every session a client was seen using in front of the member."""


class TwinControl:
    def __init__(
        self,
        world: World,
        clock: SimClock,
        *,
        faults: dict[str, FaultSet] | None = None,
        limiters: dict[str, RateLimiter] | None = None,
        journal: RequestJournal | None = None,
        gateways: dict[str, GatewayBackend] | None = None,
        real: dict[str, SessionGate] | None = None,
    ) -> None:
        self.world = world
        self.clock = clock
        self.faults = faults or {}
        self.limiters = limiters or {}
        self.journal = journal if journal is not None else RequestJournal(world)
        self.gateways = gateways or {}
        """Each camera's gateway backend, the one its server serves (the console reads cameras
        through it and watches their streams on it)."""
        self.real = real or {}
        """The gates in front of the real members by name, which end the sessions seen there."""
        for name, fault_set in self.faults.items():
            fault_set.seed = world.streams.key(f"faults.{name}")
        self._snapshots: OrderedDict[str, tuple[WorldSnapshot, str]] = OrderedDict()
        """Each snapshot kept, with its label."""
        self._ids = itertools.count(1)
        self._seen_env = world.env
        self._generation = 0
        self._undo: dict[int, Undo] = {}
        self._undo_at: dict[int, float] = {}
        self._action_ids = itertools.count(1)
        self.actions_run: list[tuple[float, int, str, dict[str, Any]]] = []
        """(sim time, id, name, params) of every action run."""
        self.actions_undone: dict[int, float] = {}
        """Sim time each undone action ended (its fault window closed)."""
        self.stop_at: float | None = None
        """Set by a step-mode scenario run: a client's world sleep never goes past it."""
        self.stopped = asyncio.Event()
        self.released = asyncio.Event()
        """Set by the scenario run once its client is stopped: the sleeps held at :attr:`stop_at` answer."""
        self.settle: Callable[[], Awaitable[None]] | None = None
        """Awaited after a client's world sleep: lets sockets catch up with the world (a camera
        that went down closes its listeners, one that booted opens them) before the client goes on."""
        self.broker: BrokerSwitch | None = None
        """Takes the embedded MQTT broker down and up (set by whoever runs the broker)."""
        self.scenarios: LiveRuns | None = None
        """Scenarios the console runs on this world (set by ``twin run``: the scenario runner imports
        the composition root, so this module cannot build them)."""

    def pause(self) -> ClockState:
        self.clock.pause()
        return self.clock.state()

    def resume(self) -> ClockState:
        self.clock.resume()
        return self.clock.state()

    def set_speed(self, speed: float) -> ClockState:
        self.clock.set_speed(speed)
        return self.clock.state()

    def set_mode(self, mode: ClockMode) -> ClockState:
        self.clock.set_mode(mode)
        return self.clock.state()

    def advance(self, seconds: float) -> ClockState:
        self.clock.advance(seconds)
        return self.clock.state()

    def run_to(self, sim_time: float) -> ClockState:
        self.clock.run_to(sim_time)
        return self.clock.state()

    def reset(self, seed: int | None = None) -> ClockState:
        if seed is not None and seed < 0:
            raise InvalidInput("seed must be a non-negative integer", field="seed")
        config = self.world.config if seed is None else dataclasses.replace(self.world.config, seed=seed)
        if self.scenarios is not None:
            self.scenarios.interrupt("the world was reset during the run")
        self.world.reset(config)
        self.clock.rebased()
        return self.clock.state()

    def snapshot(self, label: str = "") -> SnapshotInfo:
        if len(label) > MAX_LABEL:
            raise InvalidInput(f"a label has at most {MAX_LABEL} characters", field="label")
        snap = self.world.snapshot()
        snapshot_id = f"snap-{next(self._ids)}"
        self._snapshots[snapshot_id] = (snap, label)
        while len(self._snapshots) > MAX_SNAPSHOTS:
            self._snapshots.popitem(last=False)
        return SnapshotInfo(snapshot_id, snap.sim_time, snap.config.seed, label)

    def snapshots(self) -> list[SnapshotInfo]:
        """The snapshots kept (the newest :data:`MAX_SNAPSHOTS`), oldest first."""
        return [
            SnapshotInfo(i, s.sim_time, s.config.seed, label) for i, (s, label) in self._snapshots.items()
        ]

    def delete_snapshot(self, snapshot_id: str) -> None:
        """Forget a snapshot; ``NotFound`` for an unknown id."""
        if self._snapshots.pop(snapshot_id, None) is None:
            raise NotFound(f"no snapshot {snapshot_id!r}", resource="snapshot")

    def restore(self, snapshot_id: str) -> ClockState:
        kept = self._snapshots.get(snapshot_id)
        if kept is None:
            raise NotFound(f"no snapshot {snapshot_id!r}", resource="snapshot")
        snap = kept[0]
        if self.scenarios is not None:
            self.scenarios.interrupt("a snapshot was restored during the run")
        self.world.restore(snap)
        self.clock.rebased()
        return self.clock.state()

    def seed(self) -> int:
        return self.world.seed

    # Lookups for actions ---------------------------------------------------------------------
    def fault_set(self, server: str) -> FaultSet:
        found = self.faults.get(server)
        if found is None:
            raise NotFound(f"no server named {server!r}", resource="server")
        return found

    def limiter(self, server: str) -> RateLimiter:
        found = self.limiters.get(server)
        if found is None:
            raise NotFound(f"no rate-limited server named {server!r}", resource="server")
        return found

    def camera(self, camera_id: str) -> Camera:
        found = cameras_of(self.world).get(camera_id)
        if found is None:
            raise NotFound(f"no camera {camera_id!r}", resource="camera")
        return found

    def end_real_sessions(self, server: str) -> bool:
        gate = self.real.get(server)
        if gate is None:
            return False
        gate.expire_tokens()
        return True

    # Actions ---------------------------------------------------------------------------------
    def run_action(
        self, name: str, params: dict[str, Any], for_seconds: float | None = None
    ) -> dict[str, Any]:
        """Run an action now; with ``for_seconds`` its undo runs that many world seconds later.
        Returns the action's id (for :meth:`undo_action`) and when it will be undone."""
        action = ACTIONS.check(name)
        try:
            parsed = action.params.model_validate(params)
        except ValidationError as err:
            first = err.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InvalidInput(f"{name}: {where}: {first['msg']}", field=where or "params") from err
        if for_seconds is not None and for_seconds <= 0:
            raise InvalidInput("'for' must be a positive number of seconds", field="for")
        undo = action.run(self, parsed)
        action_id = next(self._action_ids)
        self.actions_run.append((self.world.env.now, action_id, name, parsed.model_dump()))
        if len(self.actions_run) > ACTIONS_KEPT:
            forgotten = self.actions_run.pop(0)[1]
            self.actions_undone.pop(forgotten, None)
            if forgotten not in self._undo:
                self._undo_at.pop(forgotten, None)
        if self.world.trace is not None:
            line = f"{self.world.env.now:.6f} scenario.action {name} {parsed.model_dump()!r}"
            self.world.trace.append(line)
        undo_at = None
        if undo is not None:
            self._undo[action_id] = undo
            if for_seconds is not None:
                undo_at = self._undo_at[action_id] = self.world.env.now + for_seconds
                self.world.env.process(self._undo_later(action_id, for_seconds))
        return {"id": action_id, "action": name, "params": parsed.model_dump(), "undo_at": undo_at}

    def _undo_later(self, action_id: int, seconds: float):
        yield self.world.env.timeout(seconds)
        self.undo_action(action_id)

    def undo_action(self, action_id: int) -> bool:
        """Undo a running action; ``False`` if it had no undo or was undone already."""
        undo = self._undo.pop(action_id, None)
        if undo is None:
            return False
        undo()
        self.actions_undone[action_id] = self.world.env.now
        return True

    def active_actions(self) -> list[int]:
        return sorted(self._undo)

    def action_log(self, since_id: int = 0) -> list[dict[str, Any]]:
        """The newest actions run (after ``since_id``), oldest first: when each started, when it is
        due to be undone, when it ended, and whether it is still active (undoable)."""
        rows = [a for a in self.actions_run[-ACTION_LOG:] if a[1] > since_id]
        return [
            {
                "id": i,
                "action": name,
                "params": params,
                "at": at,
                "undo_at": self._undo_at.get(i),
                "ended_at": self.actions_undone.get(i),
                "active": i in self._undo,
            }
            for at, i, name, params in rows
        ]

    def clear_faults(self) -> None:
        """Undo every active action, then clear what is left on the servers (faults, storms)."""
        for action_id in self.active_actions():
            self.undo_action(action_id)
        for fault_set in self.faults.values():
            fault_set.clear()
        for limiter in self.limiters.values():
            limiter.calm()

    # Client sleep on the world clock ---------------------------------------------------------
    async def sleep_world(self, seconds: float) -> ClockState:
        """A scripted client's pause on the world clock. In step mode it moves time itself (up to
        :attr:`stop_at`, where a scenario run holds the client until it ends); in realtime mode it
        waits on the clock."""
        if seconds < 0:
            raise InvalidInput("cannot sleep a negative duration", field="seconds")
        if self.clock.mode is ClockMode.STEP:
            target = self.world.env.now + seconds
            if self.stop_at is not None and target >= self.stop_at:
                if self.stop_at > self.world.env.now:
                    self.clock.run_to(self.stop_at)
                self.stopped.set()
                await self.released.wait()  # held until the run ends and the client is stopped
                return self.clock.state()
            self.clock.run_to(target)
            if self.settle is not None:
                await self.settle()
        else:
            await self.clock.sleep(seconds)
        return self.clock.state()

    # What the console reads of the fleet -----------------------------------------------------
    def generation(self) -> int:
        """Changes whenever the world has been rebuilt (a reset, a restore, a scenario run's
        start) since the last call: what a viewer of the old world's video waits on to re-attach."""
        if self.world.env is not self._seen_env:
            self._seen_env = self.world.env
            self._generation += 1
        return self._generation

    def gateway(self, camera_id: str) -> GatewayBackend:
        found = self.gateways.get(camera_id)
        if found is None:
            raise NotFound(f"no camera {camera_id!r}", resource="camera")
        return found

    def camera_ids(self) -> list[str]:
        return list(cameras_of(self.world))

    def camera_state(self, camera_id: str) -> dict[str, Any]:
        """Power and services of a camera, as the world has them."""
        camera = self.camera(camera_id)
        services = {"camera": camera.ai.camera_service_running, "event_bus": camera.events.running}
        return {
            "id": camera_id,
            "powered": camera.powered,
            "down_until": camera.power.down_until,
            "uptime": camera.power.uptime() if camera.powered else None,
            "boot_count": camera.boot_count,
            "services": services,
        }

    def sensors(self, page: int, limit: int, points: int) -> tuple[list[Device], int, dict[str, Any]]:
        """A page of the automation server's devices, their total, and for each its metrics' last
        ``points`` values (a simulated sensor's from its signal at its last ticks, gaps as ``None``
        and spikes added; another device's latest values) and their units (from its device type)."""
        automation = automation_of(self.world)
        listing = automation.devices.list(page, limit, None, None)
        series: dict[str, Any] = {}
        units: dict[str, dict[str, str]] = {}
        for kind in {device.device_type for device in listing.devices}:
            found = automation.device_types.find(kind)
            units[kind] = {m.name: m.unit for m in found.metrics if m.unit} if found is not None else {}
        by_fleet: dict[int, tuple[SensorFleet, list[str]]] = {}
        for device in listing.devices:
            fleet = sensors_of(self.world).by_device.get(device.device_id) if device.simulated else None
            if fleet is not None:
                by_fleet.setdefault(id(fleet), (fleet, []))[1].append(device.device_id)
            else:
                current = automation.devices.current(device.device_id)
                values: dict[str, Any] = {m.name: [m.value] for m in current.metrics if m.value is not None}
                series[device.device_id] = {"times": [self.world.env.now], "metrics": values}
        for fleet, ids in by_fleet.values():
            times, values = fleet.recent(ids, self.world.env.now, min(max(points, 1), MAX_POINTS))
            series.update({d: {"times": times, "metrics": values[d]} for d in ids})
        for device in listing.devices:
            series[device.device_id]["units"] = units[device.device_type]
        return list(listing.devices), listing.total, series
