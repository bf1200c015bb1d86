"""Scenario-style faults switched on and off during a run, through the twin's control plane."""

from __future__ import annotations

import os
import time
from typing import Any

from locust import HttpUser, between, tag, task
from locust.exception import StopUser

from loadtests.common import CONTROL_URL, check_json, is_loopback

LATENCY_S = 0.3
"""Added to every automation request under ``/api/devices`` while the latency fault is on (world
seconds: wall seconds at the default speed 1)."""
STORM_LIMIT = int(os.environ.get("TWIN_STORM_LIMIT") or 10)
"""Requests per minute per client during a rate-limit storm (a REST user sends about 90)."""
HOLD_S = 2.0
"""How long each fault stays on."""
STORM_SAFETY_S = 30.0
"""The storm's own end (world seconds), should this user not get to call it off."""


class FaultUser(HttpUser):
    """One operator (``fixed_count = 1``) who, between waits, puts a latency fault on the automation
    API's ``/api/devices`` routes for ``HOLD_S`` seconds and takes it off, then does the same with a
    rate-limit storm: ``POST /faults/automation/latency`` / ``DELETE /faults/automation``, then
    ``POST /ratelimit/automation/storm`` / ``DELETE /ratelimit/automation/storm`` on
    ``TWIN_CONTROL_URL``, each recorded as ``control <method> <path>``. Meanwhile the REST users
    see slower answers, then 429s with Retry-After (counted as ``<name> (429)``)."""

    fixed_count = 1
    wait_time = between(2.0, 4.0)

    def on_start(self) -> None:
        if not is_loopback(CONTROL_URL):
            raise StopUser()

    def control(self, method: str, path: str, key: str, **kwargs: Any) -> None:
        with self.client.request(
            method, f"{CONTROL_URL}{path}", name=f"control {method} {path}", catch_response=True, **kwargs
        ) as response:
            check_json(response, key)

    @tag("faults")
    @task
    def latency_then_storm(self) -> None:
        body = {"seconds": LATENCY_S, "path_prefix": "/api/devices"}
        self.control("POST", "/faults/automation/latency", "latency", json=body)
        try:
            time.sleep(HOLD_S)
        finally:  # also when the run ends meanwhile
            self.control("DELETE", "/faults/automation", "cleared")
        storm = {"limit": STORM_LIMIT, "seconds": STORM_SAFETY_S}
        self.control("POST", "/ratelimit/automation/storm", "limit", json=storm)
        try:
            time.sleep(HOLD_S)
        finally:
            self.control("DELETE", "/ratelimit/automation/storm", "limit")
