"""The demo scene: perspective, walking people and vehicles with shadows, light following the hour,
weather from scenario actions, and detections that see worse in fog and at a distance."""

from __future__ import annotations

import hashlib

import httpx
import numpy as np
import pytest

from tests.twin.camera.test_video import media  # noqa: F401  (the fixture)
from twin.camera.detections import MISS_RATE, Detector, _hidden
from twin.camera.video import sprites
from twin.camera.video.render import Renderer, View
from twin.camera.video.scene import SCENES, Scene, daylight, sun_side
from twin.camera.video.sprites import draw
from twin.camera.video.weather import Weather, set_weather, visibility, weather_of

MIDNIGHT = 1_767_225_600.0  # 2026-01-01T00:00:00Z


def at(hour: float, **kw) -> View:
    u = MIDNIGHT + hour * 3600
    return View(u, "cam-01", daylight=daylight(u), sun=sun_side(u), **kw)


def digest(img: np.ndarray) -> str:
    return hashlib.sha256(img.tobytes()).hexdigest()


def test_farther_objects_are_smaller_and_higher() -> None:
    seen = 0
    for kind in ("street", "crowd", "parking"):
        scene = Scene(7, kind=kind)
        for t in range(0, 600, 7):
            people = [b for b in scene.boxes(float(t)) if b.label == "person" and b.w == b.w]
            for a in people:
                for b in people:
                    if b.depth > a.depth + 1:
                        seen += 1
                        assert b.h < a.h and b.y + b.h < a.y + a.h  # smaller, feet higher
    assert seen > 100


def test_the_street_has_people_bikes_cars_and_trucks_that_come_and_go() -> None:
    scene = Scene(42)
    labels: set[str] = set()
    counts = []
    for t in range(0, 1200, 3):
        boxes = scene.boxes(float(t))
        labels |= {b.label for b in boxes}
        counts.append(len(boxes))
        for box in boxes:
            assert 0 <= box.x <= 1 - box.w + 1e-9 and 0 <= box.y <= 1 - box.h + 1e-9
    assert labels == {"person", "bicycle", "car", "truck"}
    assert min(counts) < max(counts) <= SCENES["street"]  # traffic passes: objects leave and come back
    walkers = [b for b in scene.boxes(100.0) if b.label == "person"]
    later = {b.object_id: b for b in scene.boxes(100.2)}
    assert any(later[b.object_id].step != b.step for b in walkers if b.object_id in later)  # striding


def test_walking_legs_move_and_a_sprite_has_a_soft_silhouette() -> None:
    frames = [draw("person", 3, k, 60, 150, False)[:2] for k in range(8)]
    assert len({digest(img) for img, _ in frames}) >= 4
    _img, mask = frames[2]
    assert 0.15 < (mask > 128).mean() < 0.6 and ((mask > 0) & (mask < 255)).any()  # anti-aliased edge
    _car, car_mask, lights = draw("car", 1, 0, 330, 113, True)
    assert (car_mask > 128).mean() > 0.5
    assert (
        0 < (lights > 0).mean() < 0.05 and not draw("car", 1, 0, 330, 113, False)[2].any()
    )  # lit after dark


def test_same_seed_same_frame_in_every_light_and_weather() -> None:
    views = [
        at(10.5),
        at(17.7),
        at(23.0),
        at(23.0, night=True, ir_led=80),
        at(10.5, weather=Weather("fog", 0.6)),
        at(14.0, weather=Weather("rain", 0.8)),
        at(8.0, weather=Weather("glare", 0.7)),
    ]
    a, b = Renderer(Scene(42), 320, 180, "cam-01"), Renderer(Scene(42), 320, 180, "cam-01")
    first = [digest(a.render(61.0, v)) for v in views]
    assert first == [digest(b.render(61.0, v)) for v in reversed(views)][::-1]
    assert len(set(first)) == len(views)
    assert digest(Renderer(Scene(43), 320, 180, "cam-01").render(61.0, views[0])) != first[0]


