"""Extensions: a virtual extensions directory, installs, commands, assets and push streams.

The server's extensions directory (``/var/lib/neomind/extensions``) is part of the world, never the
host's file system: it holds the manifests of the two built-in simulated extensions, one more sample
(``energy-meter``) and whatever an operator or scenario drops in with :meth:`place_manifest`.
At start the built-ins are loaded; ``POST /extensions/sync`` scans the directory and installs every
valid manifest not installed yet, before answering.

- ``weather-forecast`` (stateless tool): deterministic weather from the world's seed.
- ``camera-stream`` (push-mode video): a stream session renders the simulated camera's scene (the
  same scene as its gateway's video) as JPEG frames (:mod:`twin.automation.extension_stream`).
- Manifest-only extensions answer their declared commands with the declared ``response`` merged
  with the arguments.

The marketplaces are :mod:`twin.automation.market`.
"""

from __future__ import annotations

import json
import math
import uuid
from collections import deque
from collections.abc import Mapping
from typing import Any

from hardware.ports.errors import Conflict, InvalidInput, NotFound, Unavailable
from hardware.ports.events import EventKind
from hardware.ports.extensions import (
    CommandResult,
    Extension,
    ExtensionCommand,
    ExtensionMetric,
    StreamCapability,
    SyncReport,
)
from twin.automation.extension_manifests import (
    ASSET_TYPES,
    BUILTINS,
    DIRECTORY,
    DIRECTORY_FILES,
    EXTENSION_TYPES,
    MAX_SESSIONS,
    check_manifest,
)
from twin.automation.extension_stream import FRAME_SIZE, PushSession, first_camera
from twin.camera.video.scene import SceneWorld, scene_of
from twin.rng import hash_uniform

LOG_LINES = 200


