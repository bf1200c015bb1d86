"""Outbound delivery: a durable outbox whose timing lives on the world clock, and real senders.

The world never does network I/O itself. A message for a channel or a payload for a push target
becomes a *job* in the outbox (a document in the store, so nothing accepted is lost across a
restart) with the sim time it is due. When that time comes the job is *ready*; the delivery worker
(:func:`run_worker`, an asyncio task the composition root starts) takes ready jobs, performs the
real HTTP POST, SMTP session or MQTT publish, and reports the outcome back on the loop thread
between clock slices. A failed attempt is rescheduled with exponential backoff *in sim time*
(``backoff_secs * 2**(attempt-1)``, capped at ``max_backoff_secs``) until ``max_retries`` retries
are spent. Owners (channels, push targets) hear about every attempt through a callback.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import smtplib
import ssl
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from email.message import EmailMessage
from typing import TYPE_CHECKING, Any, Protocol

import httpx
from amqtt.client import MQTTClient

from hardware.ports.rules import DeliveryResult

if TYPE_CHECKING:
    from twin.engine import Engine

log = logging.getLogger(__name__)

SEND_TIMEOUT_S = 10.0
"""Wall-clock limit of one attempt (a far end that hangs must not hold the worker)."""
RESPONSE_PREVIEW = 500
POLL_S = 0.2
BOT_TOKEN = re.compile(r"/bot[^/\s]+/")


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_secs: float = 5.0
    max_backoff_secs: float = 300.0

    def delay(self, attempts: int) -> float:
        """Sim seconds to wait after the ``attempts``-th failed attempt."""
        return min(self.backoff_secs * 2 ** (attempts - 1), self.max_backoff_secs)


Report = Callable[[dict[str, Any], DeliveryResult, bool], None]
"""``(job, result, final)``: called after every attempt; ``final`` when no retry follows."""


class HasOutbox(Protocol):
    """Whatever holds the outbox the worker drains (the world)."""

    @property
    def outbox(self) -> Outbox: ...


class Outbox:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.jobs = world.store.collection("outbox")
        self.ready: dict[str, dict[str, Any]] = {}
        self.in_flight: set[str] = set()
        self.owners: dict[str, Report] = {}
        self.signal = asyncio.Event()
        self.delivered = 0
        self.failed_attempts = 0
        self.live: dict[str, str] = {}
        """Pending job id → its owner kind (the store holds the jobs themselves)."""
        for job in self.jobs.values():  # pending work of an earlier run
            self.live[job["id"]] = job["owner_kind"]
            self._schedule(job)

    def register(self, owner_kind: str, report: Report) -> None:
        self.owners[owner_kind] = report

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
        delay: float = 0.0,
    ) -> str:
        """Queue a delivery due ``delay`` sim seconds from now; returns the job id."""
        job = {
            "id": str(uuid.UUID(bytes=self.world.streams.get("automation.outbox").bytes(16), version=4)),
            "owner_kind": owner_kind,
            "owner_id": owner_id,
            "ref": ref,
            "transport": transport,
            "config": config,
            "payload": payload,
            "attempts": 0,
            "retry": [retry.max_retries, retry.backoff_secs, retry.max_backoff_secs],
            "due": self.world.now() + delay,  # Unix seconds: a pending job keeps its time across runs
        }
        self.jobs.put(job["id"], job)
        self.live[job["id"]] = owner_kind
        self._schedule(job)
        return job["id"]

    def _schedule(self, job: dict[str, Any]) -> None:
        delay = max(0.0, job["due"] - self.world.now())
        if delay == 0:
            self._ready(job)
            return
        self.world.env.timeout(delay).callbacks.append(lambda _ev, j=job: self._ready(j))

    def _ready(self, job: dict[str, Any]) -> None:
        if job["id"] not in self.live:  # cancelled meanwhile
            return
        self.ready[job["id"]] = job
        self.signal.set()

    def cancel_owner(self, owner_kind: str, owner_id: str) -> None:
        for job in self.jobs.values():
            if job["owner_kind"] == owner_kind and job["owner_id"] == owner_id:
                self.jobs.delete(job["id"])
                self.live.pop(job["id"], None)
                self.ready.pop(job["id"], None)

    def pending(self, owner_kind: str | None = None) -> int:
        return sum(1 for kind in self.live.values() if owner_kind is None or kind == owner_kind)

    def take(self) -> list[dict[str, Any]]:
        jobs = [j for jid, j in self.ready.items() if jid not in self.in_flight]
        self.in_flight.update(j["id"] for j in jobs)
        self.ready.clear()
        self.signal.clear()
        return jobs

    def report(self, job: dict[str, Any], result: DeliveryResult) -> None:
        """The outcome of one attempt, on the loop thread: retry later on the world clock or finish."""
        self.in_flight.discard(job["id"])
        if job["id"] not in self.live:  # its owner went away meanwhile
            return
        job = {**job, "attempts": job["attempts"] + 1}
        retry = RetryPolicy(*job["retry"])
        result = DeliveryResult(
            result.success,
            result.message,
            result.duration_ms,
            job["attempts"],
            result.status_code,
            self.world.now(),
        )
        final = result.success or job["attempts"] > retry.max_retries
        if result.success:
            self.delivered += 1
        else:
            self.failed_attempts += 1
        if final:
            self.jobs.delete(job["id"])
            del self.live[job["id"]]
        else:
            job["due"] = self.world.now() + retry.delay(job["attempts"])
            self.jobs.put(job["id"], job)
            self._schedule(job)
        owner = self.owners.get(job["owner_kind"])
        if owner is not None:
            owner(job, result, final)

    # Loop side -------------------------------------------------------------------------------
    async def flush(self) -> int:
        """Perform every ready job once (concurrently); the number attempted."""
        jobs = self.take()
        if not jobs:
            return 0
        results = await asyncio.gather(*(send(j["transport"], j["config"], j["payload"]) for j in jobs))
        for job, result in zip(jobs, results, strict=True):
            self.report(job, result)
        return len(jobs)


async def run_worker(world: Callable[[], HasOutbox]) -> None:
    """The delivery worker: performs ready jobs until cancelled. ``world()`` is read each round, so
    the worker follows a world that was reset or restored."""
    while True:
        outbox = world().outbox
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(outbox.signal.wait(), POLL_S)
        try:
            await world().outbox.flush()
        except asyncio.CancelledError:
            raise
        except Exception:  # never let one bad job stop every delivery
            log.exception("delivery worker round failed")


# Senders ----------------------------------------------------------------------------------------
def _payload_bytes(payload: Any) -> bytes:
    if isinstance(payload, str):
        return payload.encode()
    return json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()


async def send(transport: str, config: dict[str, Any], payload: Any) -> DeliveryResult:
    """One real attempt. Never raises: failures come back as an unsuccessful result."""
    started = time.monotonic()
    try:
        if transport == "http":
            ok, message, status = await _post(config, payload)
        elif transport == "smtp":
            await asyncio.wait_for(asyncio.to_thread(_smtp, config, payload), SEND_TIMEOUT_S)
            ok, message, status = True, "sent", None
        elif transport == "mqtt":
            await asyncio.wait_for(_mqtt(config, payload), SEND_TIMEOUT_S)
            ok, message, status = True, "published", None
        else:
            ok, message, status = False, f"unknown transport {transport}", None
    except asyncio.CancelledError:
        raise
    except Exception as err:  # the far end failed: a result, not a crash
        ok, message, status = False, f"{type(err).__name__}: {err}" if str(err) else type(err).__name__, None
    message = BOT_TOKEN.sub("/bot***/", message)  # a chat token in a URL never reaches a client or a log
    return DeliveryResult(ok, message, round((time.monotonic() - started) * 1000), status_code=status)


async def _post(config: dict[str, Any], payload: Any) -> tuple[bool, str, int]:
    headers = {
        "Content-Type": "application/json",
        **{str(k): str(v) for k, v in config.get("headers", {}).items()},
    }
    method = str(config.get("method", "POST")).upper()
    async with httpx.AsyncClient(timeout=SEND_TIMEOUT_S, follow_redirects=False) as client:
        resp = await client.request(method, config["url"], content=_payload_bytes(payload), headers=headers)
    text = resp.text[:RESPONSE_PREVIEW]
    if 200 <= resp.status_code < 300:
        return True, text, resp.status_code
    return False, f"HTTP {resp.status_code}: {text}", resp.status_code


def _smtp(config: dict[str, Any], payload: dict[str, Any]) -> None:
    mail = EmailMessage()
    mail["From"] = config.get("from_address") or config.get("username") or "twin@localhost"
    mail["To"] = ", ".join(payload["recipients"])
    mail["Subject"] = payload["subject"]
    mail.set_content(payload["body"])
    host, port = config["smtp_server"], int(config.get("smtp_port", 25))
    if config.get("use_ssl"):
        conn: smtplib.SMTP = smtplib.SMTP_SSL(
            host, port, timeout=SEND_TIMEOUT_S, context=ssl.create_default_context()
        )
    else:
        conn = smtplib.SMTP(host, port, timeout=SEND_TIMEOUT_S)
    with conn:
        if config.get("use_tls") and not config.get("use_ssl"):
            conn.starttls(context=ssl.create_default_context())
        if config.get("username") and config.get("password"):
            conn.login(config["username"], config["password"])
        conn.send_message(mail)


async def _mqtt(config: dict[str, Any], payload: Any) -> None:
    url = (
        config.get("broker_url")
        or f"mqtt://{config.get('host', '127.0.0.1')}:{int(config.get('port', 1883))}"
    )
    client = MQTTClient(client_id=f"twin-push-{uuid.uuid4().hex[:8]}", config={"auto_reconnect": False})
    await client.connect(url)
    try:
        await client.publish(config["topic"], _payload_bytes(payload), qos=int(config.get("qos", 0)))
    finally:
        with contextlib.suppress(Exception):
            await client.disconnect()
