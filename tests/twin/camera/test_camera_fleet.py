"""The camera fleet of a scenario: ``profile`` is the media profile every camera boots with, ``scene``
(and ``objects``) the synthetic scene every consumer of a camera's picture sees."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from hardware.ports.events import EventKind
from tests.conftest import gateway_token
from tests.twin.camera.test_video import decode
from twin.camera.video import stream as video_stream
from twin.camera.video.config import PROFILES
from twin.camera.video.scene import SCENES, Scene, scene_of
from twin.camera.wing import cameras_of
from twin.fleet import CameraSpec, WorldConfig
from twin.scenario import ScenarioError
from twin.scenario.model import parse_scenario
from twin.serve import Twin, build
from twin.settings import Settings
from twin.wings import KINDS
from twin.world import World

MEDIA = "/api/v1/media"
DEVICE_PROFILES = (
    "Daylight_Basic",
    "High_Dynamic_Range_Basic",
    "AI_ISP_Gen1_Basic",
    "AI_ISP_Gen2_Basic",
    "AI_ISP_Gen3_Basic",
)  # the camera daemon's medialib profiles, in its order
FLEET = """name: cameras
seed: {seed}
clock: {{mode: step, epoch: 1767225600}}
fleet:
  cameras:
    count: 2
{extra}"""


def scenario_file(tmp_path: Path, seed: int = 5, **cameras: object) -> Path:
    path = tmp_path / f"cameras-{seed}-{'-'.join(f'{k}{v}' for k, v in cameras.items())}.yaml"
    path.write_text(FLEET.format(seed=seed, extra="".join(f"    {k}: {v}\n" for k, v in cameras.items())))
    return path


def twin_of(tmp_path: Path, seed: int = 5, **cameras: object) -> Twin:
    return build(Settings(scenario=scenario_file(tmp_path, seed, **cameras), step=True))


def world_of(seed: int = 5, **cameras: object) -> World:
    return World(WorldConfig(seed=seed, cameras=CameraSpec(count=2, **cameras)), kinds=KINDS)  # type: ignore[arg-type]


async def data(resp: httpx.Response) -> dict:
    assert resp.status_code == 200, resp.text
    return resp.json()["data"]


@pytest.fixture
async def low_bandwidth(tmp_path: Path) -> AsyncIterator[tuple[Twin, httpx.AsyncClient, dict[str, str]]]:
    twin = twin_of(tmp_path, profile="low_bandwidth")
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-02"])
    async with httpx.AsyncClient(transport=transport, base_url="http://cam-02") as client:
        yield twin, client, {"Authorization": await gateway_token(client)}


# Profile ---------------------------------------------------------------------------------------
def test_the_default_profile_is_the_cameras_default_streams() -> None:
    assert PROFILES["default"] == video_stream.DEFAULT_STREAMS
    assert world_of().config.cameras.profile == "default"


async def test_the_fleet_profile_is_the_active_media_profile_over_the_gateway(low_bandwidth) -> None:
    _, gateway, auth = low_bandwidth
    current = await data(await gateway.get(MEDIA + "/profile", headers=auth))
    assert current == {"profile_name": "low_bandwidth"}
    config = await data(await gateway.get(MEDIA + "/config", headers=auth))
    assert config["profile"] == "low_bandwidth"
    encoders = {s["name"]: s["encoder"] for s in config["streams"]}
    assert encoders == {
        c.stream_id: {
            "codec": c.codec,
            "width": c.width,
            "height": c.height,
            "fps": c.fps,
            "bitrate_bps": c.bitrate_bps,
            "gop": c.gop,
        }
        for c in PROFILES["low_bandwidth"]
    }
    assert encoders["main"]["width"] == 1280 and encoders["main"]["fps"] == 15
    profiles = await data(await gateway.get(MEDIA + "/profiles", headers=auth))
    assert profiles == {"profiles": [*DEVICE_PROFILES, "low_bandwidth"], "current_profile": "low_bandwidth"}
    status = (await data(await gateway.get(MEDIA + "/status", headers=auth)))["streams"]
    assert [s["stream_id"] for s in status] == ["main", "sub"]
    # the booted profile survives a switch to a device profile (the default encoders) and back
    resp = await gateway.post(
        MEDIA + "/profile/switch", json={"profile_name": "Daylight_Basic"}, headers=auth
    )
    assert resp.status_code == 200
    config = await data(await gateway.get(MEDIA + "/config", headers=auth))
    assert [s["name"] for s in config["streams"]] == ["main", "sub", "third"]
    assert config["streams"][0]["encoder"]["fps"] == 30
    await gateway.post(MEDIA + "/profile/switch", json={"profile_name": "low_bandwidth"}, headers=auth)
    assert await data(await gateway.get(MEDIA + "/profile", headers=auth)) == {
        "profile_name": "low_bandwidth"
    }
    config = await data(await gateway.get(MEDIA + "/config", headers=auth))
    assert len(config["streams"]) == 2


async def test_a_reset_world_boots_its_cameras_with_the_fleet_profile_again(low_bandwidth) -> None:
    twin, gateway, auth = low_bandwidth
    await gateway.post(MEDIA + "/profile/switch", json={"profile_name": "AI_ISP_Gen1_Basic"}, headers=auth)
    twin.world.reset()
    auth = {"Authorization": await gateway_token(gateway)}
    profile = await data(await gateway.get(MEDIA + "/profile", headers=auth))
    assert profile == {"profile_name": "low_bandwidth"}


async def test_the_default_fleet_boots_on_the_devices_default_profile(tmp_path: Path) -> None:
    twin = twin_of(tmp_path)
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-01"])
    async with httpx.AsyncClient(transport=transport, base_url="http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        profiles = await data(await gateway.get(MEDIA + "/profiles", headers=auth))
        assert profiles == {"profiles": list(DEVICE_PROFILES), "current_profile": "Daylight_Basic"}


async def test_streams_run_at_the_profiles_size_and_rate(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(video_stream, "RESOLUTION_SCALE", 0.125)
    twin = twin_of(tmp_path, profile="low_bandwidth")
    media = twin.gateways["cam-01"].media
    main = media.stream("main").config
    assert (main.width, main.height, main.fps) == (160, 90, 15)
    viewer = media.open_viewer("main")
    await viewer.stream.primed()
    first = await viewer.next_frame()
    twin.clock.advance(1)
    await media.stream("main").settle()
    assert viewer.pending() == 15  # one second at the profile's 15 fps
    rest = [await viewer.next_frame() for _ in range(15)]
    frames = decode(viewer.config_frame().payload, [first.payload] + [f.payload for f in rest])
    assert len(frames) == 16 and {(f.width, f.height) for f in frames} == {(160, 90)}
    viewer.close()


# Scene -----------------------------------------------------------------------------------------
async def test_an_empty_scene_has_no_ground_truth_and_no_detections(tmp_path: Path) -> None:
    twin = twin_of(tmp_path, scene="empty")
    world = twin.world
    camera = cameras_of(world)["cam-01"]
    media = twin.gateways["cam-01"].media
    sub = world.bus.subscribe([EventKind.CAMERA_DETECTIONS])
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-01"])
    async with httpx.AsyncClient(transport=transport, base_url="http://cam-01") as gateway:
        auth = {"Authorization": await gateway_token(gateway)}
        resp = await gateway.put(MEDIA + "/ai-overlay", json={"enabled": True}, headers=auth)
        assert resp.status_code == 200, resp.text
    twin.clock.advance(600)
    events = []
    while (event := sub.get_nowait()) is not None:
        events.append(event.data)
    assert len(events) == 601 and all(e["count"] == 0 and e["labels"] == {} for e in events)
    for t in range(0, 3600, 7):
        assert scene_of(world, "cam-01").boxes(float(t)) == []
    assert media.detections() == []
    camera.peripherals.field_lines.radar = True
    assert camera.peripherals.field_lines.radar_targets() == []


def test_the_scene_kinds_have_their_mix() -> None:
    street = world_of(scene="street")
    crowd = world_of(scene="crowd")
    people = [sum(b.label == "person" for b in scene_of(w, "cam-01").boxes(100.0)) for w in (street, crowd)]
    assert people[1] > people[0] and people[1] == SCENES["crowd"]
    assert len(scene_of(world_of(scene="crowd", objects=40), "cam-01").boxes(0.0)) == 40
    # the default street is the scene every camera had before scenes were named
    world = world_of()
    assert scene_of(world, "cam-01").boxes(12.5) == Scene(world.streams.key("cam-01/scene")).boxes(12.5)


def test_parked_vehicles_rarely_move() -> None:
    scene = scene_of(world_of(scene="parking"), "cam-01")
    labels = [b.label for b in scene.boxes(0.0)]
    assert labels.count("car") + labels.count("truck") > labels.count("person") >= 1
    vehicles = [i for i, label in enumerate(labels) if label != "person"]
    moved = 0
    for t in range(0, 6 * 3600, 60):
        a, b = scene.boxes(float(t)), scene.boxes(float(t + 60))
        moved += sum((a[i].x, a[i].y) != (b[i].x, b[i].y) for i in vehicles)
        for box in b:
            assert 0 <= box.x <= 1 - box.w + 1e-9 and 0 <= box.y <= 1 - box.h + 1e-9
    minutes = len(vehicles) * 6 * 60
    assert 0 < moved < 0.1 * minutes  # each vehicle spends most minutes in its bay


def test_only_moving_vehicles_hum() -> None:
    """A parked car's engine is off: the microphone hears the tone and noise only, until it drives."""
    import numpy as np

    from twin.camera.video.audio import pcm

    scene = scene_of(world_of(scene="parking", objects=1), "cam-01")
    rate = 8000

    def hum_power(t: float) -> float:
        box = scene.boxes(t)[0]
        samples = np.frombuffer(pcm(7, scene, round(t * rate), rate // 10, rate, 1, 1.0), dtype="<i2")
        spectrum = np.abs(np.fft.rfft(samples / 32767.0))
        freqs = np.fft.rfftfreq(len(samples), 1 / rate)
        return float(spectrum[np.argmin(np.abs(freqs - (80.0 + 40.0 * box.object_id)))])

    times = [float(t) for t in range(0, 6 * 3600, 5)]
    moving = [t for t in times if scene.boxes(t)[0] != scene.boxes(t - 0.5)[0]]
    parked = [t for t in times if scene.boxes(t)[0] == scene.boxes(t - 0.5)[0]]
    assert scene.boxes(0.0)[0].label in ("car", "truck") and moving and parked
    assert max(hum_power(t) for t in parked[:20]) < 1.0 < min(hum_power(t) for t in moving[:5])


def test_same_seed_gives_the_same_boxes_and_every_consumer_sees_one_scene(tmp_path: Path) -> None:
    for kind in SCENES:
        a, b, other = world_of(5, scene=kind), world_of(5, scene=kind), world_of(6, scene=kind)
        for t in (0.0, 17.3, 4000.0):
            assert scene_of(a, "cam-02").boxes(t) == scene_of(b, "cam-02").boxes(t)
            if SCENES[kind]:
                assert scene_of(a, "cam-02").boxes(t) != scene_of(other, "cam-02").boxes(t)
                assert scene_of(a, "cam-01").boxes(t) != scene_of(a, "cam-02").boxes(t)
    twin = twin_of(tmp_path, scene="crowd")
    gateway = twin.gateways["cam-02"]
    gateway.media.streams()  # the media area makes its scene on first use
    gateway.audio._now()
    expected = scene_of(twin.world, "cam-02").boxes(33.0)
    assert gateway.media._scene.boxes(33.0) == expected
    assert gateway.audio._scene.boxes(33.0) == expected
    assert cameras_of(twin.world)["cam-02"].peripherals.scene.boxes(33.0) == expected
    detected = {d.object_id for d in gateway.media.detections()}
    assert detected and detected <= {b.object_id for b in scene_of(twin.world, "cam-02").boxes(0.0)} | {-1}


# Scenario files --------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("cameras", "line", "message"),
    [
        (
            "profile: ultra_hd",
            7,
            "fleet.cameras.profile: Value error, unknown profile 'ultra_hd'; known: " + ", ".join(PROFILES),
        ),
        (
            "scene: beach",
            7,
            "fleet.cameras.scene: Value error, unknown scene 'beach'; known: " + ", ".join(SCENES),
        ),
        ("objects: -1", 7, "fleet.cameras.objects: Input should be greater than or equal to 0"),
        ("objects: many", 7, "fleet.cameras.objects: Input should be a valid integer"),
        ("objects: 65", 7, "fleet.cameras.objects: Input should be less than or equal to 64"),
        ("scene: empty\n    objects: 3", 4, "fleet.cameras: Value error, scene 'empty' has no objects"),
        ("colour: red", 7, "fleet.cameras.colour: unknown key"),
    ],
)
def test_a_bad_camera_fleet_is_one_line_with_file_line_and_key(cameras: str, line: int, message: str) -> None:
    text = f"name: x\nfleet:\n  sensors: []\n  cameras:\n    count: 1\n\n    {cameras}\n"
    with pytest.raises(ScenarioError) as err:
        parse_scenario(text, "s.yaml")
    assert len(str(err.value).splitlines()) == 1
    assert str(err.value).startswith(f"s.yaml:{line}: {message}")


def test_a_good_camera_fleet_reaches_the_world_config() -> None:
    text = "name: x\nfleet:\n  cameras: {count: 3, profile: single_stream, scene: parking, objects: 5}\n"
    config = parse_scenario(text, "s.yaml").world_config()
    assert config.cameras == CameraSpec(3, "single_stream", "parking", 5)
    assert parse_scenario("name: x\n", "s.yaml").world_config().cameras == CameraSpec()


async def test_camera_groups_each_boot_with_their_own_profile_and_scene(tmp_path: Path) -> None:
    path = tmp_path / "groups.yaml"
    path.write_text(
        "name: groups\nseed: 5\nclock: {mode: step, epoch: 1767225600}\nfleet:\n  cameras:\n"
        "    - {count: 1, profile: low_bandwidth, scene: empty}\n"
        "    - {count: 2, scene: crowd}\n"
    )
    twin = build(Settings(scenario=path, step=True))
    assert list(cameras_of(twin.world)) == ["cam-01", "cam-02", "cam-03"]
    assert scene_of(twin.world, "cam-01").boxes(10.0) == []
    crowd = [b.label for b in scene_of(twin.world, "cam-03").boxes(10.0)]
    assert crowd.count("person") == SCENES["crowd"]
    for camera_id, profile in (("cam-01", "low_bandwidth"), ("cam-02", "Daylight_Basic")):
        transport = httpx.ASGITransport(app=twin.gateway_apps[camera_id])
        async with httpx.AsyncClient(transport=transport, base_url=f"http://{camera_id}") as client:
            auth = {"Authorization": await gateway_token(client)}
            current = await data(await client.get(MEDIA + "/profile", headers=auth))
            assert current["profile_name"] == profile, camera_id


@pytest.mark.parametrize(
    ("cameras", "message"),
    [
        ("[]", "s.yaml:4: fleet.cameras: List should have at least 1 item"),
        ("[{count: 200}, {count: 60}]", "s.yaml:4: fleet.cameras: Value error, at most 254 cameras in all"),
        (
            "[{count: 1}, {scene: beach}]",
            "s.yaml:4: fleet.cameras.1.scene: Value error, unknown scene 'beach'",
        ),
    ],
)
def test_bad_camera_groups_are_one_line(cameras: str, message: str) -> None:
    with pytest.raises(ScenarioError) as err:
        parse_scenario(f"name: x\nfleet:\n  sensors: []\n  cameras: {cameras}\n", "s.yaml")
    assert len(str(err.value).splitlines()) == 1 and str(err.value).startswith(message), str(err.value)
