"""A client written apart from the project, as a QA engineer would write one: the Python standard
library only, no import of the twin, time.sleep for its pauses, the automation API's address from
TWIN_AUTOMATION_URL. It never calls the control plane.

Once a second it lists the devices (GET /api/devices) and reads each device it watches
(GET /api/devices/{id}); it watches the devices of its first listing (--device ID: that one only).

Its good manners, each of which can be switched off to make it a buggy client:
- after a 429 it waits Retry-After seconds before its next request (--ignore-retry-after: one second);
- once a device answered 404 it stops reading it (--ignore-404: it keeps asking).

It logs in the way the automation API documents (setup on a fresh server, else login) and runs
until it is stopped, or --seconds have passed."""

from __future__ import annotations

import argparse
import http.client
import json
import os
import sys
import time
import urllib.error
import urllib.request
from email.message import Message

USER, PASSWORD = "qa-poller", "qa-poller-secret-1"


class Api:
    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/") + "/api"
        self.token: str | None = None

    def call(self, method: str, path: str, body: dict | None = None) -> tuple[int, dict, Message]:
        """(status, JSON body, headers); status 0 when the connection failed."""
        data = json.dumps(body).encode() if body is not None else None
        req = urllib.request.Request(self.base + path, data=data, method=method)
        req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, _json(resp.read()), resp.headers
        except urllib.error.HTTPError as err:
            return err.code, _json(err.read()), err.headers
        except (urllib.error.URLError, OSError, http.client.HTTPException):
            return 0, {}, Message()  # refused, reset, timed out, or a body cut short

    def login(self) -> bool:
        creds = {"username": USER, "password": PASSWORD}
        status, body, _ = self.call("POST", "/setup/initialize", creds)
        if status != 200:
            status, body, _ = self.call("POST", "/auth/login", creds)
        data = body.get("data") if isinstance(body.get("data"), dict) else {}
        self.token = body.get("token") or data.get("token")
        return status == 200 and bool(self.token)


def _json(raw: bytes) -> dict:
    try:
        body = json.loads(raw or b"{}")
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def device_ids(body: dict) -> list[str]:
    data = body.get("data", body)
    items = data.get("devices", []) if isinstance(data, dict) else data
    if not isinstance(items, list):
        return []
    return [d.get("device_id") or d.get("id") for d in items if isinstance(d, dict)]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ignore-retry-after", action="store_true")
    p.add_argument("--ignore-404", action="store_true")
    p.add_argument("--device", action="append", default=[])
    p.add_argument("--seconds", type=float, default=0.0, help="stop after this long (0: run until stopped)")
    args = p.parse_args()
    api = Api(os.environ.get("TWIN_AUTOMATION_URL", "http://127.0.0.1:9375"))
    started = time.monotonic()
    while not api.login():
        time.sleep(1)
    watched: list[str] | None = list(args.device) or None
    while not args.seconds or time.monotonic() - started < args.seconds:
        wait = 1.0
        for method_path in ["/devices"] + [f"/devices/{d}" for d in watched or []]:
            status, body, headers = api.call("GET", method_path)
            print(f"GET {method_path} -> {status}", flush=True)
            if status == 401:
                api.login()
            elif status == 429:
                if not args.ignore_retry_after:
                    wait = float(headers.get("Retry-After") or 1)
                break
            elif status == 404 and watched and not args.ignore_404:
                watched.remove(method_path.rsplit("/", 1)[1])
            elif status == 200 and watched is None and method_path == "/devices":
                watched = device_ids(body)
        time.sleep(wait)
    return 0


if __name__ == "__main__":
    sys.exit(main())
