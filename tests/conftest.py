"""Shared fixtures: a small world in step mode, in-process clients for each app, and Debian's Chromium
for the tests that drive a page in a real browser."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from twin.fleet import CameraSpec, WorldConfig, default_sensor_group
from twin.serve import Twin, build
from twin.settings import Settings
from twin.wings import KINDS
from twin.world import World

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"


@pytest.fixture
def world_config() -> WorldConfig:
    return WorldConfig(seed=7, sensors=(default_sensor_group(4),), cameras=CameraSpec(1))


@pytest.fixture
def world(world_config: WorldConfig) -> World:
    return World(world_config, record_trace=True, kinds=KINDS)


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings(scenario=SCENARIOS / "test.yaml", step=True)


@pytest.fixture
def twin(settings: Settings) -> Twin:
    return build(settings)


def _client(app, base_url: str) -> httpx.AsyncClient:
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url=base_url)


@pytest.fixture
async def automation(twin: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(twin.automation_app, "http://automation") as client:
        yield client


@pytest.fixture
async def gateway(twin: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(twin.gateway_apps["cam-01"], "http://cam-01") as client:
        yield client


@pytest.fixture
async def control(twin: Twin) -> AsyncIterator[httpx.AsyncClient]:
    async with _client(twin.control_app, "http://control") as client:
        yield client


async def admin_token(client: httpx.AsyncClient, username: str = "admin", password: str = "secret123") -> str:
    resp = await client.post("/api/setup/initialize", json={"username": username, "password": password})
    assert resp.status_code == 200, resp.text
    return resp.json()["token"]


async def gateway_token(client: httpx.AsyncClient) -> str:
    resp = await client.post("/api/login", json={"username": "admin", "password": "password"})
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]["token"]


CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--disable-sync",
    "--autoplay-policy=no-user-gesture-required",
]
"""Flags for a headless Chromium in the test suite: no sandbox (CI runs as root), nothing fetched from
the network, and video that plays without a user gesture."""


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's ``chromium``, installed here when it is missing and this is root with apt-get (as on
    CI); skipped, saying how to install it, only where it cannot be installed. Playwright drives it
    through ``executable_path``: ``playwright install`` (a browser download) is never needed."""
    if _chromium() is None and os.geteuid() == 0 and shutil.which("apt-get"):
        env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        install = ["apt-get", "install", "-y", "--no-install-recommends", "chromium"]
        for command in (["apt-get", "update"], install):
            subprocess.run(command, env=env, capture_output=True, timeout=900, check=False)
    found = _chromium()
    if found is None:
        pytest.skip(
            "Chromium is missing: install Debian's package (`sudo apt-get install chromium`) or put a "
            "`chromium` binary on PATH; the tests use it directly, never `playwright install`"
        )
    return found
