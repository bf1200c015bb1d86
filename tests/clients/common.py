"""What both reference clients share: the servers' addresses from the scenario runner's environment,
a pause on the world clock, and one HTTP call that never raises for a transport failure; the
camera's firmware and OS-upgrade calls, the automation event stream (SSE) and an MQTT connection."""

from __future__ import annotations

import io
import os
import tarfile
import threading
import time
from dataclasses import dataclass
from urllib.parse import urlparse

import httpx

USER, PASSWORD = "qa-client", "qa-secret-123"
WATCHED = ("env_sensor-0001", "env_sensor-0002")
WINDOW_S = 60
PAGE = 4


@dataclass
class Answer:
    status: int
    """0 when the connection failed (reset, refused, timed out)."""
    body: dict
    headers: httpx.Headers


class Env:
    def __init__(self) -> None:
        self.api = os.environ.get("TWIN_AUTOMATION_URL", "http://127.0.0.1:9375") + "/api"
        self.control = os.environ.get("TWIN_CONTROL_URL")
        self.http = httpx.Client(timeout=10)
        self.token: str | None = None
        self.now = self._clock()

    def _clock(self) -> float:
        if self.control:
            return float(self.http.get(self.control + "/clock").json()["unix_time"])
        return time.time()

    def pause(self, seconds: float) -> None:
        """Sleep on the world clock when a scenario runner is there (deterministic runs)."""
        if self.control:
            resp = self.http.post(self.control + "/clock/sleep", json={"seconds": seconds}, timeout=None)
            self.now = float(resp.json()["unix_time"])
        else:
            time.sleep(seconds)
            self.now = time.time()

    def call(self, method: str, path: str, **kwargs) -> Answer:
        headers = {"Authorization": f"Bearer {self.token}"} if self.token else {}
        try:
            resp = self.http.request(method, self.api + path, headers=headers, **kwargs)
        except httpx.HTTPError:
            return Answer(0, {}, httpx.Headers())
        try:
            body = resp.json()
        except ValueError:
            body = {}
        return Answer(resp.status_code, body if isinstance(body, dict) else {}, resp.headers)

    def login(self) -> bool:
        creds = {"username": USER, "password": PASSWORD}
        answer = self.call("POST", "/setup/initialize", json=creds)
        if answer.status != 200:
            answer = self.call("POST", "/auth/login", json=creds)
        token = answer.body.get("token") or answer.body.get("data", {}).get("token")
        if answer.status == 200 and token:
            self.token = token
            return True
        return False


def rounds() -> int:
    return int(os.environ.get("TWIN_CLIENT_ROUNDS", "20"))


def page_of(answer: Answer) -> tuple[list[float], object]:
    """Timestamps of a telemetry page (newest first) and its ``next_cursor``."""
    data = answer.body.get("data", {})
    points = data.get("data", {}).get("temperature", [])
    return [p["timestamp"] for p in points], data.get("pagination", {}).get("next_cursor")


def os_package(version: str = "2.0") -> bytes:
    """An OS-upgrade package as the camera takes it: an SWUpdate image (cpio "newc") whose
    ``sw-description`` names the version."""
    return b"070701" + b"0" * 104 + f'software = {{ version = "{version}"; }};'.encode() + b"\0" * 512


