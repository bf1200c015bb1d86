"""Every ``curl`` in README.md, run with the real ``curl`` against a twin started in this process.

The README's shell blocks that hold a ``curl`` are run in order, each as one ``bash`` script (so a
token one line obtains is there for the next), with the documented addresses turned into the test
twin's free ports: ``localhost:9375`` (the automation API), ``127.0.1.1:8080`` (cam-01's gateway)
and ``127.0.0.1:9380`` (the control plane). ``curl`` answers an HTTP error with a failing exit
status (``--fail-with-body``) and reports each status on stderr, so every call must answer 2xx;
where the README states a shape (the two logins), the answer must have it. A line in such a block
that is not a ``curl`` must be one this test knows how to follow (starting the twin with an API key
is the twin this test starts); an unknown one fails, so a new example cannot go untested."""

from __future__ import annotations

import asyncio
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.sockets import socket_settings
from twin.serve import Running, build, start, stop

pytestmark = pytest.mark.socket

README = Path(__file__).resolve().parents[1] / "README.md"
API_KEY = "nmk_0123456789abcdef0123456789abcdef"
FOLLOWED = {
    f"NEOMIND_API_KEY={API_KEY} make run": "the twin under test is started with this key",
}
"""Lines of curl blocks that are not curl calls, and how this test follows them."""
ADDRESSES = {"localhost:9375": "automation", "127.0.1.1:8080": "cam-01/http", "127.0.0.1:9380": "control"}
WRAPPER = """set -eo pipefail
curl() { command curl --fail-with-body -sS -w '%{stderr}@@ %{http_code} %{method} %{url_effective}\\n' "$@"; }
"""


def commands(block: str) -> list[str]:
    """The block's commands, continuation lines joined."""
    return [c.strip() for c in re.sub(r"\\\n\s*", " ", block).splitlines() if c.strip()]


def curl_blocks(text: str) -> list[list[str]]:
    """The commands of each shell code block that holds a curl."""
    blocks: list[tuple[str, list[str]]] = []
    fence: str | None = None
    for line in text.splitlines():
        if line.startswith("```"):
            fence = line[3:].strip() if fence is None else None
            if fence is not None:
                blocks.append((fence, []))
        elif fence is not None:
            blocks[-1][1].append(line)
    shell = ["\n".join(lines) for language, lines in blocks if language in ("", "sh", "bash")]
    return [commands(b) for b in shell if re.search(r"\bcurl\b", b)]


def test_the_readme_has_curl_examples_for_each_server() -> None:
    text = "\n".join(c for block in curl_blocks(README.read_text()) for c in block)
    for address in ADDRESSES:
        assert address in text, address
    assert "/api/v1/lens/status" not in README.read_text()  # the device's path is /api/v1/device/lens/...


@pytest.fixture
async def running(tmp_path: Path) -> Running:
    settings = socket_settings(scenario=Path("scenarios/default.yaml").resolve(), api_key=API_KEY)
    started = await start(build(settings), tmp_path)
    yield started
    await stop(started)


async def run_block(block: list[str], running: Running) -> tuple[list[str], list[tuple[int, str, str]]]:
    """Run the block's commands in one bash; each command's stdout and every curl call's status."""
    script = [WRAPPER]
    for i, command in enumerate(block):
        if command in FOLLOWED:
            continue
        assert re.search(r"\bcurl\b", command), f"README line this test cannot follow: {command!r}"
        for documented, name in ADDRESSES.items():
            command = command.replace(documented, running.url(name).removeprefix("http://"))
        script.append(f"{command}\nprintf '\\n@@end {i}\\n'\n")
    proc = await asyncio.create_subprocess_exec(
        "bash", "-c", "".join(script), stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, f"{block}\nstdout: {out.decode()}\nstderr: {err.decode()}"
    outputs = re.split(r"\n@@end \d+\n", out.decode())[:-1]
    calls = [line.split(" ", 3)[1:] for line in err.decode().splitlines() if line.startswith("@@ ")]
    return outputs, [(int(status), method, url) for status, method, url in calls]


@pytest.mark.timeout(300)
@pytest.mark.skipif(shutil.which("curl") is None, reason="needs the curl command")
async def test_every_readme_curl_answers_as_the_readme_says(running: Running) -> None:
    ran = 0
    for block in curl_blocks(README.read_text()):
        outputs, calls = await run_block(block, running)
        assert len(calls) == sum(len(re.findall(r"\bcurl\b", c)) for c in block), (block, calls)
        assert all(200 <= status < 300 for status, _, _ in calls), calls
        ran += len(calls)
        runnable = [c for c in block if c not in FOLLOWED]
        for command, output in zip(runnable, outputs, strict=True):
            if not output.strip():
                continue  # its answer went into a variable
            answer = json.loads(output)
            if "/api/auth/login" in command:
                assert set(answer) == {"token", "user"}, answer  # raw JSON, no envelope
            elif "/api/login" in command:
                assert answer["code"] == 0 and answer["data"]["token"].startswith("Bearer "), answer
            elif re.search(r"9380/clock\b", command):  # the control plane's table: GET /clock
                assert set(answer) == {"mode", "speed", "paused", "sim_time", "epoch", "unix_time"}
            elif command.endswith("9380/snapshots"):
                assert [s["label"] for s in answer["snapshots"]] == ["an hour in"], answer
                assert set(answer["snapshots"][0]) == {"id", "sim_time", "seed", "label"}
    assert ran >= 15
