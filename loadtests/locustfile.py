"""Locust load test for the twin's automation API (and, optionally, a camera's edge gateway).

Start the twin (``make run``), then::

    make load
    # = locust -f loadtests/locustfile.py --headless -u 20 -r 10 -t 30s --host http://127.0.0.1:9375

``make load ARGS=...`` appends more locust options.

``ApiUser`` (the main class) is an automation client: it logs in once (``POST /api/setup/initialize``
on a fresh twin, else ``POST /api/auth/login``; credentials from ``TWIN_USERNAME`` /
``TWIN_PASSWORD``, default ``admin`` / ``admin12345``), learns the device ids from
``GET /api/devices?limit=100``, then lists devices, reads device details and current values, pages
through telemetry by cursor, and pushes webhook readings for ``load-<n>`` devices (which the twin
keeps as drafts). ``HealthUser`` (low weight) hits the health endpoints at ``--host``. ``GatewayUser``
runs only when ``TWIN_GATEWAY_URL`` is set, e.g. ``TWIN_GATEWAY_URL=http://127.0.0.1:8080 make load``
(the gateway's own address, from the twin's banner; TLS certificates are not verified since the
twin's are self-signed).

The twin's rate limiter (per client, ~12 000 requests a minute by default) is far above what 20
users with this think time send.

For raw requests/s against a bare FastAPI baseline use ``make bench`` instead: Locust measures
behaviour under a think-time workload, not peak throughput.
"""

from __future__ import annotations

import os
import random
from typing import Any

import urllib3
from locust import HttpUser, between, task
from locust.exception import StopUser

GATEWAY_URL = os.environ.get("TWIN_GATEWAY_URL", "").rstrip("/")
USERNAME = os.environ.get("TWIN_USERNAME") or "admin"
PASSWORD = os.environ.get("TWIN_PASSWORD") or "admin12345"
WEBHOOK_DEVICES = 50  # webhook pushes go to load-1 .. load-50, so the drafts they make stay few
TELEMETRY_PAGES = 3


def check_json(response: Any, key: str, expected: Any = None) -> None:
    """Mark ``response`` (opened with ``catch_response=True``) failed unless it is a 200 JSON object
    with ``key`` (equal to ``expected`` when that is given)."""
    if response.status_code != 200:
        response.failure(f"status {response.status_code}")
        return
    try:
        body = response.json()
    except ValueError:
        response.failure("body is not JSON")
        return
    if not isinstance(body, dict) or key not in body:
        response.failure(f"JSON lacks {key!r}")
    elif expected is not None and body[key] != expected:
        response.failure(f"{key} = {body[key]!r}, expected {expected!r}")
    else:
        response.success()


def check_envelope(response: Any) -> dict[str, Any] | None:
    """Mark ``response`` (opened with ``catch_response=True``) failed unless it is a 200 JSON envelope
    ``{"success": true, "data": {...}}``; returns ``data`` when it is (the caller may still fail it)."""
    if response.status_code != 200:
        response.failure(f"status {response.status_code}: {response.text[:200]}")
        return None
    try:
        body = response.json()
    except ValueError:
        response.failure("body is not JSON")
        return None
    if not isinstance(body, dict) or body.get("success") is not True:
        response.failure(f"not a success envelope: {str(body)[:200]}")
        return None
    data = body.get("data")
    if not isinstance(data, dict):
        response.failure("envelope without a data object")
        return None
    response.success()
    return data


