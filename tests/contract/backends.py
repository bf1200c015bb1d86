"""The backends the contract suite runs against, and how a client signs in to each.

A backend is a camera's edge gateway and an automation server reached over real sockets: the
in-process twin, a twin behind the passthrough adapter (a second twin standing in for the real
device), or real hardware named by environment variables. The same test body runs against all
of them; a backend without a member (real hardware with only a camera, say) skips that member's
tests, naming the variable that would enable them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from dataclasses import dataclass, field

import httpx
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding

TWIN = "twin"
PASSTHROUGH = "passthrough"
REAL = "real"
BACKENDS = (TWIN, PASSTHROUGH, REAL)

TWIN_PASSWORD = "contract123"
"""The twins' automation admin, made by first-run setup."""
TWIN_GATEWAY_PASSWORD = "password"
"""The simulated camera's shipped default (``configs/platform-api.yaml``)."""
TWIN_API_KEY = "nmk_" + "ab" * 16
"""The stand-in server's seeded key (``NEOMIND_API_KEY`` there); the passthrough checks it at start."""

GATEWAY = "TWIN_REAL_GATEWAY"
GATEWAY_USERNAME = "TWIN_REAL_GATEWAY_USERNAME"
GATEWAY_PASSWORD = "TWIN_REAL_GATEWAY_PASSWORD"
AUTOMATION = "TWIN_REAL_AUTOMATION"
AUTOMATION_API_KEY = "TWIN_REAL_AUTOMATION_API_KEY"
AUTOMATION_USERNAME = "TWIN_REAL_AUTOMATION_USERNAME"
AUTOMATION_PASSWORD = "TWIN_REAL_AUTOMATION_PASSWORD"

NO_HARDWARE = (
    f"no hardware named: set {GATEWAY}=https://<camera> (with {GATEWAY_PASSWORD}) and/or "
    f"{AUTOMATION}=http://<server>:9375 (with {AUTOMATION_API_KEY} or "
    f"{AUTOMATION_USERNAME}/{AUTOMATION_PASSWORD})"
)
NO_CAMERA = f"no camera named: set {GATEWAY}=https://<camera> to run the gateway contract against it"
NO_SERVER = f"no automation server named: set {AUTOMATION}=http://<server>:9375 to run its contract"
NO_CAMERA_PASSWORD = f"the camera's password is unknown: set {GATEWAY_PASSWORD}"
NO_SERVER_LOGIN = f"no user to sign in as: set {AUTOMATION_USERNAME} and {AUTOMATION_PASSWORD}"
NO_SERVER_KEY = f"no API key: set {AUTOMATION_API_KEY}"


def encrypt(pem: str, password: str) -> str:
    """The login form of a password: base64 of RSA-PKCS#1 v1.5 under the device's public key."""
    key = serialization.load_pem_public_key(pem.encode())
    return base64.b64encode(key.encrypt(password.encode(), padding.PKCS1v15())).decode()  # type: ignore[union-attr]


