"""The control plane's API console (``/docs``) works with no network: the page names no other host,
its script, style sheet and icon are served by the control plane itself, and in Chromium, with every
request to another origin refused, it renders the control plane's routes."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from playwright.async_api import Route, async_playwright

from tests.conftest import CHROMIUM_ARGS
from tests.sockets import socket_settings
from twin.serve import build, start, stop


async def test_docs_reference_only_the_control_planes_own_assets(control: httpx.AsyncClient) -> None:
    page = await control.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    assert "://" not in page.text and "//cdn" not in page.text
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert len(assets) == 3 and all(a.startswith("/docs/") for a in assets)
    for asset in assets:
        served = await control.get(asset)
        assert served.status_code == 200 and len(served.content) > 100, asset
    assert "'/docs/openapi.json'" in page.text
    doc = (await control.get("/docs/openapi.json")).json()
    assert doc["openapi"] == "3.0.3" and "/clock/advance" in doc["paths"]
    assert "anyOf" not in str(doc["paths"]["/reset"])  # 3.0 spells an optional body as nullable


@pytest.mark.parametrize("path", ["/docs/nothing.js", "/docs/%2e%2e/app.py", "/docs/..%2fconsole.py"])
async def test_an_unknown_or_escaping_docs_asset_is_404(control: httpx.AsyncClient, path: str) -> None:
    resp = await control.get(path)
    assert resp.status_code == 404
    assert resp.json()["error"]["code"] == "not_found"


@pytest.mark.socket
@pytest.mark.timeout(600)
async def test_docs_render_in_chromium_with_the_network_cut(chromium: str, tmp_path: Path) -> None:
    started = await start(build(socket_settings()), tmp_path)
    base = started.url("control")
    foreign: list[str] = []

    async def only_the_control_plane(route: Route) -> None:
        if route.request.url.startswith(base + "/"):
            await route.continue_()
        else:
            foreign.append(route.request.url)
            await route.abort()

    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            try:
                page = await browser.new_page()
                await page.route("**/*", only_the_control_plane)
                await page.goto(f"{base}/docs")
                title = await page.wait_for_selector(".swagger-ui .info .title", timeout=30_000)
                assert "Twin control plane" in await title.inner_text()
                await page.wait_for_selector('[data-path="/clock/advance"]', timeout=30_000)
            finally:
                await browser.close()
    finally:
        await stop(started)
    assert foreign == []
