"""Apps a scenario puts on a camera before anyone connects (``fleet.cameras.apps``).

Each name is a package directory ``assets/apps/<name>/``: its ``app.yaml`` and the one image
archive next to it (``scripts/make_assets.py`` writes them). They go through the app manager's
ordinary pipeline, staged like uploads, then the synchronous install, and the app starts at boot
(in the world's past when it has one: :mod:`twin.camera.app_past`), so its NDJSON logs, its
inference subscription and its events on the bus are there from the first minute (the boxes show
on the video when the overlay is on: ``fleet.cameras.ai_overlay``).

A camera that booted before on the same state directory has its app registry on disk: it is read
back instead (``twin.camera.platform_state.DurablePlatform``), so an app is installed once, and the
app manager's startup recovery starts it again (a removed app stays removed).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from twin.camera.app_past import run_since_boot
from twin.camera.apps import IMAGE_SUFFIXES

if TYPE_CHECKING:
    from twin.camera.apps import AppManager

APP_PACKAGES = Path(__file__).resolve().parents[2] / "assets" / "apps"


def package(name: str) -> tuple[bytes, str, bytes]:
    """The package's manifest, image file name and image archive."""
    folder = APP_PACKAGES / name
    manifest = folder / "app.yaml"
    images = sorted(p for p in folder.glob("*") if p.name.lower().endswith(IMAGE_SUFFIXES))
    if not manifest.is_file() or len(images) != 1:
        raise ValueError(f"app package {name!r}: {folder} needs app.yaml and one image archive")
    return manifest.read_bytes(), images[0].name, images[0].read_bytes()


def preinstall(apps: AppManager, names: tuple[str, ...]) -> None:
    if apps.durable.restore():
        return
    for name in names:
        manifest, image_name, image = package(name)
        image_path = apps.upload_image(image_name, image)
        staged = apps.upload_manifest("app.yaml", manifest)
        apps.install(staged.path, image_path, force=False)
        if not run_since_boot(apps, staged.app_id):
            apps.begin_start(staged.app_id)
