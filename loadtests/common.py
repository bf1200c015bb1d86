"""What the user classes share: where the twin is and how to log in (environment variables, loopback
only), the answer checks, the automation and gateway logins, Retry-After handling, and custom
entries in Locust's statistics for what is not a plain HTTP request."""

from __future__ import annotations

import ipaddress
import os
import random
import time
from typing import Any
from urllib.parse import urlsplit

import urllib3
from locust import HttpUser, User
from locust.exception import StopUser

USERNAME = os.environ.get("TWIN_USERNAME") or "admin"
PASSWORD = os.environ.get("TWIN_PASSWORD") or "changeme1"
"""The automation administrator: the README's ``setup/initialize`` example creates this one."""
GATEWAY_URL = (os.environ.get("TWIN_GATEWAY_URL") or "http://127.0.1.1:8080").rstrip("/")
"""Camera 1's gateway as ``make run`` serves it (``--gateway-addressing ip``); with
``--gateway-addressing port`` it is ``http://127.0.0.1:8081``."""
GATEWAY_USERNAME = os.environ.get("TWIN_GATEWAY_USERNAME") or "admin"
GATEWAY_PASSWORD = os.environ.get("TWIN_GATEWAY_PASSWORD") or "password"
CONTROL_URL = (os.environ.get("TWIN_CONTROL_URL") or "http://127.0.0.1:9380").rstrip("/")
MQTT_URL = os.environ.get("TWIN_MQTT_URL") or "mqtt://127.0.0.1:1883"

RETRY_AFTER_CAP_S = 3.0
"""A 429's Retry-After is waited out up to this long: a storm here lasts seconds, and a user idle for
the full minute the window allows would sit out most of a short run. Kept under the servers' 5 s
keep-alive, so that a request after the wait does not race the server closing its idle connection."""
LOGIN_ATTEMPTS = 5


def is_loopback(url: str | None) -> bool:
    host = urlsplit(url or "").hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def remote_targets(host: str | None) -> list[str]:
    """The configured targets that are not on this machine's loopback (load goes nowhere else)."""
    targets = {
        "--host": host,
        "TWIN_GATEWAY_URL": GATEWAY_URL,
        "TWIN_CONTROL_URL": CONTROL_URL,
        "TWIN_MQTT_URL": MQTT_URL,
    }
    return [f"{name}={url}" for name, url in targets.items() if url is not None and not is_loopback(url)]


def record(
    user: User, kind: str, name: str, started: float, length: int = 0, error: Exception | None = None
) -> None:
    """One entry in Locust's statistics for something that is not an HTTP request made with
    ``self.client`` (an MQTT publish, a WebSocket or SSE message): ``started`` is the
    ``time.perf_counter()`` reading its response time counts from."""
    user.environment.events.request.fire(
        request_type=kind,
        name=name,
        response_time=(time.perf_counter() - started) * 1000,
        response_length=length,
        exception=error,
        context={},
    )


def ws_url(http_url: str) -> str:
    """``http(s)://host:port`` → ``ws(s)://host:port``."""
    return "ws" + http_url.removeprefix("http")


def answer(response: Any) -> str:
    """What came back, for a failure message: the status and the start of the body, or the transport
    error when there was no answer (Locust's status 0)."""
    if response.status_code == 0:
        return f"no answer: {response.error!r}"
    return f"status {response.status_code}: {response.text[:200]}"


def token_of(response: Any) -> str | None:
    """The raw ``{"token": ...}`` of a 200 automation auth answer; None otherwise."""
    if response.status_code != 200:
        return None
    try:
        token = response.json().get("token")
    except (ValueError, AttributeError):
        return None
    return token if isinstance(token, str) and token else None


class AutomationUser(HttpUser):
    """A client of the automation API at ``--host``: logs in, and waits out a 429's Retry-After
    (each such answer is counted under its request's name + `` (429)``, not as a failure: it is
    what the server must do during a rate-limit storm, see ``FaultUser``)."""

    abstract = True
    think = (0.2, 1.0)
    """Seconds between tasks, drawn uniformly."""
    retry_at = 0.0

    def wait_time(self) -> float:
        return max(random.uniform(*self.think), self.retry_at - time.monotonic())

    def on_start(self) -> None:
        if not is_loopback(self.host):
            raise StopUser()  # the listener in locustfile.py has said why

    def throttled(self, response: Any) -> bool:
        """True for a 429 (opened with ``catch_response=True``): renamed and passed when it carries
        Retry-After, which this user then waits out; failed without one."""
        if response.status_code != 429:
            return False
        try:
            wait = float(response.headers.get("Retry-After", ""))
        except ValueError:
            response.failure("429 without a numeric Retry-After")
            return True
        response.request_meta["name"] += " (429)"
        response.success()
        self.retry_at = max(self.retry_at, time.monotonic() + min(wait, RETRY_AFTER_CAP_S))
        return True

    def login(self) -> str:
        """A bearer token: create the first administrator on a fresh twin, else log in as them."""
        body = {"username": USERNAME, "password": PASSWORD}
        for path in ("/api/setup/initialize", "/api/auth/login"):
            for _ in range(LOGIN_ATTEMPTS):
                with self.client.post(path, json=body, catch_response=True) as response:
                    throttled = self.throttled(response)
                    token = None if throttled else token_of(response)
                    if token is not None or (path == "/api/setup/initialize" and response.status_code == 403):
                        response.success()  # 403: set up already, log in instead
                    elif not throttled:
                        response.failure(
                            f"{path} as {USERNAME!r}: {answer(response)} "
                            "(set TWIN_USERNAME / TWIN_PASSWORD to the twin's administrator)"
                        )
                if token is not None:
                    return token
                if not throttled:
                    break
                time.sleep(max(0.0, self.retry_at - time.monotonic()))
        raise StopUser()

    def check_envelope(self, response: Any) -> dict[str, Any] | None:
        """Fail ``response`` (opened with ``catch_response=True``) unless it is a 200 envelope
        ``{"success": true, "data": {...}}``; returns ``data`` when it is (the caller may still fail it)."""
        if self.throttled(response):
            return None
        if response.status_code != 200:
            response.failure(answer(response))
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

    def check_json(self, response: Any, key: str, expected: Any = None) -> None:
        """:func:`check_json`, after passing a 429 with Retry-After (see :meth:`throttled`)."""
        if self.throttled(response):
            return
        check_json(response, key, expected)


def check_json(response: Any, key: str, expected: Any = None) -> None:
    """Fail ``response`` (opened with ``catch_response=True``) unless it is a 200 JSON object with
    ``key`` (equal to ``expected`` when that is given)."""
    if response.status_code != 200:
        response.failure(answer(response))
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


def gateway_login(user: HttpUser) -> str:
    """Log in to the camera gateway at ``TWIN_GATEWAY_URL``; its token, as the device returns it
    (``"Bearer …"``). TLS certificates are not verified: the twin's are self-signed."""
    user.client.verify = False
    urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
    body = {"username": GATEWAY_USERNAME, "password": GATEWAY_PASSWORD}
    with user.client.post(
        f"{GATEWAY_URL}/api/login", json=body, name="gateway /api/login", catch_response=True
    ) as response:
        token = (response.json().get("data") or {}).get("token") if response.status_code == 200 else None
        if not token:
            response.failure(f"gateway login at {GATEWAY_URL}: {answer(response)}")
            raise StopUser()
        response.success()
    return token
