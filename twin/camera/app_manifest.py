"""The app manifest (``app.yaml``): parsing and validation as the device's app manager does it.

``apiVersion: v1``; ``kind`` Application, ModelService or BusinessService; ``metadata{id, name,
version}`` required. ``spec`` is a single-container app (``image``) or a multi-container one
(``containers`` with exactly one ``main``). Resources, volumes, health checks, permissions and
plugin capabilities are format-checked; every plugin capability topic must be covered by
``permissions.events``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import yaml

from hardware.ports.errors import InvalidInput
from twin.camera.event_bus import covered

KINDS = ("Application", "ModelService", "BusinessService")
DEFAULT_CPU = 0.5
DEFAULT_MEMORY = 256 * 1024 * 1024
APP_ID = re.compile(r"^[a-z0-9][a-z0-9_.-]{0,62}$")
_CPU = re.compile(r"^(\d+(\.\d+)?)(%?)$")
_MEMORY = re.compile(r"^(\d+(\.\d+)?)(Ki|Mi|Gi|K|M|G)?$")
_UNITS = {None: 1, "K": 1000, "M": 1000**2, "G": 1000**3, "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3}


@dataclass(frozen=True)
class VolumeSpec:
    host: str
    container: str
    readonly: bool = False


@dataclass(frozen=True)
class Manifest:
    app_id: str
    name: str
    version: str
    kind: str
    image: str
    description: str = ""
    cpu: float = DEFAULT_CPU
    memory: int = DEFAULT_MEMORY
    env: dict[str, str] = field(default_factory=dict)
    volumes: tuple[VolumeSpec, ...] = ()
    healthcheck: dict[str, Any] = field(default_factory=dict)
    permissions: dict[str, Any] = field(default_factory=dict)
    autostart: bool = False
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def models(self) -> tuple[str, ...]:
        inference = self.permissions.get("inference") or {}
        return tuple(str(m) for m in inference.get("models") or ())

    @property
    def video(self) -> tuple[str, ...]:
        return tuple(str(v) for v in self.permissions.get("video") or ())

    @property
    def subscribe(self) -> tuple[str, ...]:
        return tuple(str(t) for t in (self.permissions.get("events") or {}).get("subscribe") or ())

    @property
    def publish(self) -> tuple[str, ...]:
        return tuple(str(t) for t in (self.permissions.get("events") or {}).get("publish") or ())


def _fail(message: str) -> InvalidInput:
    return InvalidInput(f"invalid manifest: {message}")


def parse(text: bytes | str) -> Manifest:
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as err:
        raise _fail(f"yaml: {err}") from err
    if not isinstance(doc, dict):
        raise _fail("not a mapping")
    if doc.get("apiVersion") != "v1":
        raise _fail(f"unsupported apiVersion {doc.get('apiVersion')!r}")
    if doc.get("kind") not in KINDS:
        raise _fail(f"kind must be one of {', '.join(KINDS)}")
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        raise _fail("metadata is required")
    for key in ("id", "name", "version"):
        if not isinstance(meta.get(key), str | int | float) or str(meta.get(key)) == "":
            raise _fail(f"metadata.{key} is required")
    app_id = str(meta["id"])
    if not APP_ID.match(app_id):
        raise _fail(f"metadata.id {app_id!r} is not a valid id")
    spec = doc.get("spec")
    if not isinstance(spec, dict):
        raise _fail("spec is required")
    main = _main_container(spec)
    permissions = main.get("permissions") or spec.get("permissions") or {}
    if not isinstance(permissions, dict):
        raise _fail("spec.permissions must be a mapping")
    _check_network(permissions)
    _check_plugins(spec, permissions)
    resources = main.get("resources") or spec.get("resources") or {}
    return Manifest(
        app_id=app_id,
        name=str(meta["name"]),
        version=str(meta["version"]),
        kind=str(doc["kind"]),
        image=str(main["image"]),
        description=str(meta.get("description") or ""),
        cpu=_cpu(resources.get("cpu")),
        memory=_memory(resources.get("memory")),
        env=_env(main.get("env") or spec.get("env") or []),
        volumes=_volumes(main.get("volumes") or spec.get("volumes") or []),
        healthcheck=_healthcheck(main.get("healthcheck") or spec.get("healthcheck") or {}),
        permissions=permissions,
        autostart=bool(spec.get("autostart", False)),
        raw=doc,
    )


def _main_container(spec: dict[str, Any]) -> dict[str, Any]:
    containers = spec.get("containers")
    if containers is None:
        if not isinstance(spec.get("image"), str) or not spec["image"]:
            raise _fail("spec.image is required")
        return spec
    if not isinstance(containers, dict) or not containers:
        raise _fail("spec.containers must be a non-empty mapping")
    mains = []
    for name, ctr in containers.items():
        if not isinstance(ctr, dict) or not isinstance(ctr.get("image"), str) or not ctr["image"]:
            raise _fail(f"containers.{name}.image is required")
        role = ctr.get("role", "main")
        if role not in ("main", "sub"):
            raise _fail(f"containers.{name}.role must be main or sub")
        if role == "sub" and ctr.get("permissions"):
            raise _fail(f"containers.{name}: a sub container may not declare permissions")
        if role == "main":
            mains.append(ctr)
    if len(mains) != 1:
        raise _fail("exactly one container must have role main")
    return mains[0]


def _cpu(value: Any) -> float:
    if value is None:
        return DEFAULT_CPU
    m = _CPU.match(str(value).strip())
    if not m:
        raise _fail(f"resources.cpu {value!r} is not a CPU quantity")
    amount = float(m.group(1))
    return amount / 100.0 if m.group(3) else amount


def _memory(value: Any) -> int:
    if value is None:
        return DEFAULT_MEMORY
    m = _MEMORY.match(str(value).strip())
    if not m:
        raise _fail(f"resources.memory {value!r} is not a memory quantity")
    return int(float(m.group(1)) * _UNITS[m.group(3)])


def _env(items: Any) -> dict[str, str]:
    if not isinstance(items, list):
        raise _fail("env must be a list of {name, value}")
    env = {}
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            raise _fail("env entries need a name")
        env[item["name"]] = str(item.get("value", ""))
    return env


def _volumes(items: Any) -> tuple[VolumeSpec, ...]:
    if not isinstance(items, list):
        raise _fail("volumes must be a list")
    out = []
    for item in items:
        if not isinstance(item, dict):
            raise _fail("volume entries must be mappings")
        host, target = item.get("host"), item.get("container")
        if not isinstance(host, str) or not host.startswith("/"):
            raise _fail("volumes[].host must be an absolute path")
        if not isinstance(target, str) or not target.startswith("/"):
            raise _fail("volumes[].container must be an absolute path")
        out.append(VolumeSpec(host, target, bool(item.get("readonly", False))))
    return tuple(out)


def _healthcheck(check: Any) -> dict[str, Any]:
    if not isinstance(check, dict):
        raise _fail("healthcheck must be a mapping")
    if check and check.get("type", "http") not in ("command", "http", "tcp"):
        raise _fail("healthcheck.type must be command, http or tcp")
    return dict(check)


def _check_network(permissions: dict[str, Any]) -> None:
    network = permissions.get("network") or {}
    if not isinstance(network, dict):
        raise _fail("permissions.network must be a mapping")
    mode = network.get("mode", "isolated")
    if mode not in ("isolated", "host"):
        raise _fail("permissions.network.mode must be isolated or host")
    if network.get("inbound") and mode != "host":
        raise _fail("permissions.network.inbound is only allowed with mode host")


def _check_plugins(spec: dict[str, Any], permissions: dict[str, Any]) -> None:
    events = permissions.get("events") or {}
    allowed = {"publish": events.get("publish") or [], "subscribe": events.get("subscribe") or []}
    for cap in (spec.get("plugin") or {}).get("capabilities") or []:
        if not isinstance(cap, dict) or not cap.get("id"):
            raise _fail("plugin capabilities need an id")
        transport = cap.get("transport", "grpc")
        if transport in ("grpc", "both") and not cap.get("proto"):
            raise _fail(f'plugin capability "{cap["id"]}" needs proto for transport {transport}')
        topics = cap.get("topics") or {}
        if transport == "event" and not topics:
            raise _fail(f'plugin capability "{cap["id"]}" needs topics for transport event')
        for direction in ("publish", "subscribe"):
            for topic in topics.get(direction) or []:
                if not covered(str(topic), allowed[direction]):
                    raise _fail(
                        f'plugin capability "{cap["id"]}" {direction}s topic "{topic}" '
                        f"not covered by permissions.events.{direction}"
                    )
