"""kill -9 at random points: `twin run` on a state dir takes a seeded random mix of writes on both
APIs, is killed with SIGKILL (with one more write in flight) a few times, and after every restart
each acknowledged write is there and every list endpoint answers 200 as it did on the fresh twin.

A write is acknowledged when its 2xx answer came back; the one in flight at the kill may or may not
have landed, so what it touches is not checked until a later write sets it again. The seed makes a
failure reproducible: the same writes in the same order, the kill after the same write.
"""

from __future__ import annotations

import contextlib
import os
import random
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from api.automation.catalogue import WS, vendor_routes
from api.gateway.catalogue import device_routes
from tests.conftest import SCENARIOS, _client, admin_token
from twin.serve import build
from twin.settings import Settings

pytestmark = pytest.mark.socket

SEED = 20261125
ROUNDS = 3
WRITES_PER_ROUND = (8, 24)
OPERATOR_KEY = "nmk_" + "5e" * 16
"""Seeded with ``NEOMIND_API_KEY``: only an API key may manage API keys."""
OPERATOR = {"X-API-Key": OPERATOR_KEY}
PASSWORD = "abc12345"
FLAGS = [
    "--host", "127.0.0.1", "--port", "0", "--control-port", "0", "--mqtt-port", "0", "--rtsp-port", "0",
    "--gateway-addressing", "port", "--gateway-http-port", "0", "--gateway-https-port", "0",
]  # fmt: skip
TIMEZONES = ("UTC", "Asia/Tokyo", "Asia/Shanghai", "Europe/Paris", "America/New_York", "Australia/Sydney")
SENSOR = "env_sensor-0001"


def device_body(name: str) -> dict:
    return {"device_type": "env_sensor", "name": name, "adapter_type": "webhook", "connection_config": {}}


def dashboard_body(name: str) -> dict:
    return {"name": name, "layout": {"columns": 24}, "components": []}


def rule_body(name: str, threshold: int) -> dict:
    condition = {"condition_type": "comparison", "source": f"device:{SENSOR}:humidity"}
    condition |= {"operator": "less_than", "threshold": threshold}
    return {"name": name, "trigger": {"trigger_type": "data_change"}, "condition": condition, "actions": []}


def message_body(title: str, severity: str) -> dict:
    return {"category": "alert", "severity": severity, "title": title, "message": "kill test"}


# The process ------------------------------------------------------------------------------------
@dataclass
class Running:
    proc: subprocess.Popen
    automation: httpx.Client
    gateway: httpx.Client
    output: list[str]

    def client(self, api: str) -> httpx.Client:
        return self.automation if api == "automation" else self.gateway

    def stop(self, sig: signal.Signals) -> None:
        try:
            self.proc.send_signal(sig)
            self.proc.wait(15)
        finally:
            self.automation.close()
            self.gateway.close()


