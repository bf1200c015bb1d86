"""The soak's clients (:mod:`bench.soak`): the request mix over both APIs, the event-stream
subscribers, the fault rotation over the control plane, and the tally that tells errors a fault
explains from the others."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import random
import sys
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import httpx
from websockets.asyncio.client import connect as ws_connect

from bench import servers

ADMIN = {"username": "admin", "password": "soak-pass-123"}
GATEWAY_LOGIN = {"username": "admin", "password": "password"}
DEVICES = tuple(f"env_sensor-000{i}" for i in range(1, 6))
CAMERA = "cam-01"
TIMEOUT_S = 30.0  # generous: the machine may be shared; a slower answer is not an error
KEEPALIVE_S = 2.0
"""An idle pooled connection is reused for at most this long: well inside the server's keep-alive
(uvicorn's 5 s), so a request never goes out on a connection the server is closing (which the
client would read as a reset that no fault injected)."""
LIVE_OBJECTS = 3  # dashboards, messages, rules the load keeps alive at a time (then deletes the oldest)


# Faults ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Fault:
    """One entry of the rotation: control-plane calls to switch it on (and off after ``lasts`` s),
    and the errors it explains on ``server``: ``kinds`` within ``lasts`` (+ grace), at most
    ``budget`` of them when it injects a counted number."""

    name: str
    server: str  # "automation" or "gateway"
    on: tuple[tuple[str, str, dict | None], ...]
    off: tuple[tuple[str, str, dict | None], ...] = ()
    lasts: float = 20.0
    kinds: frozenset[str] = frozenset()
    budget: int | None = None


def _action(name: str, params: dict, lasts: float | None = None) -> tuple[str, str, dict]:
    body: dict = {"params": params}
    if lasts is not None:
        body["for"] = lasts
    return ("POST", f"/actions/{name}", body)


LATENCY = {"seconds": 0.3, "path_prefix": "/api/devices", "jitter": 0.1}
MSG = "/api/messages"
FAULTS: tuple[Fault, ...] = (
    Fault(
        "latency automation /api/devices 0.3 s ± 0.1",
        "automation",
        (("POST", "/faults/automation/latency", LATENCY),),
        (("DELETE", "/faults/automation", None),),
    ),
    Fault(
        "rate-limit storm 120/min",
        "automation",
        (("POST", "/ratelimit/automation/storm", {"limit": 120, "seconds": 20}),),
        (("DELETE", "/ratelimit/automation/storm", None),),
        kinds=frozenset({"429"}),
    ),
    Fault(
        "503 burst on the gateway (30 requests)",
        "gateway",
        (_action("http_errors", {"server": CAMERA, "status": 503, "count": 30}),),
        lasts=55,
        kinds=frozenset({"503"}),
        budget=30,
    ),
    Fault(
        "reset the next 5 automation connections",
        "automation",
        (_action("network_reset", {"server": "automation", "count": 5}),),
        lasts=55,
        kinds=frozenset({"transport"}),
        budget=5,
    ),
    Fault(
        "latency gateway 0.2 s ± 0.1 (action, undone after 20 s)",
        "gateway",
        (_action("latency", {"server": CAMERA, "seconds": 0.2, "jitter": 0.1}, lasts=20),),
    ),
    Fault(
        "truncate the next 5 gateway bodies",
        "gateway",
        (_action("truncated_body", {"server": CAMERA, "count": 5}),),
        lasts=55,
        kinds=frozenset({"transport"}),
        budget=5,
    ),
    Fault(
        "drop the automation event streams",
        "automation",
        (_action("drop_streams", {"server": "automation"}),),
        lasts=5,
        kinds=frozenset({"stream"}),
    ),
    Fault(
        "502 burst on /api/messages (20 requests)",
        "automation",
        (_action("http_errors", {"server": "automation", "status": 502, "count": 20, "path_prefix": MSG}),),
        lasts=55,
        kinds=frozenset({"502"}),
        budget=20,
    ),
    Fault(
        "automation sessions end (token expiry)",
        "automation",
        (_action("token_expiry", {"server": "automation"}),),
        lasts=5,
        kinds=frozenset({"401", "stream"}),
    ),
    Fault(
        "gateway sessions dropped",
        "gateway",
        (_action("session_drop", {"camera": CAMERA}),),
        lasts=5,
        kinds=frozenset({"401"}),
    ),
)  # fmt: skip

GRACE_S = 3.0  # a request sent just before a fault ended may still meet it


@dataclass
class Window:
    fault: Fault
    start: float
    end: float
    left: int | None

    def explains(self, server: str, kind: str, sent: float, now: float) -> bool:
        if server != self.fault.server or kind not in self.fault.kinds:
            return False
        if now < self.start or sent > self.end + GRACE_S:
            return False
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True


# Tally -------------------------------------------------------------------------------------------
@dataclass
class Tally:
    requests: int = 0
    shed: int = 0
    latencies: list[float] = field(default_factory=list)
    expected: Counter[str] = field(default_factory=Counter)
    unexpected: Counter[str] = field(default_factory=Counter)
    samples: list[str] = field(default_factory=list)
    stream_sessions: int = 0
    stream_events: int = 0
    windows: list[Window] = field(default_factory=list)

    def error(self, server: str, kind: str, what: str, sent: float) -> None:
        now = time.monotonic()
        for window in reversed(self.windows):
            if window.explains(server, kind, sent, now):
                self.expected[f"{server} {kind} ({window.fault.name})"] += 1
                return
        self.unexpected[f"{server} {kind}"] += 1
        if len(self.samples) < 20:
            self.samples.append(f"{time.strftime('%H:%M:%S')} {server} {kind}: {what}"[:300])


# Clients -----------------------------------------------------------------------------------------
class Session:
    """One API's HTTP client with its current token; a 401 leads to one fresh login (not one per
    request that met it)."""

    def __init__(self, name: str, base: str, login: Callable[[httpx.AsyncClient], Awaitable[str]]) -> None:
        self.name = name
        limits = httpx.Limits(max_connections=64, keepalive_expiry=KEEPALIVE_S)
        self.http = httpx.AsyncClient(base_url=base, timeout=TIMEOUT_S, limits=limits)
        self._login = login
        self.token = ""
        self._lock = asyncio.Lock()

    async def login(self, stale: str | None = None) -> None:
        async with self._lock:
            if stale is None or stale == self.token:
                self.token = await self._login(self.http)

    def headers(self) -> dict[str, str]:
        return {"Authorization": self.token if self.name == "gateway" else f"Bearer {self.token}"}


async def automation_login(http: httpx.AsyncClient) -> str:
    """The admin made with ``POST /api/setup/initialize`` before the load, logging in again."""
    resp = await http.post("/api/auth/login", json=ADMIN)
    resp.raise_for_status()
    return resp.json()["token"]


async def gateway_login(http: httpx.AsyncClient) -> str:
    resp = await http.post("/api/login", json=GATEWAY_LOGIN)
    resp.raise_for_status()
    return resp.json()["data"]["token"]


Call = tuple[str, str, dict | None]  # method, path, JSON body


class Load:
    """The request mix. Each pick is one HTTP request; create/delete pairs keep a few objects live."""

    def __init__(self, automation: Session, gateway: Session, tally: Tally, seed: int) -> None:
        self.automation = automation
        self.gateway = gateway
        self.tally = tally
        self.rng = random.Random(seed)
        self.live: dict[str, list[str]] = {"dashboards": [], "messages": [], "rules": []}
        auto = [
            (6, self._reads),
            (3, self._telemetry),
            (2, self._push_metric),
            (2, lambda: self._churn("dashboards")),
            (2, lambda: self._churn("messages")),
            (1, lambda: self._churn("rules")),
            (0.05, lambda: ("relogin", "", None)),
        ]
        gate = [
            (8, self._gateway_reads),
            (1, lambda: ("PUT", "/api/v1/media/image", {"brightness": self.rng.randint(0, 100)})),
            (1, lambda: ("PUT", "/api/v1/system/time/timezone", {"timezone": self.rng.choice(ZONES)})),
            (0.05, lambda: ("relogin", "", None)),
        ]
        self.mix = [(w, self.automation, f) for w, f in auto] + [(w, self.gateway, f) for w, f in gate]
        self.weights = [w for w, _, _ in self.mix]

    def pick(self) -> tuple[Session, Call]:
        _, session, make = self.rng.choices(self.mix, self.weights)[0]
        return session, make()

    def _device(self) -> str:
        return self.rng.choice(DEVICES)

    def _reads(self) -> Call:
        d = self._device()
        paths = [
            "/api/devices?limit=20",
            f"/api/devices/{d}",
            f"/api/devices/{d}/current",
            "/api/rules",
            "/api/messages?limit=10",
            "/api/dashboards",
            f"/api/devices/{d}/telemetry/summary",
        ]
        return ("GET", self.rng.choice(paths), None)

    def _telemetry(self) -> Call:
        d, metric = self._device(), self.rng.choice(("temperature", "humidity", "battery"))
        if self.rng.random() < 0.5:
            return ("GET", f"/api/devices/{d}/telemetry?metric={metric}&limit=200", None)
        return ("GET", f"/api/telemetry?source=device:{d}&metric={metric}", None)

    def _push_metric(self) -> Call:
        body = {"metric": "temperature", "value": round(self.rng.uniform(15, 30), 2)}
        return ("POST", f"/api/devices/{self._device()}/metrics", body)

    def _churn(self, kind: str) -> Call:
        live = self.live[kind]
        if len(live) >= LIVE_OBJECTS:
            return ("DELETE", f"/api/{kind}/{live.pop(0)}", None)
        return ("POST", f"/api/{kind}", NEW[kind])

    def _gateway_reads(self) -> Call:
        paths = [
            "/api/v1/system/info",
            "/api/v1/system/stats",
            "/api/v1/system/health",
            "/api/v1/system/time",
            "/api/v1/media/status",
            "/api/v1/media/config",
            "/api/v1/media/image",
            "/api/v1/media/osd",
            "/api/v1/apps",
        ]
        return ("GET", self.rng.choice(paths), None)

    async def send(self, session: Session, call: Call) -> None:
        method, path, body = call
        if method == "relogin":
            await relogin(session, self.tally)
            return
        token = session.token
        sent = time.monotonic()
        self.tally.requests += 1
        try:
            resp = await session.http.request(method, path, json=body, headers=session.headers())
        except httpx.TimeoutException as err:
            self.tally.error(session.name, "timeout", f"{method} {path}: {err!r}", sent)
            return
        except httpx.TransportError as err:
            self.tally.error(session.name, "transport", f"{method} {path}: {err!r}", sent)
            return
        self.tally.latencies.append(time.monotonic() - sent)
        if resp.status_code == 200:
            if method == "POST" and path.startswith(("/api/dashboards", "/api/messages", "/api/rules")):
                data = resp.json()["data"]
                self.live[path.split("/")[2]].append(data["rule"]["id"] if "rule" in data else data["id"])
            return
        self.tally.error(session.name, str(resp.status_code), f"{method} {path}: {resp.text[:160]}", sent)
        if resp.status_code == 401:
            await relogin(session, self.tally, stale=token)


async def relogin(session: Session, tally: Tally, stale: str | None = None) -> None:
    """A fresh login, counted as a request; a failure is an error like any other (the old token stays)."""
    sent = time.monotonic()
    tally.requests += 1
    try:
        await session.login(stale)
    except httpx.HTTPStatusError as err:
        tally.error(session.name, str(err.response.status_code), f"login: {err.response.text[:160]}", sent)
    except httpx.TimeoutException as err:
        tally.error(session.name, "timeout", f"login: {err!r}", sent)
    except httpx.TransportError as err:
        tally.error(session.name, "transport", f"login: {err!r}", sent)


ZONES = ("UTC", "Europe/Berlin", "Asia/Shanghai", "America/New_York")
NEW: dict[str, dict] = {
    "dashboards": {"name": "soak", "layout": {"columns": 24}, "components": []},
    "messages": {"category": "alert", "severity": "info", "title": "soak", "message": "soak message"},
    "rules": {
        "name": "soak",
        "trigger": {"trigger_type": "data_change"},
        "condition": {
            "condition_type": "comparison",
            "source": "device:env_sensor-0001:humidity",
            "operator": "less_than",
            "threshold": -1000,
        },
        "actions": [],
        "cooldown": 0,
    },
}


# Streams -----------------------------------------------------------------------------------------
async def ws_subscriber(port: int, auto: Session, tally: Tally, rng: random.Random, deadline: float) -> None:
    """Connect, authenticate, read events (answering pings) for 5-15 s, leave; again until the end."""
    url = f"ws://{servers.HOST}:{port}/api/events/ws"
    while time.monotonic() < deadline:
        sent, stay = time.monotonic(), rng.uniform(5, 15)
        try:
            async with ws_connect(url, open_timeout=TIMEOUT_S, ping_interval=None) as ws:
                token = auto.token
                await ws.send(json.dumps({"type": "Auth", "token": token}))
                reply = str(await asyncio.wait_for(ws.recv(), TIMEOUT_S))
                if "Authenticated" not in reply:
                    tally.error("automation", "stream", f"WS auth refused: {reply[:120]}", sent)
                    await relogin(auto, tally, stale=token)
                else:
                    tally.stream_sessions += 1
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(stay):
                            async for frame in ws:
                                text = frame if isinstance(frame, str) else frame.decode()
                                if text.startswith('{"type":"ping"') or text.startswith('{"type": "ping"'):
                                    await ws.send('{"type":"pong"}')
                                else:
                                    tally.stream_events += 1
                            tally.error("automation", "stream", f"WS closed by server: {ws.close_code}", sent)
        except Exception as err:  # every failure of a stream session is counted
            tally.error("automation", "stream", f"WS: {err!r}", sent)
        await asyncio.sleep(rng.uniform(0.5, 2))


async def sse_subscriber(auto: Session, tally: Tally, rng: random.Random, deadline: float) -> None:
    """Open the SSE stream, read events for 5-15 s, leave; again until the end."""
    while time.monotonic() < deadline:
        sent, stay = time.monotonic(), rng.uniform(5, 15)
        try:
            token = auto.token
            path = f"/api/events/stream?token={token}"
            async with auto.http.stream("GET", path, timeout=httpx.Timeout(TIMEOUT_S, read=30)) as resp:
                if resp.status_code != 200:
                    tally.error("automation", "stream", f"SSE answered {resp.status_code}", sent)
                    if resp.status_code == 401:
                        await relogin(auto, tally, stale=token)
                else:
                    tally.stream_sessions += 1
                    with contextlib.suppress(TimeoutError):
                        async with asyncio.timeout(stay):
                            async for line in resp.aiter_lines():
                                tally.stream_events += line.startswith("event:")
                            tally.error("automation", "stream", "SSE ended by server", sent)
        except (httpx.HTTPError, OSError) as err:
            tally.error("automation", "stream", f"SSE: {err!r}", sent)
        await asyncio.sleep(rng.uniform(0.5, 2))


# Faults over the control plane ---------------------------------------------------------------------
async def control_call(control: httpx.AsyncClient, call: Call) -> None:
    method, path, body = call
    resp = await control.request(method, path, json=body)
    if resp.status_code != 200:
        raise servers.ServerError(f"control plane: {method} {path} answered {resp.status_code}: {resp.text}")


async def fault_driver(control: httpx.AsyncClient, tally: Tally, every: float, deadline: float) -> None:
    """Switch the next fault on every ``every`` seconds (the first after half of that), off when it lasts."""
    at = time.monotonic() + every / 2
    for n in itertools.count():
        if at + every / 2 > deadline:
            return
        await asyncio.sleep(max(0.0, at - time.monotonic()))
        fault = FAULTS[n % len(FAULTS)]
        start = time.monotonic()
        tally.windows.append(Window(fault, start, start + fault.lasts, fault.budget))
        print(f"  {time.strftime('%H:%M:%S')} fault on: {fault.name}", file=sys.stderr)
        for call in fault.on:
            await control_call(control, call)
        if fault.off:
            await asyncio.sleep(fault.lasts)
            for call in fault.off:
                await control_call(control, call)
        at += every