def test_light_follows_the_hour_and_ir_night_is_gray_and_near_is_brighter() -> None:
    r = Renderer(Scene(42), 320, 180, "cam-01")
    day, dusk, night = (r.render(61.0, at(h)).astype(float) for h in (11.0, 17.6, 23.0))
    assert day.mean() > dusk.mean() > night.mean()
    cars = [b for b in r.scene.boxes(61.0) if b.label in ("car", "truck") and 0.25 < b.x < 0.7]
    assert cars and night.max() >= 250  # headlights and lamps still shine
    sky = (slice(0, 20), slice(None))
    assert dusk[sky][:, :, 2].mean() > dusk[sky][:, :, 0].mean()  # a warm sky at dusk
    assert day[sky][:, :, 0].mean() > day[sky][:, :, 2].mean()  # a blue sky by day
    ir = r.render(61.0, at(23.0, night=True, ir_led=100)).astype(int)
    assert (ir[:, :, 0] == ir[:, :, 1]).all() and (ir[:, :, 1] == ir[:, :, 2]).all()
    assert ir[-30:].mean() > ir[60:80].mean() > ir[:15].mean()  # IR lights the near ground; the sky is dark


def test_shadows_fall_away_from_the_sun() -> None:
    scene = Scene(42)

    def central(b) -> bool:  # a near walker well inside the view
        return b.label == "person" and b.depth < 12 and 0.3 < b.x < 0.6

    t = next(float(t) for t in range(0, 3000) if any(central(b) for b in scene.boxes(float(t))))
    near = next(b for b in scene.boxes(t) if central(b))
    r = Renderer(scene, 640, 360, "cam-01")
    morning, evening = r.render(t, at(8.5)).astype(float), r.render(t, at(15.5)).astype(float)
    x0, x1 = int((near.x - 1 / 6) * 1.5 * 640), int((near.x + near.w - 1 / 6) * 1.5 * 640)
    y = int((near.y + near.h - 0.1) * 1.25 * 360) - 1
    width = x1 - x0
    right = (slice(y - 2, y + 1), slice(x1, x1 + width))
    left = (slice(y - 2, y + 1), slice(x0 - width, x0))
    assert x0 - width >= 0 and x1 + width < 640
    assert morning[right].mean() < evening[right].mean() - 5  # morning sun in the east: shadows to the right
    assert evening[left].mean() < morning[left].mean() - 5


