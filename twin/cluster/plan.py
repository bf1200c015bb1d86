"""How one world is split into shards: which shard holds which wings (plain data, no Ray).

Shard 0 holds the automation server, which samples every simulated sensor (their telemetry is a
pure function of seed, device and time, so it costs nothing until it is read). The cameras are
split in contiguous runs over all shards, shard 0 included, and so are the simulated sensors whose
ticks are published to an outside broker (``--publish-fleet-to``), so that both kinds of work
spread over every core. A shard that would hold nothing is an error: the fleet cannot be split
that finely.
"""

from __future__ import annotations

from dataclasses import dataclass

from twin.fleet import FleetSlice, WorldConfig

AUTOMATION_SHARD = "shard-0"


class SplitError(ValueError):
    """The fleet cannot be split as asked; the message says why and what would work."""


class ShardLost(RuntimeError):
    """A shard's process is gone; the message names the shard."""

    def __init__(self, name: str, why: str) -> None:
        super().__init__(f"{name} is gone: {why}")
        self.shard = name


class ClusterUnreachable(ConnectionError):
    """``--cluster ADDRESS`` names nothing that answers."""


@dataclass(frozen=True, slots=True)
class ShardSpec:
    index: int
    slice: FleetSlice

    @property
    def name(self) -> str:
        return f"shard-{self.index}"

    def describe(self) -> str:
        parts = ["automation server"] if self.slice.automation else []
        if cams := self.slice.cameras:
            parts.append(f"{len(cams)} camera{'s' * (len(cams) != 1)} ({cams[0]}..{cams[-1]})")
        lo, hi = self.slice.sensors
        if hi > lo:
            parts.append(f"sensors {lo + 1}..{hi} published")
        return ", ".join(parts) or "nothing"


def runs(total: int, parts: int) -> list[tuple[int, int]]:
    """``total`` items split in ``parts`` contiguous runs ``[lo, hi)``, the longer runs first."""
    size, extra = divmod(total, parts)
    out, lo = [], 0
    for k in range(parts):
        hi = lo + size + (k < extra)
        out.append((lo, hi))
        lo = hi
    return out


def split(config: WorldConfig, shards: int, *, publishing: bool = False) -> tuple[ShardSpec, ...]:
    """The shards of ``config``'s world: ``shards`` of them, each with its slice of the fleet."""
    if isinstance(shards, bool) or not isinstance(shards, int) or shards < 1:
        raise SplitError(f"the number of shards must be a positive integer, not {shards!r}")
    cameras = [camera_id for camera_id, _ in config.camera_specs()]
    sensors = sum(group.count for group in config.sensors) if publishing else 0
    camera_runs, sensor_runs = runs(len(cameras), shards), runs(sensors, shards)
    specs = []
    for k in range(shards):
        lo, hi = camera_runs[k]
        owned = FleetSlice(cameras=tuple(cameras[lo:hi]), sensors=sensor_runs[k], automation=k == 0)
        specs.append(ShardSpec(k, owned))
    idle = [s.name for s in specs[1:] if not s.slice.cameras and s.slice.sensors[1] <= s.slice.sensors[0]]
    if idle:
        held = f"{len(cameras)} camera{'s' * (len(cameras) != 1)}"
        held += f" and {sensors} published sensors" if publishing else " and publishes no sensors"
        raise SplitError(
            f"the fleet cannot be split into {shards} shards: it has {held}, so {', '.join(idle)} "
            f"would hold nothing (use --shards {max(1, len(cameras), min(shards, sensors))} or fewer"
            + ("" if publishing else ", or publish the sensors with --publish-fleet-to")
            + ")"
        )
    return tuple(specs)
