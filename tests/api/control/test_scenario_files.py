"""A scenario loaded from the control plane reads files only where the scenario may: its fixtures and
videos are in the library's directory or one the user allowed (``--scenario-files``). Anything else is
a validation error in the control plane's shape that never tells whether the file exists nor what it
holds (no line count, no content)."""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import pytest

from twin.scenario.files import FileRoots
from twin.scenario.live import LiveScenarios
from twin.scenario.model import ScenarioError, load_scenario, parse_scenario
from twin.serve import Twin

GATEWAY = {"format": "twin-fixture", "version": 1, "vendor": "gateway"}


def fixture(path: Path) -> Path:
    path.write_text(json.dumps(GATEWAY) + "\n")
    return path


def scenario(replay: str) -> str:
    return f"name: x\nclock: {{mode: step}}\nfleet:\n  cameras: {{count: 1, replay: {replay}}}\n"


@pytest.fixture
def library(tmp_path: Path, twin: Twin) -> Path:
    lib = tmp_path / "library"
    lib.mkdir()
    twin.control.scenarios = LiveScenarios(twin.control, lib, allowed=(tmp_path / "allowed",))
    return lib


async def test_a_replay_outside_the_allowed_directories_is_refused_without_reading_it(
    library: Path, tmp_path: Path, control: httpx.AsyncClient
) -> None:
    secret = tmp_path / "secret.ndjson"
    secret.write_text("line one\nline two\nline three\n")  # exists, readable, three lines
    messages = []
    for target in ("/etc/shadow", "/etc/passwd", str(secret), "../secret.ndjson", str(tmp_path / "none")):
        resp = await control.post("/scenario/load", json={"yaml": scenario(target), "filename": "up.yaml"})
        assert resp.status_code == 400, (target, resp.text)
        error = resp.json()["error"]
        assert error["code"] == "invalid_input"
        assert "outside the directories a scenario may read" in error["message"]
        assert "cannot read" not in error["message"] and ":2:" not in error["message"].split("replay:")[-1]
        messages.append(error["message"].replace(target, "<path>"))
    assert len(set(messages)) == 1  # a file that exists reads as one that does not
    assert (await control.get("/scenario")).json()["loaded"] is None


async def test_a_link_inside_the_library_leading_out_is_refused(
    library: Path, tmp_path: Path, control: httpx.AsyncClient
) -> None:
    outside = fixture(tmp_path / "elsewhere.ndjson")
    (library / "link.ndjson").symlink_to(outside)
    resp = await control.post("/scenario/load", json={"yaml": scenario("link.ndjson")})
    assert resp.status_code == 400 and "outside the directories" in resp.json()["error"]["message"]


async def test_fixtures_in_the_library_or_an_allowed_directory_load(
    library: Path, tmp_path: Path, control: httpx.AsyncClient
) -> None:
    fixture(library / "lobby.ndjson")
    (tmp_path / "allowed").mkdir()
    elsewhere = fixture(tmp_path / "allowed" / "hall.ndjson")
    for replay in ("lobby.ndjson", str(library / "lobby.ndjson"), str(elsewhere)):
        resp = await control.post("/scenario/load", json={"yaml": scenario(replay)})
        assert resp.status_code == 200, (replay, resp.text)
    (library / "mine.yaml").write_text(scenario("lobby.ndjson"))
    assert (await control.post("/scenario/load", json={"name": "mine"})).status_code == 200


async def test_a_video_file_outside_is_refused_a_url_is_not_a_file(
    library: Path, control: httpx.AsyncClient
) -> None:
    video = "name: x\nfleet:\n  cameras: {{count: 1, video: {{source: {}}}}}\n"
    resp = await control.post("/scenario/load", json={"yaml": video.format("/etc/shadow")})
    assert resp.status_code == 400 and "outside the directories" in resp.json()["error"]["message"]
    ok = await control.post("/scenario/load", json={"yaml": video.format("rtsp://192.0.2.1/live")})
    assert ok.status_code == 200, ok.text


def test_a_scenario_file_reads_from_its_own_directory(tmp_path: Path) -> None:
    fixture(tmp_path / "lobby.ndjson")
    path = tmp_path / "s.yaml"
    path.write_text(scenario("lobby.ndjson"))
    loaded = load_scenario(path)
    assert loaded.fleet.cameras[0].replay == str((tmp_path / "lobby.ndjson").resolve())
    path.write_text(scenario("/etc/shadow"))
    with pytest.raises(ScenarioError) as refused:
        load_scenario(path)
    (problem,) = refused.value.problems
    assert "outside the directories" in problem and "--scenario-files" in problem
    with pytest.raises(ScenarioError):
        parse_scenario(scenario("/etc/passwd"), "s.yaml", files=FileRoots.of(tmp_path))
