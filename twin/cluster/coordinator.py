"""The coordinator of a sharded world: its shards as Ray actors, one clock, their records merged.

``--shards N`` starts an embedded Ray on this machine; ``--cluster ADDRESS`` joins a running Ray
cluster (checked for reachability first: Ray itself waits minutes on an address nobody answers).
Each shard is a :class:`twin.cluster.shard.Shard` in an actor process of its own, spread over the
cluster's nodes; the automation shard goes to a node with the ``automation`` resource when the
cluster has one.

The clock: in step mode :meth:`run_to` is a barrier (every shard runs to the same sim time, the
call returns when all have); in realtime :meth:`follow` sends every shard the same anchor, a
little ahead on the wall clock so that all take it at once.

A shard is dead only when Ray says its process is gone: each shard holds a call open
(:meth:`Shard.until_stopped`) that ends with an error when its actor dies. A shard that is merely
busy (its core saturated) answers late and is waited for, never taken for dead.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import time
from collections.abc import Iterable
from typing import Any

import ray
from ray.exceptions import RayActorError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from twin.clock import Anchor
from twin.cluster.plan import ClusterUnreachable, ShardLost, ShardSpec
from twin.cluster.shard import Shard, ShardRecord, ShardTime
from twin.settings import Settings

log = logging.getLogger("twin")
START_TIMEOUT_S = 300.0
CALL_TIMEOUT_S = 120.0
ANCHOR_LEAD_S = 0.05
"""How far ahead on the wall clock an anchor takes effect: every shard has it by then."""
REACH_TIMEOUT_S = 5.0


class _RayShard(Shard):
    """A shard as a Ray actor: also says which node it runs on."""

    def node(self) -> dict[str, str]:
        ctx = ray.get_runtime_context()
        return {"node_id": ctx.get_node_id(), "node_ip": ray.util.get_node_ip_address()}


def check_reachable(address: str) -> None:
    """``host:port`` answers a TCP connection, or :class:`ClusterUnreachable` says so."""
    host, _, port = address.rpartition(":")
    if not host or not port.isdigit():
        raise ClusterUnreachable(f"--cluster {address!r}: give the head node's HOST:PORT (its GCS port)")
    try:
        with socket.create_connection((host, int(port)), timeout=REACH_TIMEOUT_S):
            pass
    except OSError as err:
        raise ClusterUnreachable(f"--cluster {address}: no Ray head answers there ({err})") from err


class Coordinator:
    def __init__(
        self,
        settings: Settings,
        specs: Iterable[ShardSpec],
        owners: dict[str, str],
        *,
        address: str | None = None,
        trace: bool = False,
    ) -> None:
        self.settings = settings
        self.specs = tuple(specs)
        self.owners = owners
        self.address = address
        self.trace = trace
        self.actors: dict[str, Any] = {}
        self.info: dict[str, dict[str, Any]] = {}
        """What each shard said at start (its listeners' URLs, pid, host, node), by shard name."""
        self._watch: dict[Any, str] = {}
        self.lost: dict[str, str] = {}
        """Each shard whose process is gone, and what was said of it (later calls leave it out)."""
        self._ours = False
        self.anchor: Anchor | None = None
        self.barrier_s: list[float] = []
        """Wall seconds each barrier took (the bench reads them)."""
        self.wall_now = time.time()
        """This run's start on the wall clock: every shard resolves a scenario's ``epoch: now`` to it."""

    # Life ------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Join or start Ray, start every shard and wait until all serve; :class:`ShardLost` if one
        fails to start (the others are stopped)."""
        if self.address is not None:
            check_reachable(self.address)
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"log_to_driver": False, "configure_logging": False}
            if self.address is None:
                kwargs |= {"include_dashboard": False, "num_cpus": max(1, len(self.specs))}
            address = self.address or "local"  # never a cluster that happens to run here
            try:
                ray.init(address=address, namespace=f"twin-{socket.gethostname()}-{id(self):x}", **kwargs)
            except ConnectionError as err:
                raise ClusterUnreachable(
                    f"--cluster {address}: Ray refused the connection ({err}); a cluster with token "
                    "authentication needs RAY_AUTH_MODE=token and its token (RAY_AUTH_TOKEN, or "
                    "~/.ray/auth_token) in this environment"
                ) from err
            self._ours = True
        automation = "automation" in ray.cluster_resources()
        nodes = _nodes()
        actor = ray.remote(_RayShard)
        for k, spec in enumerate(self.specs):
            options: dict[str, Any] = {"name": spec.name, "num_cpus": 0, "max_restarts": 0}
            if spec.slice.automation and automation:
                options["resources"] = {"automation": 0.001}
            else:  # round the nodes, the head first (shard k on node k mod n)
                node = nodes[k % len(nodes)]
                options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node, soft=False)
            self.actors[spec.name] = actor.options(**options).remote(
                self.settings, spec, self.owners, trace=self.trace, wall_now=self.wall_now
            )
        try:
            started = self._all({name: a.start.remote() for name, a in self.actors.items()}, START_TIMEOUT_S)
            where = self._all({name: a.node.remote() for name, a in self.actors.items()}, CALL_TIMEOUT_S)
        except BaseException:
            self.shutdown()
            raise
        for name in self.actors:
            self.info[name] = started[name] | where[name]
        self._watch = {a.until_stopped.remote(): name for name, a in self.actors.items()}

    def shutdown(self) -> None:
        """Stop every shard that still runs, then Ray if this coordinator started it."""
        if not ray.is_initialized():
            return
        stops = [a.stop.remote() for a in self.actors.values()]
        if stops:
            ray.wait(stops, num_returns=len(stops), timeout=30)
        for a in self.actors.values():
            with contextlib.suppress(Exception):  # already gone
                ray.kill(a)
        self.actors.clear()
        if self._ours:
            ray.shutdown()

    def forget(self, name: str) -> None:
        """Leave a shard that is gone out of every later call (``twin run`` serves on without it)."""
        self._watch = {ref: n for ref, n in self._watch.items() if n != name}
        self.actors.pop(name, None)

    def _lose(self, lost: ShardLost) -> ShardLost:
        if lost.shard not in self.lost:
            self.lost[lost.shard] = str(lost)
            log.error("twin: %s", lost)
        self.forget(lost.shard)
        return lost

    def check(self) -> None:
        """:class:`ShardLost` naming a shard whose process is gone (never for a slow one)."""
        if not self._watch:
            return
        done, _ = ray.wait(list(self._watch), num_returns=len(self._watch), timeout=0)
        for ref in done:
            name = self._watch[ref]
            self._all({name: ref})  # a process that died raises here, named
            raise self._lose(ShardLost(name, "it stopped"))

    # Calls -----------------------------------------------------------------------------------------
    def call(self, shard: str, method: str, *args: Any, **kwargs: Any) -> Any:
        """``method`` on one shard, its result (the shard's own errors are raised here)."""
        return self._all({shard: getattr(self.actors[shard], method).remote(*args, **kwargs)})[shard]

    def broadcast(self, method: str, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """``method`` on every shard at once, the results by shard name."""
        refs = {name: getattr(a, method).remote(*args, **kwargs) for name, a in self.actors.items()}
        return self._all(refs)

    def _all(self, refs: dict[str, Any], timeout: float = CALL_TIMEOUT_S) -> dict[str, Any]:
        out = {}
        for name, ref in refs.items():
            try:
                out[name] = ray.get(ref, timeout=timeout)
            except RayActorError as err:
                raise self._lose(ShardLost(name, _why(err))) from err
        return out

    # The clock -------------------------------------------------------------------------------------
    def run_to(self, sim_time: float) -> list[ShardTime]:
        """The barrier: every shard runs to ``sim_time``; returns when all have."""
        t0 = time.perf_counter()
        times = list(self.broadcast("run_to", sim_time).values())
        self.barrier_s.append(time.perf_counter() - t0)
        return times

    def follow(self, *, speed: float, paused: bool, sim_at: float | None = None) -> Anchor:
        """Realtime: every shard on one anchor from a little ahead on the wall clock, at ``sim_at``
        then, or (``None``) where the current anchor has the world at that instant."""
        self.anchor = anchor_after(self.anchor, time.time() + ANCHOR_LEAD_S, speed, paused, sim_at)
        self.broadcast("follow", self.anchor)
        return self.anchor

    def times(self) -> list[ShardTime]:
        return list(self.broadcast("time").values())

    def records(self) -> list[ShardRecord]:
        return list(self.broadcast("record").values())


def anchor_after(
    current: Anchor | None, wall_at: float, speed: float, paused: bool, sim_at: float | None
) -> Anchor:
    """The anchor that takes over at ``wall_at``: from ``sim_at``, else from where ``current`` is then."""
    if sim_at is None:
        if current is None:
            raise ValueError("an anchor that continues needs one to continue from")
        sim_at = current.sim_time(wall_at)
    return Anchor(sim_at, wall_at, speed, paused)


def _nodes() -> list[str]:
    """The cluster's live nodes' ids, the head's first."""
    alive = [n for n in ray.nodes() if n.get("Alive")]
    alive.sort(key=lambda n: ("node:__internal_head__" not in n.get("Resources", {}), n["NodeID"]))
    return [n["NodeID"] for n in alive]


def _why(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    first = next((line for line in text if "died" in line or "exited" in line or "killed" in line), None)
    return (first or (text[0] if text else type(err).__name__)).strip()[:300]