class ApiUser(HttpUser):
    """An automation client: authenticated device reads, telemetry paging, and webhook pushes."""

    weight = 10
    wait_time = between(0.2, 1.0)

    def on_start(self) -> None:
        self.auth = {"Authorization": f"Bearer {self.login()}"}
        self.device_ids: list[str] = []
        self.list_devices()
        if not self.device_ids:
            raise StopUser()

    def login(self) -> str:
        """A bearer token: create the first admin on a fresh twin, else log in as that user."""
        body = {"username": USERNAME, "password": PASSWORD}
        with self.client.post("/api/setup/initialize", json=body, catch_response=True) as response:
            token = self.token(response)
            if token is None:  # already initialized: not a failure, try logging in
                response.success()
        if token is None:
            with self.client.post("/api/auth/login", json=body, catch_response=True) as response:
                token = self.token(response)
                if token is None:
                    response.failure(f"login as {USERNAME!r}: status {response.status_code}")
                    raise StopUser()
                response.success()
        return token

    @staticmethod
    def token(response: Any) -> str | None:
        """The raw ``{"token": ...}`` of a 200 auth answer; None otherwise."""
        if response.status_code != 200:
            return None
        try:
            token = response.json().get("token")
        except (ValueError, AttributeError):
            return None
        return token if isinstance(token, str) and token else None

    def device_id(self) -> str:
        return random.choice(self.device_ids)

    @task(2)
    def list_devices(self) -> None:
        with self.client.get(
            "/api/devices?limit=100", headers=self.auth, name="/api/devices?limit=100", catch_response=True
        ) as response:
            data = check_envelope(response)
            if data is None:
                return
            devices = data.get("devices")
            if not isinstance(devices, list):
                response.failure("data.devices is not a list")
                return
            ids = [d["device_id"] for d in devices if isinstance(d, dict) and d.get("device_id")]
            if ids:
                self.device_ids = ids

    @task(5)
    def device_detail(self) -> None:
        device_id = self.device_id()
        with self.client.get(
            f"/api/devices/{device_id}", headers=self.auth, name="/api/devices/[id]", catch_response=True
        ) as response:
            data = check_envelope(response)
            if data is not None and data.get("device_id") != device_id:
                response.failure(f"device_id {data.get('device_id')!r}, expected {device_id!r}")

    @task(3)
    def telemetry_pages(self) -> None:
        """Up to three pages of a device's telemetry, following ``data.pagination.next_cursor``."""
        url = f"/api/devices/{self.device_id()}/telemetry?limit=100"
        cursor = None
        for page in range(1, TELEMETRY_PAGES + 1):
            path = url if cursor is None else f"{url}&cursor={cursor}"
            name = f"/api/devices/[id]/telemetry?limit=100 (page {min(page, 2)}{'+' if page > 1 else ''})"
            with self.client.get(path, headers=self.auth, name=name, catch_response=True) as response:
                data = check_envelope(response)
                if data is None:
                    return
                pagination = data.get("pagination")
                if not isinstance(pagination, dict) or "next_cursor" not in pagination:
                    response.failure("data.pagination.next_cursor missing")
                    return
                cursor = pagination["next_cursor"]
            if cursor is None:
                return

    @task(2)
    def webhook(self) -> None:
        """A reading pushed the way a device would: no user auth; unknown ids become drafts."""
        device_id = f"load-{random.randint(1, WEBHOOK_DEVICES)}"
        body = {"temperature": 21.5, "humidity": 40}
        with self.client.post(
            f"/api/devices/{device_id}/webhook",
            json=body,
            name="/api/devices/load-[n]/webhook",
            catch_response=True,
        ) as response:
            check_envelope(response)

    @task(2)
    def current(self) -> None:
        with self.client.get(
            f"/api/devices/{self.device_id()}/current",
            headers=self.auth,
            name="/api/devices/[id]/current",
            catch_response=True,
        ) as response:
            check_envelope(response)


class HealthUser(HttpUser):
    """The automation API's health endpoints, mostly the cheap liveness one (a minor share of users)."""

    weight = 1
    wait_time = between(0.1, 0.5)

    @task(5)
    def health(self) -> None:
        with self.client.get("/api/health", catch_response=True) as response:
            check_json(response, "status")

    @task(2)
    def health_status(self) -> None:
        with self.client.get("/api/health/status", catch_response=True) as response:
            check_json(response, "status")

    @task(1)
    def health_ready(self) -> None:
        with self.client.get("/api/health/ready", catch_response=True) as response:
            check_json(response, "ready")


GATEWAY_USERNAME = os.environ.get("TWIN_GATEWAY_USERNAME") or "admin"
GATEWAY_PASSWORD = os.environ.get("TWIN_GATEWAY_PASSWORD") or "password"
APP_MANIFEST = """\
apiVersion: v1
kind: Application
metadata: {{id: {app_id}, name: Load test app, version: 1.0.0}}
spec:
  image: {app_id}:1.0.0
  resources: {{cpu: "25%", memory: 64Mi}}
  permissions: {{video: [main], inference: {{models: [yolov8n]}}}}
"""
INSTALL_POLLS = 40


