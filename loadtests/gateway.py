"""Clients of a camera's edge gateway at ``TWIN_GATEWAY_URL``: a REST client running the app
lifecycle, and H.264 viewers on the live WebSocket feed."""

from __future__ import annotations

import os
import random
import ssl
import struct
import time
from typing import Any

from locust import HttpUser, between, tag, task
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect

from loadtests.common import GATEWAY_URL, answer, check_json, gateway_login, record, ws_url

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

H264_STREAM = os.environ.get("TWIN_H264_STREAM") or "main"
H264_VIEWERS = int(os.environ.get("TWIN_H264_VIEWERS") or 2)
"""The device serves at most five feeds per client IP (a sixth replaces the oldest), and every
Locust process here shares 127.0.0.1: keep viewers at five or fewer per gateway."""
WATCH_S = 8.0
"""How long a viewer watches before it hangs up (and, after its wait, connects again)."""
FRAME_TIMEOUT_S = 5.0
HEADER = struct.Struct(">IBBII4x")  # magic, frame type, flags, PTS, DTS (api/gateway/routers/media.py)
MAGIC = 0xFFD8FF00


class GatewayUser(HttpUser):
    """A camera gateway client: logs in, polls health and the OTA status, lists files, and runs an
    app's whole lifecycle: the three-step install (polling its task), start, NDJSON logs, stop,
    uninstall. Absolute URLs: locust's ``--host`` is the automation API."""

    weight = 2
    wait_time = between(0.1, 0.5)

    def on_start(self) -> None:
        self.auth = {"Authorization": gateway_login(self)}

    def gateway(self, method: str, path: str, **kwargs: Any) -> Any:
        kwargs.setdefault("name", f"gateway {path}")
        return self.client.request(
            method, f"{GATEWAY_URL}{path}", headers=self.auth, catch_response=True, **kwargs
        )

    @tag("gateway")
    @task(5)
    def system_health(self) -> None:
        with self.gateway("GET", "/api/v1/system/health") as response:
            check_json(response, "code", 0)

    @tag("gateway")
    @task(3)
    def ota_status(self) -> None:
        with self.gateway("GET", "/api/v1/system/ota/status") as response:
            check_json(response, "code", 0)

    @tag("gateway")
    @task(3)
    def list_files(self) -> None:
        with self.gateway("GET", "/api/v1/files?path=/data/aipc", name="gateway /api/v1/files") as response:
            check_json(response, "code", 0)

    @tag("gateway")
    @task(1)
    def app_lifecycle(self) -> None:
        app_id = f"load-{random.randrange(16**8):08x}"
        prefix = "/api/v1/apps"
        files = {"file": (f"{app_id}.tar", b"layer" * 4096)}
        with self.gateway("POST", f"{prefix}/upload-image", files=files) as response:
            image_path = self.data(response).get("image_path")
        manifest = {"file": ("app.yaml", APP_MANIFEST.format(app_id=app_id).encode())}
        with self.gateway("POST", f"{prefix}/upload-manifest", files=manifest) as response:
            manifest_path = self.data(response).get("manifest_path")
        if not image_path or not manifest_path:
            return
        body = {"manifest_path": manifest_path, "image_path": image_path, "force": True}
        with self.gateway("POST", f"{prefix}/install-package", json=body) as response:
            task_id = self.data(response).get("task_id")
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
                    response.failure(f"{action}: {answer(response)}")
        with self.gateway("DELETE", f"{prefix}/{app_id}", name=f"gateway {prefix}/[id]") as response:
            check_json(response, "code", 0)

    @staticmethod
    def data(response: Any) -> dict[str, Any]:
        """Check a ``{"code": 0, "data": {...}}`` answer; its ``data`` ({} when it is not one)."""
        check_json(response, "code", 0)
        try:
            data = response.json().get("data") if response.status_code == 200 else None
        except (ValueError, AttributeError):
            data = None
        return data if isinstance(data, dict) else {}

    def wait_installed(self, task_id: str) -> bool:
        for _ in range(INSTALL_POLLS):
            path = f"/api/v1/apps/install-progress/{task_id}"
            with self.gateway("GET", path, name="gateway /api/v1/apps/install-progress/[task]") as response:
                phase = self.data(response).get("phase")
            if phase == "complete":
                return True
            if phase in (None, "error"):
                return False
            self.wait()
        return False


class H264Viewer(HttpUser):
    """A viewer of the camera's live feed ``/api/v1/h264/{TWIN_H264_STREAM}`` (WebSocket,
    ``?token=``): watches for ``WATCH_S`` seconds, hangs up, waits, watches again. Recorded as
    ``... (connect)``, the time from opening the socket to the SPS/PPS frame, and ``... (frame)``,
    one entry per access unit with its size in bytes and the gap since the previous one as its
    time. A frame without the device's 18-byte header, a text frame (the device's
    ``{"error": ...}``) or the feed closing early is a failure."""

    fixed_count = H264_VIEWERS
    wait_time = between(1.0, 3.0)

    def on_start(self) -> None:
        self.token = gateway_login(self).removeprefix("Bearer ")

    @tag("video")
    @task
    def watch(self) -> None:
        name = f"gateway /api/v1/h264/{H264_STREAM}"
        url = f"{ws_url(GATEWAY_URL)}/api/v1/h264/{H264_STREAM}?token={self.token}"
        tls = insecure_tls() if url.startswith("wss:") else None
        started = time.perf_counter()
        try:
            socket = connect(url, ssl=tls, max_size=None, open_timeout=10, close_timeout=1)
        except (OSError, InvalidHandshake) as err:
            record(self, "WS", f"{name} (connect)", started, error=err)
            return
        with socket:
            frames = 0
            try:
                last = started
                deadline = time.perf_counter() + WATCH_S
                while (remaining := deadline - time.perf_counter()) > 0:
                    try:
                        message = socket.recv(timeout=min(remaining, FRAME_TIMEOUT_S))
                    except TimeoutError:
                        if remaining > FRAME_TIMEOUT_S:
                            raise TimeoutError(f"no frame for {FRAME_TIMEOUT_S:g} s") from None
                        break
                    entry = f"{name} ({'frame' if frames else 'connect'})"
                    record(self, "WS", entry, last, len(message), frame_error(message))
                    last = time.perf_counter()
                    frames += 1
            except (ConnectionClosed, TimeoutError, OSError) as err:
                record(self, "WS", f"{name} ({'frame' if frames else 'connect'})", last, error=err)


def insecure_tls() -> ssl.SSLContext:
    """TLS without certificate checks: the twin's gateway certificates are self-signed."""
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


def frame_error(message: str | bytes) -> Exception | None:
    """Why ``message`` is not one of the device's framed access units (None if it is one)."""
    if isinstance(message, str):
        return ValueError(f"text frame: {message[:200]}")
    if len(message) <= HEADER.size or HEADER.unpack_from(message)[0] != MAGIC:
        return ValueError("no 0xFFD8FF00 frame header")
    return None