def launch(state: Path) -> Running:
    """`twin run` on ``state``; its URLs read from the start banner, its output drained after."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "twin.cli", "run", "--scenario", str(SCENARIOS / "test.yaml"), *FLAGS,
         "--state-dir", str(state)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "NEOMIND_API_KEY": OPERATOR_KEY},
    )  # fmt: skip
    assert proc.stdout is not None
    lines: list[str] = []
    urls: dict[str, str] = {}
    for line in proc.stdout:
        lines.append(line)
        if match := re.search(r"automation API\s+(http://\S+)/api", line):
            urls["automation"] = match.group(1)
        if match := re.search(r"cam-01 gateway\s+(http://\S+)", line):
            urls["gateway"] = match.group(1)
        if len(urls) == 2:
            break
    if len(urls) < 2:
        proc.kill()
        raise AssertionError("twin did not start:\n" + "".join(lines))
    threading.Thread(target=lambda: lines.extend(proc.stdout or ()), daemon=True).start()
    return Running(
        proc,
        httpx.Client(base_url=urls["automation"], timeout=15),
        httpx.Client(base_url=urls["gateway"], timeout=15),
        lines,
    )


def sign_in(run: Running, *, first: bool) -> None:
    """The automation admin (created on the first launch) by JWT, and a gateway session."""
    auto = run.automation
    if first:
        resp = auto.post("/api/setup/initialize", json={"username": "admin", "password": PASSWORD})
        assert resp.status_code == 200, resp.text
    login = auto.post("/api/auth/login", json={"username": "admin", "password": PASSWORD})
    assert login.status_code == 200, login.text
    auto.headers["Authorization"] = f"Bearer {login.json()['token']}"
    resp = run.gateway.post("/api/login", json={"username": "admin", "password": "password"})
    assert resp.status_code == 200, resp.text
    run.gateway.headers["Authorization"] = resp.json()["data"]["token"]


# Writes and what they leave behind ------------------------------------------------------------------
Check = Callable[[Running], None]


@dataclass
class Write:
    api: str  # "automation" | "gateway"
    method: str
    path: str
    body: dict | None
    touches: tuple[tuple, ...] = ()
    """Ledger keys whose expectation this write replaces (unknown while it is in flight)."""
    on_ack: Callable[[httpx.Response], dict[tuple, Check]] = lambda resp: {}
    headers: dict[str, str] = field(default_factory=dict)

    def send(self, run: Running) -> httpx.Response:
        return run.client(self.api).request(self.method, self.path, json=self.body, headers=self.headers)


def status_is(path: str, status: int, headers: dict[str, str] | None = None) -> Check:
    def check(run: Running) -> None:
        resp = run.automation.get(path, headers=headers)
        assert resp.status_code == status, f"GET {path}: {resp.status_code} {resp.text[:200]}"

    return check


def reads(
    api: str, path: str, pick: Callable[[dict], object], expected: object, params: dict | None = None
) -> Check:
    def check(run: Running) -> None:
        resp = run.client(api).get(path, params=params)
        assert resp.status_code == 200, f"{api} GET {path}: {resp.status_code} {resp.text[:200]}"
        assert pick(resp.json()["data"]) == expected, f"{api} GET {path}: {resp.json()['data']}"

    return check


def time_config(field_: str, expected: object) -> Check:
    def pick(data: dict) -> object:
        return data["ntp"][field_[4:]] if field_.startswith("ntp.") else data[field_]

    return reads("gateway", "/api/v1/system/time/config", pick, expected)


@dataclass
class Ledger:
    """What must be there: one check per key, and the live ids each kind can delete."""

    rng: random.Random
    checks: dict[tuple, Check] = field(default_factory=dict)
    alive: dict[str, list[str]] = field(default_factory=dict)
    counter: int = 0

    def name(self, kind: str) -> str:
        self.counter += 1
        return f"{kind}-{self.counter}"

    def created(self, kind: str, id_: str, check: Check) -> dict[tuple, Check]:
        assert (kind, id_) not in self.checks, f"{kind} id {id_} was minted twice"
        self.alive.setdefault(kind, []).append(id_)
        return {(kind, id_): check}

    def victim(self, kind: str) -> str | None:
        ids = self.alive.get(kind, [])
        return ids.pop(self.rng.randrange(len(ids))) if ids else None

    def next_write(self) -> Write:
        """One random write (a kind with nothing to change draws again)."""
        while (write := self.rng.choice(WRITERS)(self)) is None:
            pass
        return write


def sets(api: str, method: str, path: str, body: dict | None, key: tuple, check: Check) -> Write:
    """A write that leaves ``check`` true of ``key`` once acknowledged."""
    return Write(api, method, path, body, (key,), lambda resp: {key: check})


def creates(
    ledger: Ledger,
    kind: str,
    path: str,
    body: dict,
    id_of: Callable[[dict], str],
    check: Callable[[str, dict], Check],
    headers: dict[str, str] | None = None,
) -> Write:
    """A create: its id comes with the answer, and ``check(id, answer)`` holds from then on."""

    def ack(resp: httpx.Response) -> dict[tuple, Check]:
        answer = resp.json()
        return ledger.created(kind, id_of(answer), check(id_of(answer), answer))

    return Write("automation", "POST", path, body, on_ack=ack, headers=headers or {})


def named(path: str, name: str, pick: Callable[[dict], object] = lambda d: d["name"]) -> Callable:
    """The check of a create: the thing at ``path`` (with its id) reads back ``name``."""
    return lambda id_, answer: reads("automation", path.format(id_), pick, name)


def new_device(ledger: Ledger) -> Write:
    name = ledger.name("device")
    return creates(ledger, "device", "/api/devices", device_body(name), lambda b: b["data"]["device_id"],
                   named("/api/devices/{}", name))  # fmt: skip


def new_dashboard(ledger: Ledger) -> Write:
    name = ledger.name("board")
    return creates(ledger, "dashboard", "/api/dashboards", dashboard_body(name), lambda b: b["data"]["id"],
                   named("/api/dashboards/{}", name))  # fmt: skip


def rename_dashboard(ledger: Ledger) -> Write | None:
    ids = ledger.alive.get("dashboard", [])
    if not ids:
        return None
    id_, name = ledger.rng.choice(ids), ledger.name("renamed")
    check = reads("automation", f"/api/dashboards/{id_}", lambda d: d["name"], name)
    return sets("automation", "PUT", f"/api/dashboards/{id_}", {"name": name}, ("dashboard", id_), check)


def new_rule(ledger: Ledger) -> Write:
    name = ledger.name("rule")
    check = named("/api/rules/{}", name, lambda d: d["rule"]["name"])
    body = rule_body(name, ledger.rng.randint(1, 30))
    return creates(ledger, "rule", "/api/rules", body, lambda b: b["data"]["rule"]["id"], check)


def new_message(ledger: Ledger) -> Write:
    title = ledger.name("message")
    body = message_body(title, ledger.rng.choice(["info", "warning", "critical"]))
    return creates(ledger, "message", "/api/messages", body, lambda b: b["data"]["id"],
                   named("/api/messages/{}", title, lambda d: d["title"]))  # fmt: skip


def new_key(ledger: Ledger) -> Write:
    """An API key, which must still authenticate after a restart."""

    def check(id_: str, answer: dict) -> Check:
        return status_is("/api/auth/me", 200, {"X-API-Key": answer["api_key"]})

    body = {"name": ledger.name("key")}
    return creates(ledger, "key", "/api/auth/keys", body, lambda b: b["info"]["id"], check, OPERATOR)


def delete(kind: str, path: str) -> Callable[[Ledger], Write | None]:
    def make(ledger: Ledger) -> Write | None:
        id_ = ledger.victim(kind)
        if id_ is None:
            return None
        target = path.format(id_)
        return sets("automation", "DELETE", target, None, (kind, id_), status_is(target, 404))

    return make


def delete_key(ledger: Ledger) -> Write | None:
    id_ = ledger.victim("key")
    if id_ is None:
        return None

    def gone(run: Running) -> None:
        listed = run.automation.get("/api/auth/keys", headers=OPERATOR).json()["keys"]
        assert id_ not in [k["id"] for k in listed], f"API key {id_} is back"

    write = sets("automation", "DELETE", f"/api/auth/keys/{id_}", None, ("key", id_), gone)
    write.headers = OPERATOR
    return write


def automation_settings(ledger: Ledger) -> Write:
    if ledger.rng.random() < 0.5:
        tz = ledger.rng.choice(["Asia/Shanghai", "Asia/Tokyo", "Europe/London", "America/New_York"])
        check = reads("automation", "/api/settings/timezone", lambda d: d["timezone"], tz)
        return sets(
            "automation", "PUT", "/api/settings/timezone", {"timezone": tz}, ("automation-timezone",), check
        )
    secs = ledger.rng.randint(30, 86_400)
    check = reads("automation", "/api/settings/device", lambda d: d["default_offline_timeout_secs"], secs)
    body = {"default_offline_timeout_secs": secs}
    return sets("automation", "PUT", "/api/settings/device", body, ("automation-offline-timeout",), check)


def gateway_time(ledger: Ledger) -> Write:
    """One of the time area's writes, and the fields it sets for sure."""
    rng = ledger.rng
    tz, interval, server = rng.choice(TIMEZONES), rng.randint(60, 86_400), f"ntp{rng.randint(1, 9)}.example"
    kind = rng.choice(["timezone", "ntp-off", "ntp-on", "config"])
    if kind == "timezone":
        path, body, fields = "timezone", {"timezone": tz}, {"timezone": tz}
    elif kind == "ntp-off":
        path, body = "ntp", {"enabled": False, "interval": interval}
        fields = {"ntp.enabled": False, "ntp.interval": interval, "sync_mode": "manual"}
    elif kind == "ntp-on":
        path, body = "ntp", {"enabled": True, "server": server, "interval": interval}
        fields = {"ntp.enabled": True, "ntp.server": server, "ntp.interval": interval, "sync_mode": "ntp"}
    else:
        fmt = rng.choice(["12h", "24h"])
        path = "config"
        body = {"timezone": tz, "time_format": fmt, "sync_mode": "ntp"}
        body |= {"ntp_server": server, "ntp_interval": interval}
        fields = {"timezone": tz, "time_format": fmt, "sync_mode": "ntp", "ntp.enabled": True}
        fields |= {"ntp.server": server, "ntp.interval": interval}
    keys = tuple(("time", f) for f in fields)
    return Write("gateway", "PUT", f"/api/v1/system/time/{path}", body, keys,
                 lambda resp: {("time", f): time_config(f, v) for f, v in fields.items()})  # fmt: skip


