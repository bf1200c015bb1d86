"""Logs, debug-log export and SSH settings through the gateway; the log stream and the web terminal
over real WebSockets with ``?token=`` auth (the terminal is a simulated shell over the virtual FS)."""

from __future__ import annotations

import asyncio
import io
import json
import re
import tarfile
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import ClientConnection, connect
from websockets.exceptions import ConnectionClosed, InvalidStatus

from api.gateway.routers.terminal import MAX_PENDING_LINES
from tests.conftest import gateway_token
from tests.sockets import socket_settings
from twin.camera.power import RESTART_DELAY_S
from twin.camera.wing import cameras_of
from twin.serve import Twin, build, start, stop

SERVICES = [
    "ai-runtime",
    "camera-daemon",
    "platform-api",
    "event-bus",
    "app-manager",
    "device-control",
    "sshd",
    "docker",
    "networkd",
]


@pytest.fixture
async def auth(gateway: httpx.AsyncClient) -> dict[str, str]:
    return {"Authorization": await gateway_token(gateway)}


async def test_services_and_files(twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    listed = (await gateway.get("/api/v1/logs/services", headers=auth)).json()["data"]["services"]
    assert [s["id"] for s in listed] == SERVICES and listed[7] == {"id": "docker", "name": "Docker"}
    files = (await gateway.get("/api/v1/logs/files", headers=auth)).json()["data"]["files"]
    by_path = {f["path"]: f for f in files}
    assert by_path["/var/log/aipc/sshd.log"]["service"] == "sshd"
    assert "service" not in by_path["/var/log/auth.log"]
    assert set(by_path["/var/log/aipc/ai-runtime.log"]) == {
        "path",
        "name",
        "size",
        "modified_time",
        "service",
    }


async def test_content_follows_the_world_clock(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    twin.clock.advance(600)
    params = {"type": "file", "target": "/var/log/syslog", "lines": "5"}
    tail = (await gateway.get("/api/v1/logs/content", params=params, headers=auth)).json()["data"]
    assert tail["type"] == "file" and tail["target"] == "/var/log/syslog" and tail["lines"] == 5
    assert len(tail["content"].splitlines()) == 5
    journal = await gateway.get(
        "/api/v1/logs/content", params={"type": "service", "target": "sshd"}, headers=auth
    )
    assert journal.json()["data"]["lines"] == 500  # the default
    lines = journal.json()["data"]["content"].splitlines()
    assert lines[0].endswith("sshd[106]: Started SSH Server.")
    twin.clock.advance(600)
    later = await gateway.get("/api/v1/logs/content", params=params, headers=auth)
    assert later.json()["data"]["content"] != tail["content"]
    download = await gateway.get(
        "/api/v1/logs/download", params={"type": "service", "target": "sshd"}, headers=auth
    )
    assert download.headers["content-disposition"] == 'attachment; filename="sshd.log"'
    assert download.text.splitlines()[: len(lines)] == lines


@pytest.mark.parametrize(
    ("params", "status", "code"),
    [
        ({"type": "service", "target": "../etc/passwd"}, 400, 1001),
        ({"type": "service", "target": "nosuch"}, 404, 4000),
        ({"type": "file", "target": "/etc/passwd"}, 400, 1001),
        ({"type": "file", "target": "/var/log/../../etc/shadow"}, 400, 1001),
        ({"type": "file", "target": "var/log/syslog"}, 400, 1001),
        ({"type": "file", "target": "/var/log/none.log"}, 404, 8000),
        ({"type": "journal", "target": "sshd"}, 400, 1001),
        ({"type": "service"}, 400, 1001),
        ({"type": "service", "target": "sshd", "lines": "many"}, 400, 1001),
    ],
)
async def test_content_refusals(
    gateway: httpx.AsyncClient, auth: dict[str, str], params: dict, status: int, code: int
) -> None:
    routes = ["/api/v1/logs/content"] + ([] if "lines" in params else ["/api/v1/logs/download"])
    for route in routes:
        resp = await gateway.get(route, params=params, headers=auth)
        assert resp.status_code == status and resp.json()["code"] == code, (route, resp.text)


async def test_debug_logs(twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    services = (await gateway.get("/api/v1/debug-logs/services", headers=auth)).json()["data"]["services"]
    assert services[0] == {"id": "ai-runtime", "name": "AI Runtime"} and len(services) == len(SERVICES)
    files = (await gateway.get("/api/v1/debug-logs/files", headers=auth)).json()["data"]["files"]
    assert {"path": "/var/log/auth.log"}.items() <= files[0].items()
    twin.clock.advance(120)
    export = await gateway.post(
        "/api/v1/debug-logs/export",
        json={"services": ["sshd", "platform-api"], "files": ["/var/log/auth.log"], "lines": 10},
        headers=auth,
    )
    assert export.headers["content-type"] == "application/gzip"
    with tarfile.open(fileobj=io.BytesIO(export.content), mode="r:gz") as tar:
        names = tar.getnames()
        sshd = tar.extractfile("journal/sshd.log").read().decode()  # type: ignore[union-attr]
    assert names == ["journal/sshd.log", "journal/platform-api.log", "files/auth.log"]
    assert "Started SSH Server." in sshd
    everything = await gateway.post("/api/v1/debug-logs/export", json={}, headers=auth)
    with tarfile.open(fileobj=io.BytesIO(everything.content), mode="r:gz") as tar:
        assert len(tar.getnames()) == len(SERVICES)
    for body in ({"lines": 0.5}, {"lines": 60000}, {"services": ["nosuch"]}, {"services": "sshd"}):
        bad = await gateway.post("/api/v1/debug-logs/export", json=body, headers=auth)
        assert bad.status_code == 400 and bad.json()["code"] == 1001, body


async def test_ssh_config_status_and_logs(
    twin: Twin, gateway: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    config = (await gateway.get("/api/v1/ssh/config", headers=auth)).json()["data"]["config"]
    assert {"Port": "22", "PermitRootLogin": "yes", "PasswordAuthentication": "yes"}.items() <= config.items()
    changed = await gateway.post(
        "/api/v1/ssh/config",
        json={"port": "2222", "permit_root_login": "prohibit-password", "restart_service": True},
        headers=auth,
    )
    assert changed.json()["data"] == {
        "status": "updated",
        "changes": {"Port": "2222", "PermitRootLogin": "prohibit-password"},
        "restarted": True,
    }
    empty = await gateway.post("/api/v1/ssh/config", json={"restart_service": True}, headers=auth)
    assert empty.status_code == 400
    assert empty.json()["error"]["detail"] == "No supported SSH configuration fields were provided"
    config = (await gateway.get("/api/v1/ssh/config", headers=auth)).json()["data"]["config"]
    assert config["Port"] == "2222" and config["PermitRootLogin"] == "prohibit-password"
    assert b"Port 2222\n" in cameras_of(twin.world)["cam-01"].fs.read("/etc/ssh/sshd_config")
    assert (await gateway.get("/api/v1/ssh/status", headers=auth)).json()["data"] == {"status": "active"}
    logs = (await gateway.get("/api/v1/ssh/logs", headers=auth)).json()["data"]["logs"]
    assert logs[-1].endswith("Server listening on 0.0.0.0 port 2222.")


async def test_ssh_config_refusals(gateway: httpx.AsyncClient, auth: dict[str, str]) -> None:
    plain = await gateway.post(
        "/api/v1/ssh/config",
        content=json.dumps({"port": "22"}),
        headers={**auth, "Content-Type": "text/plain"},
    )
    assert plain.status_code == 415
    assert plain.json() == {
        "code": 1001,
        "message": "Invalid request",
        "error": {"type": "validation", "detail": "Content-Type must be application/json"},
    }
    unknown = await gateway.post("/api/v1/ssh/config", json={"port": "22", "Banner": "x"}, headers=auth)
    assert unknown.status_code == 400 and unknown.json()["error"]["detail"] == 'json: unknown field "Banner"'
    for body, code in (
        ({"port": "99999"}, 1004),
        ({"permit_root_login": "maybe"}, 1004),
        ({"max_auth_tries": "0"}, 1004),
        ({"port": 22}, 1001),
        ({"restart_service": "yes"}, 1001),
    ):
        resp = await gateway.post("/api/v1/ssh/config", json=body, headers=auth)
        assert resp.status_code == 400 and resp.json()["code"] == code, body


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("GET", "/logs/services"),
        ("GET", "/logs/files"),
        ("GET", "/logs/content"),
        ("GET", "/logs/download"),
        ("GET", "/debug-logs/services"),
        ("GET", "/debug-logs/files"),
        ("POST", "/debug-logs/export"),
        ("GET", "/ssh/config"),
        ("POST", "/ssh/config"),
        ("GET", "/ssh/status"),
        ("GET", "/ssh/logs"),
    ],
)
async def test_routes_need_a_token(gateway: httpx.AsyncClient, method: str, path: str) -> None:
    resp = await gateway.request(method, "/api/v1" + path)
    assert resp.status_code == 401 and resp.json()["code"] == 2000


# Over real sockets -------------------------------------------------------------------------------
@pytest.fixture
async def device(tmp_path: Path):
    twin = build(socket_settings())
    running = await start(twin, tmp_path)
    base = running.url("cam-01/http")
    async with httpx.AsyncClient(base_url=base) as http:
        token = await gateway_token(http)
        try:
            yield twin, base.replace("http://", "ws://"), token.removeprefix("Bearer "), http
        finally:
            await stop(running)


async def read_until(ws: ClientConnection, needle: str, timeout: float = 30.0) -> str:
    seen = ""

    async def collect() -> str:
        nonlocal seen
        while needle not in seen:
            seen += await ws.recv()
        return seen

    return await asyncio.wait_for(collect(), timeout)


async def type_line(ws: ClientConnection, text: str) -> None:
    await ws.send(json.dumps({"type": "input", "data": text + "\r"}))


async def log_in(ws: ClientConnection) -> None:
    """The web terminal's in-band login as admin, up to the first prompt."""
    await read_until(ws, "login: ")
    await type_line(ws, "admin")
    await read_until(ws, "Password: ")
    await type_line(ws, "password")
    await read_until(ws, "# ")


@pytest.mark.socket
async def test_log_stream_sends_new_lines_and_ends_on_reboot(device) -> None:
    twin, ws_base, token, http = device
    url = f"{ws_base}/api/v1/logs/stream/ws?type=service&target=platform-api&token={token}"
    async with connect(url) as ws:
        cameras_of(twin.world)["cam-01"].logs.write("platform-api", "first line")
        cameras_of(twin.world)["cam-01"].logs.write("sshd", "not for this stream")
        twin.clock.advance(0.001)
        assert (await asyncio.wait_for(ws.recv(), 30)).endswith("platform-api[102]: first line")
        await http.post("/api/v1/system/restart", headers={"Authorization": f"Bearer {token}"})
        twin.clock.advance(RESTART_DELAY_S)
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 30)


@pytest.mark.socket
async def test_file_stream_follows_syslog(device) -> None:
    twin, ws_base, token, _ = device
    async with connect(
        f"{ws_base}/api/v1/logs/stream/ws?type=file&target=/var/log/syslog&token={token}"
    ) as ws:
        twin.clock.advance(120)
        lines = [await asyncio.wait_for(ws.recv(), 30) for _ in range(3)]
    assert all(" cam-01 " in line for line in lines)


@pytest.mark.socket
@pytest.mark.parametrize(
    ("query", "status", "code"),
    [
        ("type=service&target=sshd", 401, 2000),
        ("type=service&target=sshd&token=wrong", 401, 2000),
        ("type=file&target=/etc/passwd&token={t}", 400, 1001),
        ("type=service&target=nosuch&token={t}", 404, 4000),
    ],
)
async def test_log_stream_refusals(device, query: str, status: int, code: int) -> None:
    _, ws_base, token, _ = device
    with pytest.raises(InvalidStatus) as info:
        async with connect(f"{ws_base}/api/v1/logs/stream/ws?" + query.format(t=token)):
            pass
    assert info.value.response.status_code == status
    assert f'"code":{code}' in info.value.response.body.decode()


@pytest.mark.socket
async def test_terminal_login_and_a_shell_over_the_virtual_fs(device, tmp_path: Path) -> None:
    twin, ws_base, token, http = device
    async with connect(f"{ws_base}/api/v1/terminal/ws?token={token}") as ws:
        assert "AIPC Linux" in await read_until(ws, "login: ")
        await type_line(ws, "admin")
        echoed = await read_until(ws, "Password: ")
        assert "admin\r\n" in echoed
        await ws.send(json.dumps({"type": "resize", "cols": 120, "rows": 40}))
        await type_line(ws, "password")
        after = await read_until(ws, "# ")
        assert "password" not in after  # no echo while the password is typed
        await type_line(ws, "cat /etc/hostname")
        assert "cam-01\r\n" in await read_until(ws, "# ")
        await type_line(ws, "cd /data/aipc")
        await read_until(ws, "/data/aipc# ")
        await type_line(ws, "ls")
        assert "models" in await read_until(ws, "# ")
        await ws.send("echo written by the shell > /tmp/from-shell.txt\r")  # raw text, not JSON
        await read_until(ws, "# ")
        await type_line(ws, "rm -rf /")
        assert "refusing" in await read_until(ws, "# ")
        await type_line(ws, "journalctl -u sshd -n 1")
        assert "Accepted password for admin on web terminal" in await read_until(ws, "# ")
        await type_line(ws, "grep Started /var/log/auth.log")
        assert "Started SSH Server." in await read_until(ws, "# ")
        await type_line(ws, "tail -n 1 /etc/passwd")
        assert "aipc:x:1000" in await read_until(ws, "# ")
        await type_line(ws, "nmap localhost")
        assert "nmap: command not found" in await read_until(ws, "# ")
        await type_line(ws, "exit")
        assert "logout" in await read_until(ws, "logout")
        with pytest.raises(ConnectionClosed):
            await asyncio.wait_for(ws.recv(), 30)
    assert cameras_of(twin.world)["cam-01"].fs.read("/tmp/from-shell.txt") == b"written by the shell\n"
    assert cameras_of(twin.world)["cam-01"].fs.exists("/etc/passwd")
    assert not Path("/tmp/from-shell.txt").exists()
    read = await http.get(
        "/api/v1/files/content", params={"path": "/tmp/from-shell.txt"}, headers={"Authorization": token}
    )
    assert read.json()["data"]["content"] == "written by the shell\n"


@pytest.mark.socket
async def test_a_flood_of_typed_lines_is_run_in_order_and_none_is_lost(device) -> None:
    """More lines than the shell holds pending: the socket is read as the shell catches up."""
    _, ws_base, token, _ = device
    async with connect(f"{ws_base}/api/v1/terminal/ws?token={token}") as ws:
        await log_in(ws)
        count = MAX_PENDING_LINES * 4
        for n in range(count):
            await type_line(ws, f"echo line-{n}")
        answered = re.compile(
            r"(?<!echo )line-(\d+)\r\n"
        )  # the shell's output, not the echo of what was typed
        seen = ""

        async def outputs() -> None:
            nonlocal seen
            while len(answered.findall(seen)) < count:
                seen += await ws.recv()

        await asyncio.wait_for(outputs(), 60)
    assert [int(n) for n in answered.findall(seen)] == list(range(count))


@pytest.mark.socket
async def test_terminal_refuses_three_bad_passwords_and_times_out(device) -> None:
    twin, ws_base, token, _ = device
    async with connect(f"{ws_base}/api/v1/terminal/ws?token={token}") as ws:
        for _ in range(3):
            await read_until(ws, "login: ")
            await type_line(ws, "admin")
            await read_until(ws, "Password: ")
            await type_line(ws, "guess")
            assert "Login incorrect" in await read_until(ws, "Login incorrect")
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 30)
    async with connect(f"{ws_base}/api/v1/terminal/ws?token={token}") as ws:
        await read_until(ws, "login: ")
        twin.clock.advance(60)
        assert "timed out" in await read_until(ws, "timed out")


@pytest.mark.socket
async def test_a_reboot_ends_the_terminal_session(device) -> None:
    twin, ws_base, token, _ = device
    async with connect(f"{ws_base}/api/v1/terminal/ws?token={token}") as ws:
        await log_in(ws)
        cameras_of(twin.world)["cam-01"].power.restart()
        twin.clock.advance(RESTART_DELAY_S + 1.5)
        with pytest.raises(ConnectionClosed):
            while True:
                await asyncio.wait_for(ws.recv(), 30)


@pytest.mark.socket
async def test_terminal_needs_a_token(device) -> None:
    _, ws_base, _, _ = device
    for query in ("", "?token=wrong"):
        with pytest.raises(InvalidStatus) as info:
            async with connect(f"{ws_base}/api/v1/terminal/ws{query}"):
                pass
        assert info.value.response.status_code == 401
