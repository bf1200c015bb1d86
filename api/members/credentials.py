"""The twin's own start-up check that a real member accepts the credential it was given, so that a
wrong one is told at start rather than at a client's first request: an automation server's API key
on a route that checks it, a camera's login through the device's RSA login
(``GET /api/v1/auth/public-key``, then ``POST /api/login`` with the password encrypted under that
key) followed by a logout, so that no session of the twin's stays on the device. Neither the
password, the key nor a token is logged.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Mapping
from typing import Protocol

import httpx
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa

from api.members.passthrough import Passthrough
from api.members.upstream import PROBE_TIMEOUT_S, Upstream

log = logging.getLogger("twin.passthrough")


def _encrypted(password: str, pem: object) -> str:
    """The password as the device's web console sends it; plaintext when the key is not usable
    (the device then takes it as plaintext too)."""
    try:
        key = serialization.load_pem_public_key(str(pem).encode())
    except ValueError:
        return password
    if not isinstance(key, rsa.RSAPublicKey):
        return password
    return base64.b64encode(key.encrypt(password.encode(), padding.PKCS1v15())).decode()


async def login_status(upstream: Upstream, username: str, password: str) -> int | None:
    """The status the device answers the login with (200: the credential is good; 401: it is
    not); ``None`` if the device could not be reached."""
    client = upstream.client
    try:
        key = await client.get("/api/v1/auth/public-key", timeout=PROBE_TIMEOUT_S)
        data = key.json().get("data") if key.status_code == 200 else None
        data = data if isinstance(data, dict) else {}
        body = {
            "username": username,
            "password": _encrypted(password, data.get("public_key", "")),
            "timestamp": data.get("unix_timestamp", 0),
        }
        login = await client.post("/api/login", json=body, timeout=PROBE_TIMEOUT_S)
        if login.status_code == 200:
            token = (login.json().get("data") or {}).get("token", "")
            await client.post("/api/v1/logout", headers={"Authorization": token}, timeout=PROBE_TIMEOUT_S)
    except (httpx.HTTPError, ValueError, AttributeError) as err:
        log.warning("twin: real %s is unreachable for its login (%s)", upstream.name, type(err).__name__)
        return None
    return login.status_code


async def credential_check(
    app: Passthrough, api_key: str | None = None, login: tuple[str, str] | None = None
) -> tuple[int | None, str]:
    """The real member's answer to the twin's check (``None``: unreachable) and what was checked:
    ``login``, ``API key``, or ``""`` when the twin has no credential for it (then it only answers)."""
    if login is not None:
        return await login_status(app.upstream, *login), "login"
    return await app.probe(api_key), "API key" if api_key else ""


class Credentials(Protocol):
    """What the twin was given to check a real member with (``twin.settings.RealMember``)."""

    @property
    def api_key(self) -> str | None: ...

    @property
    def login(self) -> tuple[str, str] | None: ...


async def refused_credentials(apps: Mapping[str, Passthrough], given: Mapping[str, Credentials]) -> list[str]:
    """Check each real member in ``apps`` with the credential ``given`` for it; what refused it, in
    words. A member that cannot be reached is only logged: a device may come up later."""
    refused = []
    for name, app in apps.items():
        status, what = await credential_check(app, given[name].api_key, given[name].login)
        if what and status in (401, 403):
            refused.append(f"real {name} refused the twin's {what} (HTTP {status})")
            log.warning("twin: %s", refused[-1])
        elif status is not None:
            log.info("twin: real %s answers (HTTP %d%s)", name, status, f" to its {what}" if what else "")
    return refused