def gateway_admin(ledger: Ledger) -> Write:
    """A device setting set or deleted, the device renamed, a file written or an event logged."""
    rng = ledger.rng
    pick = rng.choice(["setting", "setting", "name", "file", "log"])
    if pick == "log":
        text = f"<{ledger.name('event')}>"  # no entry's text contains another's
        body = {"event_type": "kill", "category": "operation", "level": "info", "message": text}
        body["source"] = "kill test"
        check = reads("gateway", "/api/v1/event-logs", lambda d: d["total"], 1, {"search": text})
        return sets("gateway", "POST", "/api/v1/event-logs", body, ("log", text), check)
    if pick == "name":
        name = ledger.name("cam")
        check = reads("gateway", "/api/v1/device-info", lambda d: d["device_name"], name)
        return sets("gateway", "PUT", "/api/v1/device-info", {"device_name": name}, ("device-name",), check)
    if pick == "file":
        path, content = f"/data/aipc/kill-{rng.randint(1, 5)}.txt", ledger.name("content")
        check = reads("gateway", "/api/v1/files/content", lambda d: d["content"], content, {"path": path})
        body = {"path": path, "content": content}
        return sets("gateway", "POST", "/api/v1/files/content", body, ("file", path), check)
    names = ledger.alive.setdefault("setting", [])  # the settings known to exist
    if rng.random() < 0.3 and names:
        name = names.pop(rng.randrange(len(names)))
        check = reads("gateway", "/api/v1/settings", lambda d: name in d["settings"], False)
        return sets("gateway", "DELETE", f"/api/v1/settings/{name}", None, ("setting", name), check)
    name, value = f"k{rng.randint(1, 6)}", ledger.name("value")
    check = reads("gateway", "/api/v1/settings", lambda d: d["settings"].get(name), value)

    def ack(resp: httpx.Response) -> dict[tuple, Check]:
        names.extend([name] if name not in names else [])
        return {("setting", name): check}

    return Write(
        "gateway", "POST", "/api/v1/settings", {"key": name, "value": value}, (("setting", name),), ack
    )


