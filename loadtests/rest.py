"""REST clients of the automation API: device reads, telemetry paging, webhook pushes, health."""

from __future__ import annotations

import random
import time

from locust import tag, task
from locust.exception import StopUser

from loadtests.common import LOGIN_ATTEMPTS, AutomationUser

WEBHOOK_DEVICES = 50  # webhook pushes go to load-1 .. load-50, so the drafts they make stay few
TELEMETRY_PAGES = 3


class ApiUser(AutomationUser):
    """An automation client: logs in, learns the device ids from ``GET /api/devices?limit=100``, then
    lists devices, reads device details and current values, pages through telemetry by cursor, and
    pushes webhook readings for ``load-<n>`` devices (which the twin keeps as drafts)."""

    weight = 10

    def on_start(self) -> None:
        super().on_start()
        self.auth = {"Authorization": f"Bearer {self.login()}"}
        self.device_ids: list[str] = []
        for _ in range(LOGIN_ATTEMPTS):
            self.list_devices()
            if self.device_ids:
                return
            if self.retry_at <= time.monotonic():  # not rate limited: the fleet is empty or the list failed
                break
            time.sleep(self.retry_at - time.monotonic())
        raise StopUser()

    def device_id(self) -> str:
        return random.choice(self.device_ids)

    @tag("rest")
    @task(2)
    def list_devices(self) -> None:
        with self.client.get(
            "/api/devices?limit=100", headers=self.auth, name="/api/devices?limit=100", catch_response=True
        ) as response:
            data = self.check_envelope(response)
            if data is None:
                return
            devices = data.get("devices")
            if not isinstance(devices, list):
                response.failure("data.devices is not a list")
                return
            ids = [d["device_id"] for d in devices if isinstance(d, dict) and d.get("device_id")]
            if ids:
                self.device_ids = ids

    @tag("rest")
    @task(5)
    def device_detail(self) -> None:
        device_id = self.device_id()
        with self.client.get(
            f"/api/devices/{device_id}", headers=self.auth, name="/api/devices/[id]", catch_response=True
        ) as response:
            data = self.check_envelope(response)
            if data is not None and data.get("device_id") != device_id:
                response.failure(f"device_id {data.get('device_id')!r}, expected {device_id!r}")

    @tag("rest")
    @task(3)
    def telemetry_pages(self) -> None:
        """Up to three pages of a device's telemetry, following ``data.pagination.next_cursor``."""
        url = f"/api/devices/{self.device_id()}/telemetry?limit=100"
        cursor = None
        for page in range(1, TELEMETRY_PAGES + 1):
            path = url if cursor is None else f"{url}&cursor={cursor}"
            name = f"/api/devices/[id]/telemetry?limit=100 (page {'1' if page == 1 else '2+'})"
            with self.client.get(path, headers=self.auth, name=name, catch_response=True) as response:
                data = self.check_envelope(response)
                if data is None:
                    return
                pagination = data.get("pagination")
                if not isinstance(pagination, dict) or "next_cursor" not in pagination:
                    response.failure("data.pagination.next_cursor missing")
                    return
                cursor = pagination["next_cursor"]
            if cursor is None:
                return

    @tag("rest")
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
            self.check_envelope(response)

    @tag("rest")
    @task(2)
    def current(self) -> None:
        with self.client.get(
            f"/api/devices/{self.device_id()}/current",
            headers=self.auth,
            name="/api/devices/[id]/current",
            catch_response=True,
        ) as response:
            self.check_envelope(response)


class HealthUser(AutomationUser):
    """The automation API's health endpoints, mostly the cheap liveness one (a minor share of users)."""

    weight = 1
    think = (0.1, 0.5)

    @tag("rest")
    @task(5)
    def health(self) -> None:
        with self.client.get("/api/health", catch_response=True) as response:
            self.check_json(response, "status")

    @tag("rest")
    @task(2)
    def health_status(self) -> None:
        with self.client.get("/api/health/status", catch_response=True) as response:
            self.check_json(response, "status")

    @tag("rest")
    @task(1)
    def health_ready(self) -> None:
        with self.client.get("/api/health/ready", catch_response=True) as response:
            self.check_json(response, "ready")