@dataclass
class Camera:
    """An edge gateway: ``url`` is its base (``https://<device>`` or ``http://host:port``)."""

    url: str
    username: str = "admin"
    password: str | None = field(default=None, repr=False)
    _token: str | None = field(default=None, repr=False)

    def ws(self, path: str) -> str:
        return self.url.replace("http", "ws", 1) + path

    async def login(self, http: httpx.AsyncClient, password: str | None = None) -> httpx.Response:
        """The web console's sign-in: fetch the public key, encrypt the password, send it with the
        device's own time (retried once on a clock-skew refusal, as the console does)."""
        password = password if password is not None else self.password
        if password is None:
            pytest.skip(NO_CAMERA_PASSWORD)
        for _ in range(2):
            key = await http.get(self.url + "/api/v1/auth/public-key")
            if key.status_code == 200:
                data = key.json()["data"]
                body = {
                    "username": self.username,
                    "password": encrypt(data["public_key"], password),
                    "timestamp": data["unix_timestamp"],
                }
            else:  # no key pair on the device: it takes the password as it is
                body = {"username": self.username, "password": password, "timestamp": 0}
            resp = await http.post(self.url + "/api/login", json=body)
            if not (resp.status_code == 400 and resp.json().get("code") == 1005):
                break
        return resp

    async def token(self, http: httpx.AsyncClient) -> str:
        """A session token, ``Bearer `` included as the device gives it; one login per run."""
        if self._token is None:
            resp = await self.login(http)
            assert resp.status_code == 200, resp.text
            self._token = resp.json()["data"]["token"]
        return self._token

    async def auth(self, http: httpx.AsyncClient) -> dict[str, str]:
        return {"Authorization": await self.token(http)}

    async def logout(self, http: httpx.AsyncClient) -> None:
        """End the run's session: the device keeps sessions until it restarts."""
        if self._token is not None:
            await http.post(self.url + "/api/v1/logout", headers={"Authorization": self._token})
            self._token = None


@dataclass
class Server:
    """An automation server: ``url`` is its base without ``/api`` (``http://host:9375``).
    ``first_run`` lets the suite create the admin through first-run setup (twins only: a real
    server is never set up by the suite)."""

    url: str
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    first_run: bool = False
    _jwt: str | None = field(default=None, repr=False)

    def ws(self, path: str) -> str:
        return self.url.replace("http", "ws", 1) + path

    def credentials(self) -> dict[str, str]:
        if not (self.username and self.password):
            pytest.skip(NO_SERVER_LOGIN)
        return {"username": self.username, "password": self.password}

    async def jwt(self, http: httpx.AsyncClient) -> str:
        """A user session's JWT; one login per run."""
        if self._jwt is None:
            body = self.credentials()
            if self.first_run:
                status = (await http.get(self.url + "/api/setup/status")).json()
                if status["setup_required"]:
                    made = await http.post(self.url + "/api/setup/initialize", json=body)
                    assert made.status_code == 200, made.text
            resp = await http.post(self.url + "/api/auth/login", json=body)
            assert resp.status_code == 200, resp.text
            self._jwt = resp.json()["token"]
        return self._jwt

    async def auth(self, http: httpx.AsyncClient) -> dict[str, str]:
        """A session's ``Authorization`` header, else the API key's header."""
        if self.username and self.password:
            return {"Authorization": f"Bearer {await self.jwt(http)}"}
        return {"X-API-Key": self.key()}

    async def logout(self, http: httpx.AsyncClient) -> None:
        if self._jwt is not None:
            await http.post(self.url + "/api/auth/logout", headers={"Authorization": f"Bearer {self._jwt}"})
            self._jwt = None

    def key(self) -> str:
        if not self.api_key:
            pytest.skip(NO_SERVER_KEY)
        return self.api_key


@dataclass
class Backend:
    name: str
    camera: Camera | None
    server: Server | None
    hardware: bool = False
    """Real hardware: only read-only checks and writes that are reverted."""


def hardware(environ: Mapping[str, str]) -> Backend | None:
    """The real camera and server named by ``environ``; ``None`` when neither is."""
    camera = server = None
    if environ.get(GATEWAY):
        camera = Camera(
            environ[GATEWAY].rstrip("/"),
            environ.get(GATEWAY_USERNAME) or "admin",
            environ.get(GATEWAY_PASSWORD) or None,
        )
    if environ.get(AUTOMATION):
        password = environ.get(AUTOMATION_PASSWORD) or None
        server = Server(
            environ[AUTOMATION].rstrip("/"),
            (environ.get(AUTOMATION_USERNAME) or "admin") if password else None,
            password,
            environ.get(AUTOMATION_API_KEY) or None,
        )
    if camera is None and server is None:
        return None
    return Backend(REAL, camera, server, hardware=True)