def test_weather_changes_the_picture() -> None:
    r = Renderer(Scene(42), 320, 180, "cam-01")
    clear = r.render(61.0, at(11.0)).astype(float)
    fog = r.render(61.0, at(11.0, weather=Weather("fog", 0.8))).astype(float)
    rain = r.render(61.0, at(11.0, weather=Weather("rain", 0.8))).astype(float)
    glare = r.render(61.0, at(11.0, weather=Weather("glare", 0.8))).astype(float)
    far = (slice(20, 60), slice(None))  # the houses across the street
    assert fog[far].std() < 0.6 * clear[far].std()  # fog hides far things
    assert np.abs(rain - r.render(61.05, at(11.0, weather=Weather("rain", 0.8)))).mean() > 0  # rain falls
    assert rain.mean() < clear.mean() and glare.mean() > clear.mean()
    with pytest.raises(ValueError, match="unknown weather"):
        Weather("snow", 0.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        Weather("fog", 1.5)


def test_detections_see_worse_in_fog_at_night_and_far_away() -> None:
    scene = Scene(42)
    ticks = [t / 5 for t in range(3000)]

    def run(visibility: float) -> list:
        return [
            d for t in ticks for d in Detector(7).detect(scene, t, visibility=visibility) if d.object_id >= 0
        ]

    perfect = sum(len(Detector(7, 0.0, 0.0).detect(scene, t)) for t in ticks)
    clear = run(1.0)
    foggy = run(visibility(Weather("fog", 0.8), 1.0, False, 0, 0))
    assert len(clear) / perfect == pytest.approx(1 - MISS_RATE, abs=0.03)
    assert len(foggy) < 0.7 * len(clear)
    mean = lambda ds: sum(d.confidence for d in ds) / len(ds)  # noqa: E731
    assert mean(foggy) < mean(clear) - 0.05
    assert all(0.35 <= d.confidence <= 0.99 for d in clear + foggy)
    near = [d for d in clear if d.h > 0.2]
    far = [d for d in clear if d.h < 0.12]
    assert near and far and mean(far) <= mean(near) + 0.02
    assert Detector(7).detect(scene, 12.3, visibility=0.5) == Detector(7).detect(scene, 12.3, visibility=0.5)
    assert visibility(Weather(), 0.0, True, 100, 0) > visibility(Weather(), 0.0, False, 0, 0)  # IR helps


async def test_the_weather_reaches_the_stream_view_and_what_the_model_sees(media) -> None:  # noqa: F811
    gm, _clock = media
    world = gm._world
    assert gm._view("main").weather == Weather()
    set_weather(world, "cam-01", Weather("fog", 0.7))
    assert weather_of(world, "cam-01") == Weather("fog", 0.7)
    assert gm._view("main").weather == Weather("fog", 0.7)
    assert gm._seen(gm._camera()) < 0.7
    set_weather(world, "cam-01", Weather())
    assert world.store.collection("camera_weather").get("cam-01") is None


async def test_weather_actions_set_and_undo_the_weather(control: httpx.AsyncClient, twin) -> None:
    listed = {a["name"] for a in (await control.get("/actions")).json()["actions"]}
    assert {"weather_rain", "weather_fog", "weather_glare", "weather_clear"} <= listed

    async def act(name: str, params: dict, **extra) -> httpx.Response:
        return await control.post(f"/actions/{name}", json={"params": params, **extra})

    assert (
        await act("weather_fog", {"camera": "cam-01", "intensity": 0.5}, **{"for": 60})
    ).status_code == 200
    assert weather_of(twin.world, "cam-01") == Weather("fog", 0.5)
    await control.post("/clock/advance", json={"seconds": 61})
    assert weather_of(twin.world, "cam-01") == Weather()  # undone: clear again
    await act("weather_glare", {"camera": "cam-01", "intensity": 0.4}, **{"for": 60})
    await act("weather_rain", {"camera": "cam-01"})  # a later change outlives the glare's end
    await control.post("/clock/advance", json={"seconds": 61})
    assert weather_of(twin.world, "cam-01") == Weather("rain", 0.6)
    snapshot = (await control.post("/snapshots")).json()["id"]  # the weather is part of the world
    await act("weather_clear", {"camera": "cam-01"})
    assert weather_of(twin.world, "cam-01") == Weather()
    assert (await control.post(f"/snapshots/{snapshot}/restore")).status_code == 200
    assert weather_of(twin.world, "cam-01") == Weather("rain", 0.6)
    await control.post("/reset")
    assert weather_of(twin.world, "cam-01") == Weather()
    for params, status in (
        ({"camera": "cam-01", "intensity": 1.5}, 400),
        ({"camera": "cam-01", "intensity": "heavy"}, 400),
        ({"camera": "cam-01", "wind": 3}, 400),
        ({"camera": "cam-99"}, 404),
        ({"camera": "garage"}, 400),
    ):
        resp = await act("weather_glare", params)
        assert resp.status_code == status, (params, resp.text)
    assert weather_of(twin.world, "cam-01") == Weather()


def test_an_object_hidden_behind_a_nearer_one_is_not_detected() -> None:
    scene, detector = Scene(42), Detector(7, 0.0, 0.0)
    hidden = partly = 0
    for tick in range(6000):
        boxes = scene.boxes(tick / 5)
        found = {d.object_id for d in detector.detect(scene, tick / 5)}
        for box in boxes:
            cover = _hidden(box, boxes)
            hidden += cover >= 1.0
            partly += 0.3 < cover < 0.9
            if cover >= 1.0:
                assert box.object_id not in found
    assert hidden > 0 and partly > 0


def test_the_sprite_cache_is_bounded_and_reused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sprites, "CACHE_BYTES", 400_000)
    r = Renderer(Scene(5, kind="crowd"), 640, 360, "cam-01")
    for k in range(300):
        r.render(k * 2.0, at(11.0))
        assert r.sprites.bytes <= 400_000 or len(r.sprites._cache) == 1
    drawn = []
    monkeypatch.setattr(sprites, "draw", lambda *a: drawn.append(a) or draw(*a))
    r.render(600.0, at(11.0))
    r.render(600.04, at(11.0))  # a frame later: the same sizes, the stride frame mostly the same
    assert len(drawn) < 2 * SCENES["crowd"]
