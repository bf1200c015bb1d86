"""Byte for byte through the passthrough: for the contract's deterministic answers, the body fetched
from the stand-in device directly and the one fetched through the front twin's passthrough are the
same bytes (the automation server's per-request id aside), with the same status and content type.
The stand-in (a ``twin run`` process) runs on the step clock, so nothing moves between the two fetches."""

from __future__ import annotations

import httpx
import pytest

from tests.api.members.test_passthrough import REQUEST_ID
from tests.contract.backends import TWIN_API_KEY, TWIN_GATEWAY_PASSWORD, Camera, Server
from tests.standin import StandIn
from twin.serve import Running

pytestmark = [pytest.mark.asyncio(loop_scope="session"), pytest.mark.socket]

V1 = "/api/v1"


async def both(http: httpx.AsyncClient, pair: tuple[StandIn, Running], member: str, path: str, **kw):
    up, front = pair
    direct = await http.request(kw.pop("method", "GET"), up.url(member) + path, **kw)
    relayed = await http.request(direct.request.method, front.url(member) + path, **kw)
    return direct, relayed


def identical(direct: httpx.Response, relayed: httpx.Response) -> None:
    assert relayed.status_code == direct.status_code, relayed.text
    assert relayed.headers.get("content-type") == direct.headers.get("content-type")
    assert REQUEST_ID.sub(b"", relayed.content) == REQUEST_ID.sub(b"", direct.content)


@pytest.mark.parametrize(
    ("path", "signed_in"),
    [
        ("/auth/public-key", False),
        ("/system/health", False),
        ("/system/info", False),  # the 401
        ("/system/info", True),
        ("/device-info", True),
        ("/media/config", True),
        ("/media/image", True),
        ("/media/status", True),
        ("/files", True),
        ("/ai/models/no-such-model", True),
        ("/no/such/route", True),
    ],
)
async def test_gateway_answers_are_relayed_byte_for_byte(
    twin_pair: tuple[StandIn, Running], http: httpx.AsyncClient, path: str, signed_in: bool
) -> None:
    up, _ = twin_pair
    camera = Camera(up.url("cam-01/http"), password=TWIN_GATEWAY_PASSWORD)
    headers = await camera.auth(http) if signed_in else {}
    identical(*await both(http, twin_pair, "cam-01/http", V1 + path, headers=headers))


async def test_gateway_login_failures_are_relayed_byte_for_byte(
    twin_pair: tuple[StandIn, Running], http: httpx.AsyncClient
) -> None:
    for body in ({"username": "admin", "password": "wrong", "timestamp": 0}, {"username": "admin"}):
        identical(*await both(http, twin_pair, "cam-01/http", "/api/login", method="POST", json=body))


@pytest.mark.parametrize(
    ("path", "signed_in"),
    [
        ("/api/health", False),
        ("/api/devices", False),  # the 401
        ("/api/devices?page=1&limit=2", True),
        ("/api/devices/no-such-device-7f3a", True),
        ("/api/device-types", True),
        ("/api/auth/status", False),
    ],
)
async def test_automation_answers_are_relayed_byte_for_byte(
    twin_pair: tuple[StandIn, Running], http: httpx.AsyncClient, path: str, signed_in: bool
) -> None:
    server = Server(twin_pair[0].url("automation"), api_key=TWIN_API_KEY)
    headers = await server.auth(http) if signed_in else {}
    identical(*await both(http, twin_pair, "automation", path, headers=headers))