class GatewayUser(HttpUser):
    """A camera gateway client; abstract (never spawned) without ``TWIN_GATEWAY_URL``. Logs in,
    polls health and the OTA status, lists files, and runs an app's whole lifecycle: the three-step
    install (polling its task), start, NDJSON logs, stop, uninstall."""

    abstract = not GATEWAY_URL
    wait_time = between(0.1, 0.5)

    def on_start(self) -> None:
        self.client.verify = False  # the twin's gateway certificates are self-signed
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
        body = {"username": GATEWAY_USERNAME, "password": GATEWAY_PASSWORD}
        with self.client.post(
            f"{GATEWAY_URL}/api/login", json=body, name="gateway /api/login", catch_response=True
        ) as r:
            token = (r.json().get("data") or {}).get("token") if r.status_code == 200 else None
            if not token:
                r.failure(f"gateway login: status {r.status_code}")
                raise StopUser()
            r.success()
        self.auth = {"Authorization": token}

    def gateway(self, method: str, path: str, **kwargs: Any) -> Any:
        # Absolute URLs: locust's --host applies to every user class, and it is the automation API.
        kwargs.setdefault("name", f"gateway {path}")
        return self.client.request(
            method, f"{GATEWAY_URL}{path}", headers=self.auth, catch_response=True, **kwargs
        )

    @task(5)
    def system_health(self) -> None:
        with self.gateway("GET", "/api/v1/system/health") as response:
            check_json(response, "code", 0)

    @task(3)
    def ota_status(self) -> None:
        with self.gateway("GET", "/api/v1/system/ota/status") as response:
            check_json(response, "code", 0)

    @task(3)
    def list_files(self) -> None:
        with self.gateway("GET", "/api/v1/files?path=/data/aipc", name="gateway /api/v1/files") as response:
            check_json(response, "code", 0)

    @task(1)
    def app_lifecycle(self) -> None:
        app_id = f"load-{random.randrange(16**8):08x}"
        prefix = "/api/v1/apps"
        files = {"file": (f"{app_id}.tar", b"layer" * 4096)}
        with self.gateway("POST", f"{prefix}/upload-image", files=files) as response:
            check_json(response, "code", 0)
            image_path = (
                (response.json().get("data") or {}).get("image_path") if response.status_code == 200 else None
            )
        manifest = {"file": ("app.yaml", APP_MANIFEST.format(app_id=app_id).encode())}
        with self.gateway("POST", f"{prefix}/upload-manifest", files=manifest) as response:
            check_json(response, "code", 0)
            manifest_path = (
                (response.json().get("data") or {}).get("manifest_path")
                if response.status_code == 200
                else None
            )
        if not image_path or not manifest_path:
            return
        body = {"manifest_path": manifest_path, "image_path": image_path, "force": True}
        with self.gateway("POST", f"{prefix}/install-package", json=body) as response:
            check_json(response, "code", 0)
            task_id = (
                (response.json().get("data") or {}).get("task_id") if response.status_code == 200 else None
            )
        if not task_id or not self.wait_installed(task_id):
            return
        for action in ("start", "logs", "stop"):
            method = "GET" if action == "logs" else "POST"
            with self.gateway(
                method, f"{prefix}/{app_id}/{action}", name=f"gateway {prefix}/[id]/{action}"
            ) as response:
                if response.status_code == 200:
                    response.success()
                else:
                    response.failure(f"{action}: status {response.status_code}: {response.text[:200]}")
        with self.gateway("DELETE", f"{prefix}/{app_id}", name=f"gateway {prefix}/[id]") as response:
            check_json(response, "code", 0)

    def wait_installed(self, task_id: str) -> bool:
        for _ in range(INSTALL_POLLS):
            path = f"/api/v1/apps/install-progress/{task_id}"
            with self.gateway("GET", path, name="gateway /api/v1/apps/install-progress/[task]") as response:
                check_json(response, "code", 0)
                phase = ((response.json().get("data") or {}) if response.status_code == 200 else {}).get(
                    "phase"
                )
            if phase == "complete":
                return True
            if phase in (None, "error"):
                return False
            self.wait()
        return False
