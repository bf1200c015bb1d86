"""Fixtures of the contract suite: ``backend`` runs each test against the twin, against a twin
behind the passthrough adapter, and against real hardware when the environment names it.

The ``twin`` backend is a twin in this process, served on loopback port 0 over HTTP. The
``passthrough`` backend is a front twin whose cam-01 and automation server are "real" ones: a
second twin running as its own process (``twin run``, step clock), as a device on the network
would be; its camera is reached over HTTPS with the self-signed certificate a real camera has.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import pytest_asyncio

from tests.conftest import SCENARIOS
from tests.contract.backends import (
    BACKENDS,
    NO_CAMERA,
    NO_HARDWARE,
    NO_SERVER,
    PASSTHROUGH,
    TWIN,
    TWIN_API_KEY,
    TWIN_GATEWAY_PASSWORD,
    TWIN_PASSWORD,
    Backend,
    Camera,
    Server,
    hardware,
)
from tests.sockets import socket_settings
from tests.standin import StandIn, standin_process
from twin.serve import Running, build, start, stop
from twin.settings import LOOPBACK, Settings


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def in_process(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Running]:
    """The twin in this process: the ``twin`` backend."""
    running = await start(build(socket_settings(api_key=TWIN_API_KEY)), tmp_path_factory.mktemp("twin"))
    try:
        yield running
    finally:
        await stop(running)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def twin_pair(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[tuple[StandIn, Running]]:
    """(stand-in process, front twin): the front's cam-01 and automation server are the stand-in's."""
    root: Path = tmp_path_factory.mktemp("contract")
    async with standin_process(root, TWIN_API_KEY) as standin:
        front_settings = Settings(
            scenario=SCENARIOS / "test.yaml",
            **LOOPBACK,
            real_automation=standin.url("automation"),
            real_automation_api_key=TWIN_API_KEY,
            real_cameras=(f"cam-01={standin.url('cam-01/http')}",),
        )
        front = await start(build(front_settings), root)
        try:
            yield standin, front
        finally:
            await stop(front)


def _twin_backend(name: str, running: Running, scheme: str) -> Backend:
    return Backend(
        name,
        Camera(running.url(f"cam-01/{scheme}"), password=TWIN_GATEWAY_PASSWORD),
        Server(running.url("automation"), "admin", TWIN_PASSWORD, TWIN_API_KEY, first_run=True),
    )


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def signed_in(http: httpx.AsyncClient) -> AsyncIterator[list[Backend]]:
    """The backends used in this run, signed out of at its end."""
    backends: list[Backend] = []
    yield backends
    for used in backends:
        for member in (used.camera, used.server):
            if member is not None:
                await member.logout(http)


@pytest.fixture(scope="session", params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> Backend:
    """Made once per session and backend, so each keeps its sign-ins across tests. The twins
    start only when a twin backend is asked for (``-k real`` starts none)."""
    if request.param in (TWIN, PASSTHROUGH):
        # both twins start before the sign-ins, so these are signed out while they still serve
        twin, (_, front) = request.getfixturevalue("in_process"), request.getfixturevalue("twin_pair")
        # the passthrough over HTTPS with its self-signed certificate
        made = (
            _twin_backend(TWIN, twin, "http")
            if request.param == TWIN
            else _twin_backend(PASSTHROUGH, front, "https")
        )
    else:
        found = hardware(os.environ)
        if found is None:
            pytest.skip(NO_HARDWARE)
        made = found
    request.getfixturevalue("signed_in").append(made)  # after the twins: signed out before they stop
    return made


@pytest.fixture
def camera(backend: Backend) -> Camera:
    """The backend's edge gateway (cam-01 on the twins)."""
    if backend.camera is None:
        pytest.skip(NO_CAMERA)
    return backend.camera


@pytest.fixture
def server(backend: Backend) -> Server:
    """The backend's automation server."""
    if backend.server is None:
        pytest.skip(NO_SERVER)
    return backend.server


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def http() -> AsyncIterator[httpx.AsyncClient]:
    """One client for the run. Certificates are not verified: a camera serves HTTPS with a
    self-signed certificate made on the device."""
    async with httpx.AsyncClient(verify=False, timeout=30) as client:
        yield client
