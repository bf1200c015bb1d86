"""What the camera's web console writes in the app platform's areas (apps, models, containers and
images, files, SSH, storage, settings, store installs, workbench, time, network, event bus) is read
back where the console reads it, and again after a restart of the twin on the same state directory.

A restart of the twin is a restart of the device: what the device keeps on disk comes back (the app
registry, images, containers, models and their desired state, files, configuration); what lives in
memory does not (a mount made with ``mount``, event-bus subscriptions, a container's process). Apps
come back as the app manager brings them back (``recoverAppsOnStartup``): an app that was running is
stopped with its container, then every app whose manifest says ``autostart`` is started.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from tests.api.gateway.test_apps import MANIFEST, install, while_time_runs
from tests.conftest import SCENARIOS, _client
from twin.camera.platform_state import PLATFORM_KIND
from twin.camera.wing import cameras_of
from twin.serve import Twin, build
from twin.settings import Settings

AUTOSTART = MANIFEST.replace("  resources:\n", "  autostart: true\n  resources:\n")
HEF = b"HEF\x00" + bytes(300_000)


@pytest.fixture
def durable(settings: Settings, tmp_path: Path) -> Settings:
    return dataclasses.replace(settings, state_dir=tmp_path / "state")


@dataclasses.dataclass
class Console:
    """A signed-in client of camera 1 of a running twin."""

    twin: Twin
    http: httpx.AsyncClient
    auth: dict[str, str]

    async def call(self, method: str, path: str, status: int = 200, **kwargs) -> dict:
        resp = await while_time_runs(
            self.twin, self.http.request(method, "/api/v1" + path, headers=self.auth, **kwargs)
        )
        assert resp.status_code == status, (method, path, resp.text)
        return resp.json().get("data") if resp.headers["content-type"].startswith("application/json") else {}

    async def logs(self, app_id: str) -> str:
        resp = await self.http.get(f"/api/v1/apps/{app_id}/logs", headers=self.auth, params={"max_lines": 50})
        assert resp.status_code == 200, resp.text
        return resp.text

    async def install_door_watch(self) -> None:
        """A second app, ``door-watch``, from an uploaded image and manifest (not started)."""
        plain = MANIFEST.replace("people-counter", "door-watch")
        image = await self.call("POST", "/apps/upload-image", files={"file": ("door.tar", b"tar" * 500)})
        manifest = await self.call("POST", "/apps/upload-manifest", files={"file": ("app.yaml", plain)})
        body = {"manifest_path": manifest["manifest_path"], "image_path": image["image_path"]}
        await self.call("POST", "/apps", json=body)

    async def read(self, *paths: str) -> list:
        return [await self.call("GET", path) for path in paths]


@asynccontextmanager
async def console(settings: Settings) -> AsyncIterator[Console]:
    """A twin built on ``settings`` and a signed-in client; the store closed after."""
    twin = build(settings)
    try:
        async with _client(twin.gateway_apps["cam-01"], "http://cam-01") as http:
            login = await http.post("/api/login", json={"username": "admin", "password": "password"})
            assert login.status_code == 200, login.text
            yield Console(twin, http, {"Authorization": login.json()["data"]["token"]})
    finally:
        twin.world.store.close()


def states(apps: list[dict]) -> list[tuple[str, str]]:
    return [(a["id"], a["state"]) for a in apps]


# Apps ---------------------------------------------------------------------------------------------
async def test_installed_apps_images_and_containers_survive_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        task = await install(c.http, c.twin, c.auth, manifest=AUTOSTART)
        assert task["phase"] == "complete", task
        await c.call("POST", "/apps/people-counter/start")
        await c.install_door_watch()
        await c.call("POST", "/apps/door-watch/start")
        wizard = {"app_id": "wizard-app", "name": "Wizard", "image": "people-counter:1.2.0"}
        await c.call("POST", "/apps/wizard", json=wizard)
        await c.call("POST", "/apps/wizard", json=wizard | {"app_id": "gone"})
        await c.call("DELETE", "/apps/gone")
        c.twin.clock.advance(12)
        apps, images, containers = await c.read("/apps", "/images", "/containers")
        permissions = await c.call("GET", "/apps/door-watch/permissions")
    assert states(apps) == [
        ("door-watch", "running"),
        ("people-counter", "running"),
        ("wizard-app", "installed"),
    ]
    assert {i["name"] for i in images["images"]} == {"people-counter:1.2.0", "door-watch:1.2.0"}

    async with console(durable) as c:
        c.twin.clock.advance(5)  # the app manager's startup recovery
        apps_after, images_after, containers_after = await c.read("/apps", "/images", "/containers")
        permissions_after = await c.call("GET", "/apps/door-watch/permissions")
        assert list(permissions_after.items()) == list(permissions.items())  # in the manifest's order
        manifest_file = await c.call("GET", "/files/content", params={"path": apps[0]["manifest_path"]})
        assert "door-watch" in manifest_file["content"]
        # What came back works: the stopped app starts again, the autostarted one logs frames.
        await c.call("POST", "/apps/door-watch/start")
        assert "Starting People counter" in await c.logs("people-counter")
    assert states(apps_after) == [
        ("door-watch", "stopped"),  # running, no autostart: stopped with its container
        ("people-counter", "running"),  # autostart: started again
        ("wizard-app", "installed"),
    ]
    keep = ("id", "name", "version", "installed_at", "manifest_path", "instance_path", "permissions")
    assert [{k: a.get(k) for k in keep} for a in apps_after] == [{k: a.get(k) for k in keep} for a in apps]
    assert images_after == images
    by_id = {x["id"]: x["state"] for x in containers_after["containers"]}
    assert by_id == {"aipc-door-watch": "stopped", "aipc-people-counter": "running"}
    assert {x["id"] for x in containers["containers"]} == set(by_id)


async def test_stopped_uninstalled_and_updated_apps_stay_so_after_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        await install(c.http, c.twin, c.auth)
        await c.call("POST", "/apps/people-counter/start")
        await c.call("POST", "/apps/people-counter/restart")
        await c.call("POST", "/apps/people-counter/stop")
        updated = MANIFEST.replace("version: 1.2.0", "version: 1.3.0")
        manifest = await c.call("POST", "/apps/upload-manifest", files={"file": ("app.yaml", updated)})
        await c.call("POST", "/apps", json={"manifest_path": manifest["manifest_path"], "force": True})
        await c.call(
            "POST", "/apps/wizard", json={"app_id": "temp", "name": "T", "image": "people-counter:1.2.0"}
        )
        await c.call("DELETE", "/apps/temp")
        before = (await c.read("/apps"))[0]
    assert states(before) == [("people-counter", "installed")] and before[0]["version"] == "1.3.0"
    async with console(durable) as c:
        c.twin.clock.advance(5)
        after = (await c.read("/apps"))[0]
        await c.call("DELETE", "/apps/people-counter")
    assert after == before
    async with console(durable) as c:
        assert (await c.read("/apps", "/images")) == [[], {"images": []}]


async def test_an_app_installed_from_the_store_survives_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        started = await c.call("POST", "/store/apps/people-counter/install", json={"version": "1.1.0"})
        for _ in range(100):
            task = await c.call("GET", f"/apps/install-progress/{started['task_id']}")
            if task["phase"] in ("complete", "error"):
                break
            c.twin.clock.advance(0.5)
        assert task["phase"] == "complete", task
        before = await c.read("/apps", "/store/installs", "/images")
    async with console(durable) as c:
        after = await c.read("/apps", "/store/installs", "/images")
    assert states(after[0]) == states(before[0]) == [("people-counter", "installed")]
    assert after[2] == before[2]
    records = [
        [{k: v for k, v in r.items() if k != "store_app"} for r in x["installs"]]
        for x in (before[1], after[1])
    ]
    assert records[0] == records[1] and records[0][0]["version"] == "1.1.0"


async def test_the_default_scenarios_app_is_there_once_and_running_after_a_restart(tmp_path: Path) -> None:
    settings = Settings(scenario=SCENARIOS / "default.yaml", step=True)
    settings = dataclasses.replace(settings, state_dir=tmp_path / "state")
    for _ in range(3):
        async with console(settings) as c:
            c.twin.clock.advance(10)
            apps, images, containers = await c.read("/apps", "/images", "/containers")
            logs = await c.logs("object-detector")
        assert states(apps) == [("object-detector", "running")]
        assert [i["name"] for i in images["images"]] == ["object-detector:1.0.0"]
        assert [x["id"] for x in containers["containers"]] == ["aipc-object-detector"]
        assert "frame " in logs


async def test_an_app_installed_from_a_dev_build_survives_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        project = await c.call("POST", "/dev/projects", json={"name": "Line counter", "key": "line-counter"})
        await c.call("POST", f"/dev/projects/{project['id']}/file", json={"path": "main.py", "content": "1"})
        await c.call("POST", f"/dev/projects/{project['id']}/build", json={"version": "1.0.0"})
        c.twin.clock.advance(60)
        build = (await c.call("GET", f"/dev/projects/{project['id']}/builds"))["builds"][0]
        body = {"manifest_path": build["manifest_path"], "image_path": build["image_path"]}
        task = await c.call("POST", "/apps/install-package", json=body)
        c.twin.clock.advance(30)
        assert (await c.call("GET", f"/apps/install-progress/{task['task_id']}"))["phase"] == "complete"
        await c.call("POST", "/apps/line-counter/start")
        c.twin.clock.advance(12)
        await c.call("POST", "/apps/line-counter/stop")
        before = [(await c.read("/apps"))[0], await c.logs("line-counter")]
    assert states(before[0]) == [("line-counter", "stopped")]
    async with console(durable) as c:
        after = [(await c.read("/apps"))[0], await c.logs("line-counter")]
        await c.call("POST", "/apps/line-counter/start")
    assert after == before and "Starting Line counter" in after[1]  # the stopped app's log is kept


# Models -------------------------------------------------------------------------------------------
async def test_models_and_their_desired_state_survive_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        form = {"model_type": "detection", "threshold": "0.4", "max_detections": "50"}
        for name in ("person.hef", "car.hef", "dropped.hef"):
            await c.call("POST", "/ai/models/upload", files={"model": (name, HEF)}, data=form)
        await c.call("POST", "/ai/models/person/load")
        await c.call("POST", "/ai/models/car/load")
        await c.call("POST", "/ai/models/car/unload")
        await c.call("DELETE", "/ai/models/dropped")
        await c.call("POST", "/ai/models/person/load", status=400)  # already loaded: refused
        await c.call("POST", "/ai/models/ghost/load", status=404)
        await c.call("POST", "/ai/models/upload", status=400, files={"model": ("bad.onnx", b"x")}, data=form)
        await c.call(
            "POST", "/ai/models", json={"model_id": "alias", "model_path": "/data/aipc/models/car.hef"}
        )
        copied = {"path": "/data/aipc/models", "content": "x"}
        await c.call(
            "POST", "/files/upload", files={"file": ("copied.hef", HEF)}, data={"path": copied["path"]}
        )
        assert (await c.call("POST", "/ai/models/scan"))["added"] == 1
        before = (await c.read("/ai/models"))[0]["models"]
    assert {m["model_id"]: m["status"] for m in before} == {
        "alias": "uploaded",
        "car": "uploaded",
        "copied": "uploaded",
        "person": "loaded",
        "yolov8n": "uploaded",
    }
    async with console(durable) as c:
        after = (await c.read("/ai/models"))[0]["models"]
        files = (await c.call("GET", "/files", params={"path": "/data/aipc/models"}))["files"]
    keep = ("model_id", "name", "model_path", "status", "desired_state", "source", "file_size", "file_hash")
    assert [{k: m.get(k) for k in keep} for m in after] == [{k: m.get(k) for k in keep} for m in before]
    assert sorted(f["name"] for f in files) == ["car.hef", "copied.hef", "person.hef", "yolov8n.hef"]


async def test_a_reboot_loads_the_models_whose_desired_state_is_loaded_again(durable: Settings) -> None:
    async with console(durable) as c:
        form = {"model_type": "detection"}
        for name in ("person.hef", "car.hef"):
            await c.call("POST", "/ai/models/upload", files={"model": (name, HEF)}, data=form)
        await c.call("POST", "/ai/models/person/load")
        await c.call("POST", "/system/restart")
        c.twin.clock.advance(5)
        camera = cameras_of(c.twin.world)["cam-01"]
        assert not camera.powered and camera.ai.get("person").status == "uploaded"
        assert camera.ai.get("person").desired_state == "loaded"  # the accelerator forgot it, not the table
        c.twin.clock.advance(60)
        assert camera.powered
        login = await c.http.post("/api/login", json={"username": "admin", "password": "password"})
        c.auth = {"Authorization": login.json()["data"]["token"]}
        models = {
            m["model_id"]: (m["status"], m["desired_state"])
            for m in (await c.read("/ai/models"))[0]["models"]
        }
    assert models == {
        "car": ("uploaded", "unloaded"),
        "person": ("loaded", "loaded"),
        "yolov8n": ("uploaded", "unloaded"),
    }


# Containers and images ----------------------------------------------------------------------------
async def test_container_and_image_writes_survive_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        await install(c.http, c.twin, c.auth)
        await c.call(
            "POST", "/apps/wizard", json={"app_id": "b", "name": "B", "image": "people-counter:1.2.0"}
        )
        await c.call("POST", "/apps/people-counter/start")
        await c.call("POST", "/containers/aipc-people-counter/stop")
        await c.call("POST", "/containers/aipc-people-counter/start")
        await c.call("POST", "/containers/aipc-people-counter/restart")
        await c.call("POST", "/apps/b/start")
        await c.call("POST", "/containers/aipc-b/stop")
        await c.call("DELETE", "/containers/aipc-b")
        # Refused: they change nothing, before or after the restart.
        await c.call("POST", "/images/pull", status=500, json={"image": "nginx:latest"})
        await c.call("DELETE", "/images/people-counter:1.2.0", status=500)  # in use
        await c.call("DELETE", "/containers/aipc-people-counter", status=400)  # running
        await c.call("POST", "/containers/ghost/start", status=404)
        # A second app's image, deleted while no container uses it.
        await c.install_door_watch()
        await c.call("DELETE", "/images/door-watch:1.2.0")
        before = await c.read("/containers", "/images", "/apps")
    assert [i["name"] for i in before[1]["images"]] == ["people-counter:1.2.0"]
    assert [(x["id"], x["state"]) for x in before[0]["containers"]] == [("aipc-people-counter", "running")]
    async with console(durable) as c:
        c.twin.clock.advance(5)
        after = await c.read("/containers", "/images", "/apps")
        await c.call("DELETE", "/apps/b")
        await c.call("DELETE", "/apps/door-watch")
        await c.call("DELETE", "/apps/people-counter")
    # people-counter has no autostart: it was running, it comes back stopped with its container.
    assert [(x["id"], x["state"]) for x in after[0]["containers"]] == [("aipc-people-counter", "stopped")]
    assert after[1] == before[1]
    async with console(durable) as c:
        assert (await c.read("/containers", "/images")) == [
            {"containers": [], "total": 0, "page": 1, "page_size": 20,
             "status_count": {"all": 0, "running": 0, "stopped": 0, "error": 0}},
            {"images": []},
        ]  # fmt: skip


# Files, SSH, storage ------------------------------------------------------------------------------
async def test_file_writes_ssh_config_and_storage_survive_a_restart(durable: Settings) -> None:
    async with console(durable) as c:
        await c.call("POST", "/files/mkdir", json={"path": "/data/aipc/site"})
        await c.call("POST", "/files/content", json={"path": "/data/aipc/site/a.conf", "content": "one"})
        await c.call("POST", "/files/content", json={"path": "/data/aipc/site/a.conf", "content": "two"})
        await c.call(
            "POST", "/files/upload", files={"file": ("b.bin", b"\x00\x01")}, data={"path": "/data/aipc/site"}
        )
        await c.call(
            "POST",
            "/files/rename",
            json={"old_path": "/data/aipc/site/b.bin", "new_path": "/data/aipc/c.bin"},
        )
        await c.call("POST", "/ssh/config", json={"port": "2222", "password_authentication": "no"})
        await c.call("POST", "/storage/format", json={"device": "/dev/mmcblk1p1", "fstype": "ext4"})
        await c.call("POST", "/storage/mount", json={"device": "/dev/mmcblk1p1", "target": "/mnt/sd"})
        before = await c.read(
            "/files?path=/data/aipc/site",
            "/files/content?path=/data/aipc/site/a.conf",
            "/ssh/config",
            "/storage/disks",
        )
    assert before[1]["content"] == "two" and before[2]["config"]["Port"] == "2222"
    sd = before[3]["blockdevices"][1]["children"][0]
    assert (sd["fstype"], sd["mountpoint"]) == ("ext4", "/mnt/sd")
    async with console(durable) as c:
        after = await c.read(
            "/files?path=/data/aipc/site",
            "/files/content?path=/data/aipc/site/a.conf",
            "/ssh/config",
            "/storage/disks",
        )
        assert (await c.call("GET", "/files/content", params={"path": "/data/aipc/c.bin"}))["size"] == 2
    assert after[:3] == before[:3]
    sd = after[3]["blockdevices"][1]["children"][0]
    assert (sd["fstype"], sd["mountpoint"]) == ("ext4", None)  # formatted; a `mount` ends with the boot


# Settings, workbench, time, network, event bus ----------------------------------------------------
async def test_settings_workbench_time_and_network_survive_a_restart(durable: Settings) -> None:
    reads = ("/settings", "/dev/projects", "/store/installs", "/system/time/config", "/network/config")
    async with console(durable) as c:
        await c.call("POST", "/settings", json={"key": "kept", "value": "1"})
        await c.call("POST", "/settings", json={"key": "dropped", "value": "2"})
        await c.call("DELETE", "/settings/dropped")
        project = await c.call("POST", "/dev/projects", json={"name": "Demo", "key": "demo"})
        await c.call("PUT", f"/dev/projects/{project['id']}", json={"description": "edited"})
        await c.call("POST", "/store/installs", json={"app_id": "custom", "name": "Custom", "version": "3"})
        await c.call("PUT", "/store/installs/custom", json={"version": "4"})
        config = {
            "timezone": "Europe/Berlin",
            "time_format": "24h",
            "sync_mode": "ntp",
            "ntp_server": "pool.ntp.org",
            "ntp_interval": 3600,
        }
        await c.call("PUT", "/system/time/config", json=config)
        static = {"mode": "static", "ip_address": "10.0.0.7", "subnet_mask": "255.0.0.0", "dns1": "10.0.0.1"}
        await c.call("POST", "/network/config", json=static)
        before = await c.read(*reads)
    assert before[0] == {"settings": {"kept": "1"}} and before[3]["timezone"] == "Europe/Berlin"
    async with console(durable) as c:
        after = await c.read(*reads)
    assert after[:3] == before[:3] and after[4] == before[4]
    keep = ("timezone", "time_format", "sync_mode", "ntp")
    assert {k: after[3][k] for k in keep} == {k: before[3][k] for k in keep}


async def test_event_bus_topics_come_back_with_the_apps_that_subscribe(durable: Settings) -> None:
    """The bus keeps its subscribers in memory: after a restart a topic is there again when the app
    that subscribes to it is started again."""
    subscribing = AUTOSTART.replace(
        "      value: main\n",
        "      value: main\n    - name: SUBSCRIBE_TOPICS\n      value: app/people-counter/cmd\n",
    )
    async with console(durable) as c:
        await install(c.http, c.twin, c.auth, manifest=subscribing)
        await c.call("POST", "/apps/people-counter/start")
        await c.call(
            "POST", "/events/publish", json={"topic": "app/people-counter/cmd", "payload": {"go": 1}}
        )
        before = [t["topic"] for t in (await c.read("/events/topics"))[0]["topics"]]
    assert "app/people-counter/cmd" in before
    async with console(durable) as c:
        await asyncio.sleep(0)
        c.twin.clock.advance(5)
        after = [t["topic"] for t in (await c.read("/events/topics"))[0]["topics"]]
    assert "app/people-counter/cmd" in after


async def test_an_unreadable_platform_document_is_skipped_and_the_camera_boots_as_new(
    durable: Settings,
) -> None:
    async with console(durable) as c:
        await install(c.http, c.twin, c.auth)
        c.twin.world.store.collection(PLATFORM_KIND).put("cam-01", {"apps": [{"manifest": "nope"}]})
    async with console(durable) as c:
        assert (await c.read("/apps", "/images")) == [[], {"images": []}]
        assert (PLATFORM_KIND, "cam-01") in c.twin.world.store.unreadable
    async with console(dataclasses.replace(durable, state_dir=None)) as c:
        await install(c.http, c.twin, c.auth)
    async with console(dataclasses.replace(durable, state_dir=None)) as c:
        assert (await c.read("/apps"))[0] == []  # no state dir, no memory