WRITERS: tuple[Callable[[Ledger], Write | None], ...] = (
    new_device, delete("device", "/api/devices/{}"),
    new_dashboard, rename_dashboard, delete("dashboard", "/api/dashboards/{}"),
    new_rule, delete("rule", "/api/rules/{}"),
    new_message, delete("message", "/api/messages/{}"),
    new_key, delete_key, automation_settings, automation_settings,
    gateway_time, gateway_time, gateway_admin, gateway_admin, gateway_admin,
)  # fmt: skip


def acknowledged(resp: httpx.Response) -> bool:
    body = resp.json() if 200 <= resp.status_code < 300 else {"code": resp.status_code}
    return body.get("success", True) is not False and body.get("code", 0) == 0


# List endpoints -----------------------------------------------------------------------------------
def list_paths() -> dict[str, list[str]]:
    """GETs without path parameters that are plain request/response routes, per API."""
    automation = {r.path for r in vendor_routes() if r.method == "GET" and r.vendor_class != WS}
    gateway = {r.path for r in device_routes() if r.method == "GET" and r.kind == "REST"}
    return {
        api: sorted(p for p in paths if not re.search(r"[:*]", p))
        for api, paths in (("automation", automation), ("gateway", gateway))
    }


def answering(run: Running, paths: dict[str, list[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for api, candidates in paths.items():
        client = run.client(api)
        out[api] = {p for p in candidates if client.get(p, headers=_headers(p)).status_code == 200}
    return out


def _headers(path: str) -> dict[str, str] | None:
    return OPERATOR if path.startswith("/api/auth/keys") else None  # the key routes take only a key


# The test ---------------------------------------------------------------------------------------
def test_acknowledged_writes_survive_kill_9_at_random_points(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    ledger = Ledger(rng)
    state = tmp_path / "state"
    run = launch(state)
    try:
        sign_in(run, first=True)
        lists = answering(run, list_paths())
        assert "/api/devices" in lists["automation"] and "/api/v1/event-logs" in lists["gateway"], lists
        for round_ in range(ROUNDS):
            for _ in range(rng.randint(*WRITES_PER_ROUND)):
                write = ledger.next_write()
                resp = write.send(run)
                assert acknowledged(resp), (
                    f"{write.method} {write.path}: {resp.status_code} {resp.text[:300]}"
                )
                ledger.checks.update(write.on_ack(resp))
            in_flight, outcome = ledger.next_write(), []
            sender = threading.Thread(target=_try_send, args=(in_flight, run, outcome))
            sender.start()
            run.stop(signal.SIGKILL)
            sender.join(20)
            if outcome and acknowledged(outcome[0]):
                ledger.checks.update(in_flight.on_ack(outcome[0]))
            else:
                for key in in_flight.touches:
                    ledger.checks.pop(key, None)

            run = launch(state)
            sign_in(run, first=False)
            failures = _failures(run, ledger, lists)
            assert not failures, f"round {round_} (seed {SEED}):\n" + "\n".join(failures)
    finally:
        run.stop(signal.SIGINT)
    assert run.proc.returncode == 0, "".join(run.output)


def _try_send(write: Write, run: Running, outcome: list[httpx.Response]) -> None:
    with contextlib.suppress(httpx.HTTPError, RuntimeError):  # killed under it, or the client closed
        outcome.append(write.send(run))


def _failures(run: Running, ledger: Ledger, lists: dict[str, set[str]]) -> list[str]:
    failures = []
    for key, check in ledger.checks.items():
        try:
            check(run)
        except AssertionError as err:
            failures.append(f"{key}: {err}")
    now = answering(run, {api: sorted(paths) for api, paths in lists.items()})
    return failures + [f"{api} GET {p} stopped answering 200" for api in lists for p in lists[api] - now[api]]


async def test_ids_minted_after_a_restart_are_new(tmp_path: Path) -> None:
    """Each run on a state dir draws its ids afresh: what a run creates never replaces what an
    earlier run stored (the world's generators would otherwise start over at every start)."""
    settings = Settings(scenario=SCENARIOS / "test.yaml", step=True, state_dir=tmp_path / "state")
    creates = (
        ("/api/devices", device_body("d")),
        ("/api/dashboards", dashboard_body("b")),
        ("/api/messages", message_body("t", "info")),
        ("/api/rules", rule_body("r", 1)),
    )
    made: list[str] = []
    for run in range(2):
        twin = build(settings)
        async with _client(twin.automation_app, "http://automation") as client:
            if run == 0:
                await admin_token(client)
            login = await client.post("/api/auth/login", json={"username": "admin", "password": "secret123"})
            auth = {"Authorization": f"Bearer {login.json()['token']}"}
            for path, body in creates:
                data = (await client.post(path, json=body, headers=auth)).json()["data"]
                made.append(f"{path}/{data.get('device_id') or data.get('id') or data['rule']['id']}")
            assert len(set(made)) == len(made), made
            for path in made:
                assert (await client.get(path, headers=auth)).status_code == 200, path
        twin.world.store.close()