class ExtensionRegistry:
    """Implements :class:`hardware.ports.agents.Extensions` over the world."""

    def __init__(self, world: SceneWorld) -> None:
        self.world = world
        self.installed = world.store.collection("extensions")
        self.dropped_files = world.store.collection("extension_files")
        self.open_sessions: dict[str, PushSession] = {}
        self.log: dict[str, deque[Mapping[str, Any]]] = {}
        """Recent log lines per extension (in memory, bounded)."""
        self.last_sync: dict[str, Any] | None = None
        for manifest in BUILTINS:
            if self.installed.get(manifest["id"]) is None:
                self._install(manifest, f"{DIRECTORY}/{manifest['id']}.json")

    # Directory --------------------------------------------------------------------------------
    def directory(self) -> dict[str, Any]:
        """File name → manifest, as the directory holds them now."""
        files: dict[str, Any] = dict(DIRECTORY_FILES)
        files.update({name: doc["manifest"] for name, doc in self.dropped_files.items()})
        return files

    def place_manifest(self, file_name: str, manifest: Any) -> None:
        """Drop a manifest file into the (virtual) extensions directory; :meth:`sync` installs it."""
        if "/" in file_name or not file_name.endswith(".json"):
            raise InvalidInput(
                "a manifest is a .json file directly in the extensions directory", field="file"
            )
        self.dropped_files.put(file_name, {"manifest": manifest})

    def upload(self, file_name: str, content: bytes) -> Extension:
        try:
            manifest = json.loads(content)
        except ValueError as err:
            raise InvalidInput("the uploaded manifest is not valid JSON", field="file") from err
        reason = check_manifest(manifest)
        if reason is not None:
            raise InvalidInput(f"invalid manifest: {reason}", field="file")
        self.place_manifest(file_name, manifest)
        return self.register(file_name)

    def register(self, file_name: str) -> Extension:
        name = file_name.removeprefix(DIRECTORY + "/")  # a name lookup: other paths name nothing
        manifest = self.directory().get(name)
        if manifest is None:
            raise NotFound(f"No manifest {file_name} in {DIRECTORY}", resource="extension_file")
        reason = check_manifest(manifest)
        if reason is not None:
            raise InvalidInput(f"invalid manifest: {reason}", field="file_path")
        if self.installed.get(manifest["id"]) is not None:
            raise Conflict(f"Extension {manifest['id']} is already installed", resource="extension")
        self._install(manifest, f"{DIRECTORY}/{name}")
        return self.get_extension(manifest["id"])

    def sync(self) -> SyncReport:
        installed, skipped, failed = [], [], []
        files = self.directory()
        for name in sorted(files):
            manifest = files[name]
            reason = check_manifest(manifest)
            if reason is not None:
                failed.append((name, reason))
            elif self.installed.get(manifest["id"]) is not None:
                skipped.append(manifest["id"])
            else:
                self._install(manifest, f"{DIRECTORY}/{name}")
                installed.append(manifest["id"])
        report = SyncReport(len(files), tuple(installed), tuple(skipped), tuple(failed))
        self.last_sync = {
            "synced_at": self.world.now(),
            "scanned": report.scanned,
            "installed": list(installed),
        }
        self.last_sync["failed"] = [{"file": f, "reason": why} for f, why in failed]
        return report

    def _install(self, manifest: Mapping[str, Any], path: str) -> None:
        doc = {"manifest": dict(manifest), "file_path": path, "loaded_at": self.world.now(), "enabled": True}
        self.installed.put(manifest["id"], doc)
        self._log(manifest["id"], f"installed {manifest['id']} {manifest['version']} from {path}")

    # Reading ----------------------------------------------------------------------------------
    def list_extensions(self) -> list[Extension]:
        return [self._value(doc) for doc in self.installed.values()]

    def types(self) -> list[str]:
        return list(EXTENSION_TYPES)

    def get_extension(self, extension_id: str) -> Extension:
        return self._value(self._doc(extension_id))

    def health(self, extension_id: str) -> Mapping[str, Any]:
        ext = self.get_extension(extension_id)
        return {
            "extension_id": ext.id,
            "healthy": ext.health_status == "healthy",
            "status": ext.health_status,
            "active_sessions": sum(1 for s in self.open_sessions.values() if s.extension_id == ext.id),
            "checked_at": self.world.now(),
        }

    def asset(self, extension_id: str, path: str) -> tuple[bytes, str]:
        manifest = self._doc(extension_id)["manifest"]
        assets = manifest.get("assets") or {}
        if path not in assets:  # a name lookup: ``..`` and absolute paths simply name nothing
            raise NotFound(f"Asset {path}", resource="asset")
        suffix = path[path.rfind(".") :] if "." in path else ""
        return assets[path].encode(), ASSET_TYPES.get(suffix, "application/octet-stream")

    # Commands ---------------------------------------------------------------------------------
    def command(self, extension_id: str, command: str, args: Mapping[str, Any]) -> CommandResult:
        doc = self._doc(extension_id)
        if not doc["enabled"]:
            raise Conflict(f"Extension {extension_id} is disabled", resource="extension")
        manifest = doc["manifest"]
        spec = next((c for c in manifest.get("commands", []) if c.get("id") == command), None)
        if spec is None:
            raise NotFound(f"Command {command} of extension {extension_id}", resource="command")
        if command in doc.get("disabled_commands", ()):
            raise Conflict(f"Command {command} of extension {extension_id} is disabled", resource="command")
        for name in spec.get("input_schema", {}).get("required", []):
            if name not in args:
                raise InvalidInput(f"Missing required argument '{name}'", field=name)
        output = self._run_command(manifest, command, args, spec)
        key = self.world.streams.key(f"extension:{extension_id}:{command}")
        duration = int(5 + 40 * float(hash_uniform(key, int(self.world.env.now * 1000))))
        self.world.emit(
            EventKind.EXTENSION_COMMAND_COMPLETED,
            extension_id,
            extension_id=extension_id,
            command=command,
            duration_ms=duration,
            timestamp=self.world.now(),
        )
        self._log(extension_id, f"command {command} completed in {duration} ms")
        return CommandResult(extension_id, command, True, output, duration)

    def _run_command(
        self, manifest: Mapping[str, Any], command: str, args: Mapping[str, Any], spec: Mapping[str, Any]
    ) -> dict[str, Any]:
        if manifest["id"] == "weather-forecast" and manifest.get("builtin"):
            return self._weather(command, args)
        if manifest["id"] == "camera-stream" and manifest.get("builtin"):
            camera_id = first_camera(self.world)
            boxes = scene_of(self.world, camera_id).boxes(self.world.env.now)
            objects = [{"label": b.label, "x": round(b.x, 4), "y": round(b.y, 4)} for b in boxes]
            return {
                "camera_id": camera_id,
                "width": FRAME_SIZE[0],
                "height": FRAME_SIZE[1],
                "objects": objects,
            }
        return {**dict(spec.get("response") or {}), "args": dict(args)}

    def _weather(self, command: str, args: Mapping[str, Any]) -> dict[str, Any]:
        city = str(args.get("city", ""))
        if not city.strip():
            raise InvalidInput("city must not be empty", field="city")
        key = self.world.streams.key(f"weather:{city.lower()}")
        now = self.world.now()

        def temperature(t: float) -> float:
            day = 2 * math.pi * ((t % 86_400) / 86_400 - 0.375)
            return round(12 + 10 * float(hash_uniform(key, 0)) + 5 * math.sin(day), 1)

        if command == "get_current":
            hour = int(now // 3600)
            return {
                "city": city,
                "temperature_c": temperature(now),
                "humidity": round(40 + 40 * float(hash_uniform(key, hour)), 1),
                "wind_kmh": round(30 * float(hash_uniform(key, hour + 1)), 1),
                "observed_at": now,
            }
        hours = args.get("hours", 12)
        if not isinstance(hours, int) or isinstance(hours, bool) or not 1 <= hours <= 48:
            raise InvalidInput("hours must be an integer from 1 to 48", field="hours")
        start = (now // 3600 + 1) * 3600
        return {
            "city": city,
            "hourly": [
                {"time": start + h * 3600, "temperature_c": temperature(start + h * 3600)}
                for h in range(hours)
            ],
        }

    # Streams ----------------------------------------------------------------------------------
    def open_stream(self, extension_id: str) -> PushSession:
        doc = self._doc(extension_id)
        stream = doc["manifest"].get("stream")
        if not doc["enabled"]:
            raise InvalidInput(
                f"Extension {extension_id} is disabled", field="extension", stream_code="EXTENSION_DISABLED"
            )
        if not stream or stream.get("mode") != "push":
            raise InvalidInput(
                f"Extension {extension_id} has no push stream",
                field="extension",
                stream_code="PUSH_NOT_AVAILABLE",
            )
        active = [s for s in self.open_sessions.values() if s.extension_id == extension_id]
        if len(active) >= stream.get("max_concurrent_sessions", MAX_SESSIONS):
            raise Unavailable(
                "Too many stream sessions", resource="stream", stream_code="SESSION_INIT_FAILED"
            )
        session_id = str(uuid.UUID(bytes=self.world.streams.get("automation.streams").bytes(16), version=4))
        session = PushSession(self, extension_id, session_id)
        self.open_sessions[session_id] = session
        return session

    # Lifecycle --------------------------------------------------------------------------------
    def set_enabled(self, extension_id: str, enabled: bool) -> Extension:
        doc = self._doc(extension_id)
        doc["enabled"] = enabled
        self.installed.put(extension_id, doc)
        self._log(extension_id, "started" if enabled else "stopped")
        if not enabled:
            for session in [s for s in self.open_sessions.values() if s.extension_id == extension_id]:
                session.close()
        return self._value(doc)

    def set_command_enabled(self, extension_id: str, command: str, enabled: bool) -> Extension:
        doc = self._doc(extension_id)
        if command not in {c.get("id") for c in doc["manifest"].get("commands", [])}:
            raise NotFound(f"Command {command} of extension {extension_id}", resource="command")
        disabled = set(doc.get("disabled_commands", ())) - {command} | (set() if enabled else {command})
        doc["disabled_commands"] = sorted(disabled)
        self.installed.put(extension_id, doc)
        self._log(extension_id, f"command {command} {'enabled' if enabled else 'disabled'}")
        return self._value(doc)

    def reload(self, extension_id: str) -> Extension:
        doc = self._doc(extension_id)
        doc["loaded_at"] = self.world.now()
        self.installed.put(extension_id, doc)
        self._log(extension_id, "reloaded")
        return self._value(doc)

    def descriptor(self, extension_id: str) -> Mapping[str, Any]:
        manifest = dict(self._doc(extension_id)["manifest"])
        manifest["assets"] = sorted(manifest.get("assets") or {})
        manifest.pop("builtin", None)
        return manifest

    def set_config(self, extension_id: str, config: Mapping[str, Any]) -> Extension:
        doc = self._doc(extension_id)
        doc["config"] = dict(config)
        self.installed.put(extension_id, doc)
        self._log(extension_id, "configuration updated")
        return self._value(doc)

    def logs(self, extension_id: str, limit: int = 100) -> list[Mapping[str, Any]]:
        self._doc(extension_id)
        return list(self.log.get(extension_id, ()))[-limit:]

    def clear_logs(self, extension_id: str) -> int:
        self._doc(extension_id)
        cleared = len(self.log.get(extension_id, ()))
        self.log.pop(extension_id, None)
        return cleared

    def sync_status(self) -> Mapping[str, Any]:
        return self.last_sync or {"synced_at": None, "scanned": 0, "installed": [], "failed": []}

    def _log(self, extension_id: str, message: str, level: str = "info") -> None:
        lines = self.log.setdefault(extension_id, deque(maxlen=LOG_LINES))
        lines.append({"timestamp": self.world.now(), "level": level, "message": message})

    def uninstall(self, extension_id: str) -> None:
        self.set_enabled(extension_id, False)
        self.installed.delete(extension_id)

    def sessions(self, extension_id: str) -> list[Mapping[str, Any]]:
        self._doc(extension_id)
        return [
            {"session_id": s.session_id, "frames": s.sequence, "dropped": s.dropped}
            for s in self.open_sessions.values()
            if s.extension_id == extension_id
        ]

    # Internals --------------------------------------------------------------------------------
    def _doc(self, extension_id: str) -> dict[str, Any]:
        doc = self.installed.get(extension_id)
        if doc is None:
            raise NotFound(f"Extension {extension_id}", resource="extension")
        return doc

    @staticmethod
    def _value(doc: dict[str, Any]) -> Extension:
        m = doc["manifest"]
        stream = m.get("stream")
        return Extension(
            id=m["id"],
            name=m["name"],
            version=m["version"],
            description=m.get("description", ""),
            author=m.get("author", ""),
            extension_type=m.get("type", "tool"),
            state="Running" if doc["enabled"] else "Stopped",
            file_path=doc["file_path"],
            loaded_at=doc["loaded_at"],
            health_status="healthy" if doc["enabled"] else "stopped",
            enabled=doc["enabled"],
            commands=tuple(
                ExtensionCommand(
                    c["id"],
                    c.get("display_name", c["id"]),
                    c.get("description", ""),
                    c.get("input_schema", {}),
                    tuple(c.get("output_fields", ())),
                )
                for c in m.get("commands", [])
            ),
            metrics=tuple(
                ExtensionMetric(
                    x["name"],
                    x.get("display_name", x["name"]),
                    x.get("data_type", "float"),
                    x.get("unit", ""),
                )
                for x in m.get("metrics", [])
            ),
            components=tuple(m.get("components", ())),
            assets=tuple(sorted(m.get("assets", {}))),
            stream=StreamCapability(**stream) if stream else None,
            disabled_commands=tuple(doc.get("disabled_commands", ())),
            config=doc.get("config", {}),
        )
