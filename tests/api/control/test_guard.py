"""The control plane obeys only its user (:mod:`api.control.guard`): no cross-site request, no
foreign ``Host``, JSON bodies only, and a token when it is bound beyond loopback."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest
import websockets
from fastapi import FastAPI, WebSocket

from api.control.guard import COOKIE, ControlGuard, control_token, is_loopback
from tests.sockets import serving_app, socket_settings
from twin.serve import banner, build, start, stop

EVIL = "http://evil.example"


@pytest.mark.socket
async def test_a_web_page_cannot_reset_the_twin(tmp_path: Path) -> None:
    """The finding: POST /reset with a foreign Origin and text/plain erased everything."""
    running = await start(build(socket_settings()), tmp_path)
    try:
        base = running.url("control")
        async with httpx.AsyncClient(base_url=base) as http:
            assert (await http.post("/clock/advance", json={"seconds": 5})).json()["sim_time"] == 5
            tries = [
                {"headers": {"origin": EVIL, "content-type": "text/plain"}, "content": "{}"},
                {"headers": {"origin": EVIL}},
                {"headers": {"referer": EVIL + "/page"}},
                {"headers": {"origin": "null"}},
                {"headers": {"content-type": "text/plain"}, "content": "{}"},
                {"headers": {"content-type": "application/x-www-form-urlencoded"}, "content": "seed=1"},
                {"headers": {"content-type": "multipart/form-data; boundary=x"}, "content": "--x--"},
                {"headers": {"host": "evil.example:9380"}},  # DNS rebinding
            ]
            for kwargs in tries:
                resp = await http.post("/reset", **kwargs)
                assert resp.status_code in (403, 415), kwargs
                assert resp.json()["error"]["code"] in ("forbidden", "invalid_input")
            assert (await http.get("/clock")).json()["sim_time"] == 5  # nothing was reset
            for path in ("/clock", "/journal", "/"):  # reads are refused too on a foreign Host
                resp = await http.get(path, headers={"host": "attacker.example"})
                assert resp.status_code == 403 and resp.json()["error"]["code"] == "forbidden"
            assert (await http.post("/clock/pause", headers={"origin": base})).json()["paused"] is True
            reset = await http.post("/reset", json={}, headers={"origin": base, "referer": base + "/"})
            assert reset.status_code == 200 and reset.json()["sim_time"] == 0
            assert (await http.post("/clock/resume")).status_code == 200  # no Origin: not a browser
            assert (await http.get("/clock", headers={"host": "localhost"})).status_code == 200
            assert "?token=" not in banner(running) and running.control_token is None
    finally:
        await stop(running)


def _app() -> ControlGuard:
    app = FastAPI()

    @app.get("/health")
    async def health() -> dict:
        return {"status": "ok"}

    @app.get("/clock")
    async def clock() -> dict:
        return {"sim_time": 0}

    @app.post("/reset")
    async def reset() -> dict:
        return {"reset": True}

    @app.websocket("/ws")
    async def ws(websocket: WebSocket) -> None:
        await websocket.accept()
        await websocket.send_text("hi")
        await websocket.close()

    return ControlGuard(app, token="s3cret", names=["twin.lan"])


async def test_beyond_loopback_every_route_needs_the_token() -> None:
    async with serving_app(_app()) as base, httpx.AsyncClient(base_url=base) as http:
        assert (await http.get("/health")).status_code == 200
        for method, path in (("GET", "/clock"), ("POST", "/reset")):
            resp = await http.request(method, path)
            assert resp.status_code == 401 and resp.headers["www-authenticate"] == "Bearer"
            assert resp.json()["error"]["code"] == "unauthenticated"
            wrong = await http.request(method, path, headers={"authorization": "Bearer nope"})
            assert wrong.status_code == 401
            right = await http.request(method, path, headers={"authorization": "Bearer s3cret"})
            assert right.status_code == 200
        assert (await http.post("/reset", params={"token": "s3cret"})).status_code == 401  # GET only
        opened = await http.get("/clock", params={"token": "s3cret"})  # the console's first visit
        assert opened.status_code == 200
        assert f"{COOKIE}=s3cret" in opened.headers["set-cookie"]
        assert "SameSite=Strict" in opened.headers["set-cookie"]
        assert (await http.post("/reset")).status_code == 200  # the cookie from now on
        http.cookies.clear()
        assert (await http.get("/clock", headers={"host": "twin.lan:1"})).status_code == 401
        assert (await http.get("/clock", headers={"host": "other.lan"})).status_code == 403
        ws_url = base.replace("http", "ws") + "/ws"
        with pytest.raises(websockets.InvalidStatus) as refused:
            await websockets.connect(
                ws_url, additional_headers={"authorization": "Bearer s3cret", "origin": EVIL}
            )
        assert refused.value.response.status_code == 403
        async with websockets.connect(ws_url, additional_headers={"authorization": "Bearer s3cret"}) as ws:
            assert await ws.recv() == "hi"


def test_the_token_is_kept_in_the_state_dir(tmp_path: Path) -> None:
    token = control_token(tmp_path)
    path = tmp_path / "control-token"
    assert path.read_text().strip() == token and len(token) >= 40
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert control_token(tmp_path) == token  # the same across restarts
    assert control_token(None) != control_token(None)


@pytest.mark.parametrize(
    ("host", "loopback"),
    [("127.0.0.1", True), ("127.0.1.5", True), ("::1", True), ("[::1]", True), ("localhost", True),
     ("0.0.0.0", False), ("::", False), ("192.168.1.4", False), ("twin.lan", False)],
)  # fmt: skip
def test_what_counts_as_loopback(host: str, loopback: bool) -> None:
    assert is_loopback(host) is loopback
