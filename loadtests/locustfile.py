"""Locust load test for the twin's automation API (and, optionally, a camera's edge gateway).

Start the twin (``make run``), then::

    make load
    # = locust -f loadtests/locustfile.py --headless -u 20 -r 10 -t 30s --host http://127.0.0.1:9375

``make load ARGS=...`` appends more locust options. ``AutomationUser`` hits the health endpoints of
the automation API at ``--host``. ``GatewayUser`` runs only when ``TWIN_GATEWAY_URL`` is set, e.g.
``TWIN_GATEWAY_URL=http://127.0.0.1:8080 make load`` (the gateway's own address, from the twin's
banner; TLS certificates are not verified since the twin's are self-signed).

For raw requests/s against a bare FastAPI baseline use ``make bench`` instead: Locust measures
behaviour under a think-time workload, not peak throughput.
"""

from __future__ import annotations

import os
from typing import Any

import urllib3
from locust import HttpUser, between, task

GATEWAY_URL = os.environ.get("TWIN_GATEWAY_URL", "").rstrip("/")


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


class AutomationUser(HttpUser):
    """The automation API's health endpoints, mostly the cheap liveness one."""

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


class GatewayUser(HttpUser):
    """A camera gateway's public health endpoint; abstract (never spawned) without ``TWIN_GATEWAY_URL``."""

    abstract = not GATEWAY_URL
    wait_time = between(0.1, 0.5)

    def on_start(self) -> None:
        self.client.verify = False  # the twin's gateway certificates are self-signed
        urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)

    @task
    def system_health(self) -> None:
        # An absolute URL: locust's --host applies to every user class, and it is the automation API.
        url = f"{GATEWAY_URL}/api/v1/system/health"
        with self.client.get(url, name="gateway /api/v1/system/health", catch_response=True) as response:
            check_json(response, "code", 0)