def firmware(version: str = "2.0.0") -> bytes:
    """A firmware package as the camera takes it: a gzip'd tar holding ``VERSION``."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = version.encode()
        info = tarfile.TarInfo("VERSION")
        info.size = len(data)
        tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Gateway:
    """The camera's edge gateway: login, a firmware install, and the public OTA status."""

    def __init__(self, env: Env) -> None:
        self.env = env
        self.base = os.environ.get("TWIN_GATEWAY_URL", "http://127.0.1.1:8080")
        self.token: str | None = None

    def call(self, method: str, path: str, **kwargs) -> Answer:
        headers = {"Authorization": self.token} if self.token else {}
        try:
            resp = self.env.http.request(method, self.base + path, headers=headers, **kwargs)
        except httpx.HTTPError:
            return Answer(0, {}, httpx.Headers())
        try:
            body = resp.json()
        except ValueError:
            body = {}
        return Answer(resp.status_code, body if isinstance(body, dict) else {}, resp.headers)

    def login(self) -> bool:
        answer = self.call("POST", "/api/login", json={"username": "admin", "password": "password"})
        token = answer.body.get("data", {}).get("token") if answer.status == 200 else None
        self.token = token
        return token is not None

    def install(self) -> Answer:
        files = {"firmware": ("firmware.tar.gz", firmware(), "application/gzip")}
        return self.call("POST", "/api/v1/system/ota/install", files=files)

    def stream(self):
        """The device event bus relay (a WebSocket) and 101, or ``None`` and the refusal's status
        (0 when the device refused the connection itself)."""
        from websockets.exceptions import InvalidStatus
        from websockets.sync.client import connect

        raw = (self.token or "").removeprefix("Bearer ")
        url = self.base.replace("http", "ws", 1) + f"/api/v1/events/stream?token={raw}"
        try:
            return connect(url, open_timeout=5), 101
        except InvalidStatus as err:
            return None, err.response.status_code
        except (OSError, Exception):
            return None, 0

    @staticmethod
    def alive(ws) -> bool:
        """Whether a stream is still open (nothing the bus relays is read here)."""
        from websockets.exceptions import ConnectionClosed

        try:
            ws.recv(timeout=0.05)
        except TimeoutError:
            return True
        except ConnectionClosed:
            return False
        return True

    def ota_state(self) -> tuple[int, str | None]:
        answer = self.call("GET", "/api/v1/system/ota/status")
        data = answer.body.get("data", {})
        state = "reboot_confirmed" if data.get("reboot_confirmed") else data.get("status")
        return answer.status, state

    # A/B OS upgrade -------------------------------------------------------------------------
    def os_upgrade_start(self) -> str | None:
        """Upload, validate and install an OS package; the job id once it is installing."""
        files = {"package": ("os.swu", os_package(), "application/octet-stream")}
        answer = self.call("POST", "/api/v1/system/os-upgrade/upload", files=files)
        job_id = answer.body.get("data", {}).get("job_id") if answer.status == 200 else None
        if job_id is None:
            return None
        for step in ("validate", "install"):
            answer = self.call("POST", f"/api/v1/system/os-upgrade/{step}", json={"job_id": job_id})
            if answer.status != 200:
                return None
        return job_id

    def os_reboot(self, job_id: str) -> Answer:
        return self.call("POST", "/api/v1/system/os-upgrade/reboot", json={"job_id": job_id})

    def os_state(self) -> tuple[int, str | None]:
        answer = self.call("GET", "/api/v1/system/os-upgrade/status")
        return answer.status, answer.body.get("data", {}).get("status")


class EventStream:
    """The automation server's SSE event stream, read on a thread; :attr:`alive` until the server
    ends it (or refuses it: :attr:`status`)."""

    def __init__(self, env: Env) -> None:
        self.status = 0
        self.events = 0
        self._open = threading.Event()
        self._ended = threading.Event()
        url = f"{env.api}/events/stream"
        threading.Thread(target=self._read, args=(url, env.token), daemon=True).start()
        self._open.wait(10)

    def _read(self, url: str, token: str | None) -> None:
        try:
            with httpx.Client(timeout=None) as http, http.stream("GET", url, params={"token": token}) as resp:
                self.status = resp.status_code
                self._open.set()
                if resp.status_code == 200:
                    for line in resp.iter_lines():
                        self.events += line.startswith("data:")
        except httpx.HTTPError:
            pass
        finally:
            self._open.set()
            self._ended.set()

    @property
    def alive(self) -> bool:
        """Whether the stream is still open. The end of a stream the server closed is in the
        socket by the time a pause returns; the short wait lets the reader thread take it in."""
        return self.status == 200 and not self._ended.wait(0.05)


class Mqtt:
    """A device-side MQTT client on the runner's broker (``TWIN_MQTT_URL``), driven by hand
    (:meth:`pump`) so that nothing reconnects unless the client says so."""

    def __init__(self, client_id: str) -> None:
        import paho.mqtt.client as mqtt

        url = urlparse(os.environ.get("TWIN_MQTT_URL", "mqtt://127.0.0.1:1883"))
        self.host, self.port = url.hostname or "127.0.0.1", url.port or 1883
        self.client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=client_id)
        self.client.on_connect = lambda client, *_: client.subscribe("device/+/+/uplink")
        self.messages = 0
        self.client.on_message = self._count
        self.started = False

    def _count(self, *_) -> None:
        self.messages += 1

    def connect(self) -> bool:
        """Connect (or connect again); ``False`` when the broker refused or is not there."""
        try:
            if self.started:
                self.client.reconnect()
            else:
                self.client.connect(self.host, self.port, keepalive=60)
                self.started = True
        except OSError:
            return False
        for _ in range(40):
            self.client.loop(0.05)
            if self.client.is_connected():
                return True
        return False

    def pump(self) -> bool:
        """Handle what came in (messages, the broker going away); whether still connected."""
        for _ in range(3):
            self.client.loop(0.02)
        return self.client.is_connected()

    def close(self) -> None:
        if self.client.is_connected():
            self.client.disconnect()
            self.client.loop(0.05)
