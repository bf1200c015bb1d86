"""Writes assets/: the sample packages a newcomer (and the scenarios) try on the camera's gateway.

- ``apps/object-detector/``: an AI detection app, its ``app.yaml`` manifest and its image archive
  (``POST /api/v1/apps/upload-manifest``, ``upload-image``, ``install-package``). The default
  scenario installs and starts it on its camera.
- ``models/person-detector.hef``: a model file for ``POST /api/v1/ai/models/upload``.
- ``ota/aipc-firmware-0.2.0.tar.gz``: a firmware package (``VERSION``, ``BUILD_INFO``,
  ``deploy.sh``) for ``POST /api/v1/system/ota/install``.
- ``os/aipc-os-1.5.swu``: an OS-upgrade image (an SWUpdate cpio archive whose ``sw-description``
  carries the version) for ``POST /api/v1/system/os-upgrade/upload``.

Every file is byte-for-byte reproducible (fixed timestamps, no gzip name or time), so running this
again leaves the committed files unchanged: ``python scripts/make_assets.py [--check]``.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import json
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ASSETS = ROOT / "assets"
MTIME = 1767225600  # 2026-01-01T00:00:00Z

APP_ID, APP_VERSION = "object-detector", "1.0.0"
MANIFEST = f"""\
# An AI detection app: subscribes to the inference results of the stock yolov8n model on the main
# stream, logs one NDJSON line per analysed frame and publishes its detections on the event bus.
apiVersion: v1
kind: Application
metadata:
  id: {APP_ID}
  name: Object detector
  version: {APP_VERSION}
  description: Detects people and vehicles on the main stream and publishes them as events
spec:
  image: {APP_ID}:{APP_VERSION}
  autostart: true
  resources:
    cpu: "50%"
    memory: 256Mi
  env:
    - name: MODEL_ID
      value: yolov8n
    - name: STREAM_ID
      value: main
  volumes:
    - host: /data/aipc/apps/{APP_ID}
      container: /app/data
  permissions:
    video: [main]
    inference:
      models: [yolov8n]
    events:
      publish: ["app/{APP_ID}/*"]
      subscribe: ["app/{APP_ID}/*"]
"""
APP_MAIN = f"""\
import json
import sys

# The container's entry point: read detections, print them as NDJSON.
for line in sys.stdin:
    print(json.dumps({{"app": "{APP_ID}", "detections": json.loads(line)}}), flush=True)
"""


def _tar(files: dict[str, bytes], *, gz: bool) -> bytes:
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size, info.mtime, info.mode = len(data), MTIME, 0o755 if name.endswith(".sh") else 0o644
            info.uname = info.gname = "root"
            tar.addfile(info, io.BytesIO(data))
    if not gz:
        return raw.getvalue()
    out = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=out, mtime=0) as z:
        z.write(raw.getvalue())
    return out.getvalue()


def image_archive() -> bytes:
    """A ``docker save`` layout: manifest.json, the image config and one layer."""
    layer = _tar({"app/main.py": APP_MAIN.encode()}, gz=False)
    layer_id = hashlib.sha256(layer).hexdigest()
    config = json.dumps(
        {
            "architecture": "arm64",
            "os": "linux",
            "config": {"Cmd": ["python3", "/app/main.py"], "WorkingDir": "/app"},
            "rootfs": {"type": "layers", "diff_ids": [f"sha256:{layer_id}"]},
        },
        sort_keys=True,
    ).encode()
    config_id = hashlib.sha256(config).hexdigest()
    manifest = [
        {
            "Config": f"{config_id}.json",
            "RepoTags": [f"{APP_ID}:{APP_VERSION}"],
            "Layers": [f"{layer_id}/layer.tar"],
        }
    ]
    return _tar(
        {
            "manifest.json": json.dumps(manifest).encode(),
            f"{config_id}.json": config,
            f"{layer_id}/layer.tar": layer,
        },
        gz=True,
    )


def model_file() -> bytes:
    """A small stand-in for a compiled Hailo network: the HEF magic, then deterministic bytes."""
    body = b"".join(hashlib.sha256(b"person-detector/%d" % i).digest() for i in range(256))
    return b"\x01HEF" + body


def firmware() -> bytes:
    return _tar(
        {
            "VERSION": b"0.2.0\n",
            "BUILD_INFO": b"build_date=2026-09-01T08:00:00+08:00\ngit_commit=5e1f0a7\n",
            "deploy.sh": b"#!/bin/sh\nset -e\ncp -a bin/. /opt/aipc/bin/\n",
            "bin/platform-api": b"\x7fELF" + bytes(512),
        },
        gz=True,
    )


def _cpio_entry(name: str, data: bytes, ino: int) -> bytes:
    """One entry of a ``newc`` cpio archive (magic 070701), padded to four bytes."""
    fields = (ino, 0o100644, 0, 0, 1, MTIME, len(data), 0, 0, 0, 0, len(name) + 1, 0)
    header = b"070701" + b"".join(b"%08X" % f for f in fields)
    head = header + name.encode() + b"\0"
    head += b"\0" * (-len(head) % 4)
    return head + data + b"\0" * (-len(data) % 4)


def os_image() -> bytes:
    description = b'software = {\n  version = "1.5";\n  hardware-compatibility = ["1.0"];\n};\n'
    rootfs = b"".join(hashlib.sha256(b"rootfs/%d" % i).digest() for i in range(256))
    entries = [("sw-description", description), ("rootfs.ext4.gz", rootfs)]
    body = b"".join(_cpio_entry(name, data, i + 1) for i, (name, data) in enumerate(entries))
    return body + _cpio_entry("TRAILER!!!", b"", 0)


def files() -> dict[str, bytes]:
    return {
        f"apps/{APP_ID}/app.yaml": MANIFEST.encode(),
        f"apps/{APP_ID}/{APP_ID}-{APP_VERSION}.tar.gz": image_archive(),
        "models/person-detector.hef": model_file(),
        "ota/aipc-firmware-0.2.0.tar.gz": firmware(),
        "os/aipc-os-1.5.swu": os_image(),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a file differs from what this writes")
    args = parser.parse_args()
    stale = []
    for rel, data in files().items():
        path = ASSETS / rel
        if path.exists() and path.read_bytes() == data:
            continue
        stale.append(rel)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    for rel in stale:
        print(("stale: " if args.check else "wrote: ") + rel)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
