"""Outbound delivery: a durable outbox whose timing lives on the world clock, and the worker that
performs it.

The world never does network I/O itself. A message for a channel or a payload for a push target
becomes a *job* in the outbox (a document in the store, so nothing accepted is lost across a
restart) with the sim time it is due. When that time comes the job is *ready*; the delivery worker
(:func:`run_worker`, an asyncio task the composition root starts) takes ready jobs and performs each
over its owner's :class:`~twin.automation.transports.Link` (one pooled HTTP client, MQTT session…
per owner, reused across attempts) to where the owner points at that moment (its ``where``; a job
keeps the destination it was queued with only for an owner without one), and reports the outcome
back on the loop thread. An owner whose destination changes calls :meth:`Outbox.retarget`.

A failed attempt is rescheduled with exponential backoff *in sim time* (``backoff_secs *
2**(attempt-1)``, capped at ``max_backoff_secs``, optionally spread by the policy's jitter from the
world's seeded streams) until ``max_retries`` retries are spent. Each owner has a
:class:`~twin.automation.circuit.Circuit`: after consecutive failures its due jobs wait, unattempted,
until a probe after a cool-down of world time gets through. At most :data:`MAX_WAITING` jobs of an
owner wait; beyond that the oldest is given up. Nothing is lost silently: the owner hears about
every attempt and every job given up through its callback, and the outbox counts them per owner.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from hardware.ports.rules import DeliveryResult, DeliveryStats
from twin.automation.circuit import OPEN, Circuit, spread
from twin.automation.transports import Link

if TYPE_CHECKING:
    from twin.engine import Engine

log = logging.getLogger(__name__)

POLL_S = 1.0
"""The worker also looks for a rebuilt world this often when nothing wakes it."""
MAX_WAITING = 1000
"""Jobs of one owner held back by its open circuit; past this the oldest is given up."""

Key = tuple[str, str]
"""A delivery owner: ``(owner kind, owner id)``."""


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_secs: float = 5.0
    max_backoff_secs: float = 300.0
    jitter: float = 0.0
    """Spread each wait by up to ± this fraction."""

    def delay(self, attempts: int, key: int = 0) -> float:
        """Sim seconds to wait after the ``attempts``-th failed attempt; ``key`` picks the spread
        (a job's stream key, so it does not depend on the order jobs fail in)."""
        wait = min(self.backoff_secs * 2 ** (attempts - 1), self.max_backoff_secs)
        return wait * spread(key, attempts, self.jitter) if self.jitter else wait


Report = Callable[[dict[str, Any], DeliveryResult, bool], None]
"""``(job, result, final)``: called after every attempt and for a job given up; ``final`` when no
retry follows."""
Where = Callable[[dict[str, Any]], tuple[str, dict[str, Any]] | None]
"""``job -> (transport, config)`` from its owner's settings now (so a target whose URL was fixed gets
its backlog there); None when the owner is gone, and the job's own, from when it was queued, apply."""


def _key(job: dict[str, Any]) -> Key:
    return job["owner_kind"], job["owner_id"]


class HasOutbox(Protocol):
    """Whatever holds the outbox the worker drains (the world)."""

    @property
    def outbox(self) -> Outbox: ...


@dataclass(slots=True)
class Tally:
    attempts: int = 0
    delivered: int = 0
    failed: int = 0
    dropped: int = 0
    waiting: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Jobs held back by the open circuit, oldest first."""


class Outbox:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.env = world.env
        self.jobs = world.store.collection("outbox")
        self.ready: dict[str, dict[str, Any]] = {}
        self.in_flight: set[str] = set()
        self.owners: dict[str, Report] = {}
        self.wheres: dict[str, Where] = {}
        self.signal = asyncio.Event()
        self.live: dict[str, Key] = {}
        """Pending job id → its owner (the store holds the jobs themselves)."""
        self.circuits: dict[Key, Circuit] = {}
        self.tallies: dict[Key, Tally] = {}
        self.links: dict[Key, Link] = {}
        self.closing: list[Link] = []
        """Links of owners that went away, to be closed by the worker."""
        for job in self.jobs.values():  # pending work of an earlier run
            self.live[job["id"]] = _key(job)
            self._schedule(job)

    def register(self, owner_kind: str, report: Report, where: Where | None = None) -> None:
        self.owners[owner_kind] = report
        if where is not None:
            self.wheres[owner_kind] = where

    @property
    def stale(self) -> bool:
        """The world was rebuilt (reset, restore) since this outbox was made: it must not write."""
        return self.world.env is not self.env

    # World side ------------------------------------------------------------------------------
    def enqueue(
        self,
        owner_kind: str,
        owner_id: str,
        transport: str,
        config: dict[str, Any],
        payload: Any,
        retry: RetryPolicy,
        *,
        ref: str | None = None,
        context: dict[str, Any] | None = None,
        delay: float = 0.0,
    ) -> str:
        """Queue a delivery due ``delay`` sim seconds from now; returns the job id. ``ref`` and
        ``context`` are the owner's (what the job stands for; what its ``where`` needs)."""
        job = {
            "id": str(uuid.UUID(bytes=self.world.streams.get("automation.outbox").bytes(16), version=4)),
            "owner_kind": owner_kind,
            "owner_id": owner_id,
            "ref": ref,
            "context": context,
            "transport": transport,
            "config": config,
            "payload": payload,
            "attempts": 0,
            "retry": [retry.max_retries, retry.backoff_secs, retry.max_backoff_secs, retry.jitter],
            "due": self.world.now() + delay,  # Unix seconds: a pending job keeps its time across runs
        }
        self.jobs.put(job["id"], job)
        self.live[job["id"]] = (owner_kind, owner_id)
        self._schedule(job)
        return job["id"]

    def _schedule(self, job: dict[str, Any]) -> None:
        delay = max(0.0, job["due"] - self.world.now())
        if delay == 0:
            self._ready(job)
            return
        self.env.timeout(delay).callbacks.append(lambda _ev: self._ready(job))

    def _ready(self, job: dict[str, Any]) -> None:
        key = self.live.get(job["id"])
        if key is None:  # cancelled meanwhile
            return
        if not self._circuit(key).admits(job["id"]):
            self._hold(key, job)
            return
        self.ready[job["id"]] = job
        self.signal.set()

    def _circuit(self, key: Key) -> Circuit:
        circuit = self.circuits.get(key)
        if circuit is None:
            stream = self.world.streams.key(f"automation.delivery/{key[0]}/{key[1]}")
            circuit = self.circuits[key] = Circuit(stream)
        return circuit

    def _tally(self, key: Key) -> Tally:
        tally = self.tallies.get(key)
        if tally is None:
            tally = self.tallies[key] = Tally()
        return tally

    def _hold(self, key: Key, job: dict[str, Any]) -> None:
        waiting = self._tally(key).waiting
        waiting[job["id"]] = job
        while len(waiting) > MAX_WAITING:
            self._drop(key, waiting.pop(next(iter(waiting))))

    def _drop(self, key: Key, job: dict[str, Any]) -> None:
        """Give up a job that never got its turn: counted, and reported to its owner as failed."""
        message = f"Dropped: {MAX_WAITING} deliveries were already waiting for an unreachable target"
        self._tally(key).dropped += 1
        self._finish(job, DeliveryResult(False, message, 0, job["attempts"], None, self.world.now()), True)

    def _open(self, key: Key, circuit: Circuit) -> None:
        opened = circuit.opened
        log.info("delivery circuit of %s %s opened (%d failures)", *key, circuit.failures)

        def half_open(_ev: object) -> None:
            if self.circuits.get(key) is not circuit or circuit.state != OPEN or circuit.opened != opened:
                return
            circuit.half_open()
            waiting = self._tally(key).waiting
            if waiting:  # the oldest waiting job is the probe
                self._ready(waiting.pop(next(iter(waiting))))

        self.env.timeout(circuit.cool_down()).callbacks.append(half_open)

    def _release(self, key: Key) -> None:
        """The circuit closed: every waiting job is due now."""
        waiting = self._tally(key).waiting
        jobs = list(waiting.values())
        waiting.clear()
        for job in jobs:
            self._ready(job)

    def retarget(self, owner_kind: str, owner_id: str) -> None:
        """The owner's destination changed: what its circuit learnt is void; waiting jobs are due now."""
        key = (owner_kind, owner_id)
        circuit = self.circuits.get(key)
        if circuit is not None and circuit.succeeded():
            self._release(key)
        elif circuit is not None:
            circuit.failures = 0

    def cancel_owner(self, owner_kind: str, owner_id: str) -> None:
        key = (owner_kind, owner_id)
        cancelled = [j for j, k in self.live.items() if k == key]
        for job_id in cancelled:
            self.jobs.delete(job_id)
            del self.live[job_id]
            self.ready.pop(job_id, None)
        if cancelled:
            log.info("%d undelivered deliveries of %s %s went with it", len(cancelled), *key)
        self.circuits.pop(key, None)
        self.tallies.pop(key, None)
        link = self.links.pop(key, None)
        if link is not None and link.retire() and link.open:
            self.closing.append(link)
            self.signal.set()

    def pending(self, owner_kind: str | None = None) -> int:
        return sum(1 for kind, _ in self.live.values() if owner_kind is None or kind == owner_kind)

    def stats(self, owner_kind: str, owner_ids: list[str]) -> list[DeliveryStats]:
        """The figures of these owners (an owner with no delivery yet has zeros)."""
        pending = Counter(self.live.values())
        out = []
        for owner_id in owner_ids:
            key = (owner_kind, owner_id)
            circuit, tally = self.circuits.get(key), self.tallies.get(key) or Tally()
            out.append(
                DeliveryStats(
                    owner_kind,
                    owner_id,
                    circuit.state if circuit else "closed",
                    circuit.failures if circuit else 0,
                    pending[key],
                    len(tally.waiting),
                    tally.attempts,
                    tally.delivered,
                    tally.failed,
                    tally.dropped,
                )
            )
        return out

    def take(self) -> list[dict[str, Any]]:
        jobs = [j for jid, j in self.ready.items() if jid not in self.in_flight]
        self.in_flight.update(j["id"] for j in jobs)
        self.ready.clear()
        self.signal.clear()
        return jobs

    def report(self, job: dict[str, Any], result: DeliveryResult) -> None:
        """The outcome of one attempt, on the loop thread: retry later on the world clock or finish."""
        self.in_flight.discard(job["id"])
        key = self.live.get(job["id"])
        if key is None or self.stale:  # its owner went away, or the world was rebuilt, meanwhile
            return
        job = {**job, "attempts": job["attempts"] + 1}
        self._tally(key).attempts += 1
        retry = RetryPolicy(*job["retry"])
        result = DeliveryResult(
            result.success,
            result.message,
            result.duration_ms,
            job["attempts"],
            result.status_code,
            self.world.now(),
        )
        circuit = self._circuit(key)
        if result.success and circuit.succeeded():
            log.info("delivery circuit of %s %s closed", *key)
            self._release(key)
        elif not result.success and circuit.failed():
            self._open(key, circuit)
        final = result.success or job["attempts"] > retry.max_retries
        if final:
            self._finish(job, result, True)
            return
        job["due"] = self.world.now() + retry.delay(job["attempts"], self.world.streams.key(job["id"]))
        self.jobs.put(job["id"], job)
        self._schedule(job)
        self._tell(job, result, False)

    def _finish(self, job: dict[str, Any], result: DeliveryResult, final: bool) -> None:
        key = self.live.pop(job["id"])
        self.jobs.delete(job["id"])
        tally = self._tally(key)
        if result.success:
            tally.delivered += 1
        else:
            tally.failed += 1
        self._tell(job, result, final)

    def _tell(self, job: dict[str, Any], result: DeliveryResult, final: bool) -> None:
        owner = self.owners.get(job["owner_kind"])
        if owner is not None:
            owner(job, result, final)

    # Loop side -------------------------------------------------------------------------------
    def link(self, owner_kind: str, owner_id: str) -> Link:
        key = (owner_kind, owner_id)
        link = self.links.get(key)
        if link is None:
            link = self.links[key] = Link(f"{owner_kind}/{owner_id}")
        return link

    async def _attempt(self, job: dict[str, Any]) -> None:
        key = self.live.get(job["id"])
        if key is None or self.stale:  # cancelled after it was taken, or the world was rebuilt
            self.in_flight.discard(job["id"])
            return
        transport, config = self._destination(job)
        result = await self.link(*key).send(transport, config, job["payload"])
        try:
            self.report(job, result)
        except Exception:  # never let one bad report stop the others
            log.exception("delivery report of job %s failed", job["id"])

    def _destination(self, job: dict[str, Any]) -> tuple[str, dict[str, Any]]:
        where = self.wheres.get(job["owner_kind"])
        try:
            now = where(job) if where else None
        except Exception:  # an owner's settings it cannot read: the job's own still hold
            log.exception("where of delivery job %s failed", job["id"])
            now = None
        return now or (job["transport"], job["config"])

    async def send_now(
        self, owner_kind: str, owner_id: str, transport: str, config: dict[str, Any], payload: Any
    ) -> DeliveryResult:
        """One attempt outside the outbox (a test push), over the owner's link. A success closes an
        open circuit: the target is back."""
        result = await self.link(owner_kind, owner_id).send(transport, config, payload)
        key = (owner_kind, owner_id)
        if result.success and not self.stale and key in self.circuits and self.circuits[key].succeeded():
            self._release(key)
        return result

    def dispatch(self) -> list[asyncio.Task[None]]:
        """Start an attempt for every ready job; the worker does not wait for them."""
        return [asyncio.create_task(self._attempt(job)) for job in self.take()]

    async def flush(self) -> int:
        """Perform every ready job once and wait for the outcomes; the number attempted."""
        jobs = self.take()
        await asyncio.gather(*(self._attempt(j) for j in jobs))
        await self.close_retired()
        return len(jobs)

    async def close_retired(self) -> None:
        while self.closing:
            await self.closing.pop().aclose()

    async def aclose(self) -> None:
        """Close every link (the world stops or was rebuilt)."""
        links = [*self.closing, *self.links.values()]
        self.closing.clear()
        self.links.clear()
        for link in links:
            await link.aclose()


async def run_worker(world: Callable[[], HasOutbox]) -> None:
    """The delivery worker: performs ready jobs until cancelled, then closes every link. ``world()``
    is read each round, so the worker follows a world that was reset or restored (and closes the
    links of the one it leaves)."""
    outbox: Outbox | None = None
    attempts: set[asyncio.Task[None]] = set()
    try:
        while True:
            current = world().outbox
            if current is not outbox:
                if outbox is not None:
                    await outbox.aclose()
                outbox = current
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(outbox.signal.wait(), POLL_S)
            try:
                for task in outbox.dispatch():
                    attempts.add(task)
                    task.add_done_callback(attempts.discard)
                await outbox.close_retired()
            except Exception:  # never let one bad round stop every delivery
                log.exception("delivery worker round failed")
    finally:
        for task in attempts:
            task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await asyncio.gather(*attempts, return_exceptions=True)
        if outbox is not None:
            await outbox.aclose()
