"""Wire shapes of the gateway's AI, apps, containers, images, event-bus, storage and monitor areas.

Where the device serialises a protobuf struct with plain ``encoding/json`` (proto-JSON), zero,
false and empty fields are omitted: :func:`proto` does that.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import io
import json
import tarfile
from typing import Any

from hardware.ports.gateway_ai import AiStats, ModelInfo, ParsedModel
from hardware.ports.gateway_apps import (
    AppInfo,
    AppStats,
    BusEvent,
    ContainerInfo,
    ContainerStats,
    ImageInfo,
    InstallTask,
    LogLine,
    StagedManifest,
    TopicInfo,
)
from hardware.ports.gateway_monitor import PartitionUsage


def proto(fields: dict[str, Any]) -> dict[str, Any]:
    """Drop zero, false, empty and None values, like Go's ``omitempty``."""
    return {k: v for k, v in fields.items() if v not in (None, "", 0, 0.0, False, [], {}, ())}


def rfc3339(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# AI -------------------------------------------------------------------------------------------
def model(m: ModelInfo) -> dict[str, Any]:
    always = {
        "model_id": m.model_id,
        "name": m.name,
        "model_path": m.model_path,
        "status": m.status,
        "version": "",
    }
    return always | proto(
        {
            "source": m.source,
            "owner_app_id": m.owner_app_id,
            "desired_state": m.desired_state,
            "used_by_apps": list(m.used_by_apps),
            "load_timestamp": m.load_timestamp,
            "estimated_memory": m.estimated_memory,
            "model_type": m.model_type,
            "variant": m.variant,
            "threshold": m.threshold,
            "max_detections": m.max_detections,
            "file_size": m.file_size,
            "file_hash": m.file_hash,
            "network_name": m.network_name,
            "input_width": m.input_width,
            "input_height": m.input_height,
        }
    )


def model_info(m: ModelInfo) -> dict[str, Any]:
    """``GetModelInfo``'s record (every key present), with the runtime's fields once loaded; the
    runtime's tensor specs are not simulated (``null``)."""
    info: dict[str, Any] = {
        "model_id": m.model_id,
        "name": m.name,
        "model_path": m.model_path,
        "status": m.status,
        "model_type": m.model_type,
        "variant": m.variant,
        "threshold": m.threshold,
        "max_detections": m.max_detections,
        "file_size": m.file_size,
        "network_name": m.network_name,
        "input_width": m.input_width,
        "input_height": m.input_height,
    }
    if m.status == "loaded":
        info |= {
            "load_timestamp": m.load_timestamp,
            "inputs": None,
            "outputs": None,
            "estimated_tops": 0.0,
            "estimated_memory": m.estimated_memory,
        }
    return info


def hef_info(network_name: str, width: int, height: int) -> str:
    """``vstream_info``: ``ValidateHEFToJSON``'s string, the ``HEFInfo`` struct as JSON."""
    vstreams = [
        f"{network_name}/input_layer1 UINT8, NHWC({width}x{height}x3)",
        f"{network_name}/nms_output FLOAT32, HAILO NMS(number of classes: 80, max_bboxes: 100)",
    ]
    raw = "\n".join([f"Network group name: {network_name}", *vstreams])
    info = {"network_name": network_name, "raw_output": raw, "vstreams": vstreams}
    return json.dumps(info | {"input_width": width, "input_height": height}, separators=(",", ":"))


def model_parsed(p: ParsedModel) -> dict[str, Any]:
    """``ParseModel``'s answer."""
    return dataclasses.asdict(p) | {"vstream_info": hef_info(p.network_name, p.input_width, p.input_height)}


def model_uploaded(m: ModelInfo, filename: str) -> dict[str, Any]:
    return {
        "model_id": m.model_id,
        "model_path": m.model_path,
        "filename": filename,
        "size": m.file_size,
        "file_hash": m.file_hash,
        "network_name": m.network_name,
        "vstream_info": hef_info(m.network_name, m.input_width, m.input_height),
        "status": "uploaded",
    }


def ai_stats(s: AiStats) -> dict[str, Any]:
    rows = [
        proto(
            {
                "model_id": r.model_id,
                "total_inferences": r.total_inferences,
                "total_errors": r.total_errors,
                "avg_latency_us": round(r.avg_latency_us),  # a uint64 in the proto
                "current_qps": r.current_qps,
                "queue_depth": r.queue_depth,
                "hw_fps": r.hw_fps,
            }
        )
        for r in s.model_stats
    ]
    return proto(
        {
            "model_stats": rows,
            "device_utilization": s.device_utilization,
            "device_temperature": s.device_temperature,
            "total_memory_bytes": s.total_memory_bytes,
            "used_memory_bytes": s.used_memory_bytes,
            "cpu_utilization": s.cpu_utilization,
            "ram_total_kib": s.ram_total_kib,
            "ram_used_kib": s.ram_used_kib,
        }
    )


# Apps -----------------------------------------------------------------------------------------
def app_item(a: AppInfo) -> dict[str, Any]:
    """An element of ``GET apps`` (a bare array): no ``restart_count``."""
    item: dict[str, Any] = {"id": a.id, "name": a.name, "version": a.version, "state": a.state}
    item |= proto({"container_id": a.container_id, "pid": a.pid})
    item |= {
        "installed_at": a.installed_at,
        "started_at": a.started_at,
        "stopped_at": a.stopped_at,
        "manifest_path": a.manifest_path,
        "instance_path": a.instance_path,
    }
    return item | proto({"permissions": a.permissions, "web_url": a.web_url})


def app_info(a: AppInfo) -> dict[str, Any]:
    """``GET apps/:id``: the raw AppInfo proto-JSON, ``restart_count`` included when non-zero."""
    return proto(
        {
            "id": a.id,
            "name": a.name,
            "version": a.version,
            "description": a.description,
            "state": a.state,
            "container_id": a.container_id,
            "pid": a.pid,
            "image": a.image,
            "installed_at": a.installed_at,
            "started_at": a.started_at,
            "stopped_at": a.stopped_at,
            "restart_count": a.restart_count,
            "manifest_path": a.manifest_path,
            "instance_path": a.instance_path,
            "permissions": a.permissions,
            "web_url": a.web_url,
        }
    )


def image_uploaded(path: str, filename: str, data: bytes) -> dict[str, Any]:
    """``UploadImage``'s answer. ``image`` is the first ``RepoTags`` entry of a plain tar's
    top-level ``manifest.json`` (``utils.ExtractImageNameFromTar``), empty for anything else (a
    gzipped archive too: the device reads it as plain tar). ``image_path`` is the twin's older name
    for ``path``, kept for its own clients."""
    return {
        "path": path,
        "image": docker_archive_tag(data),
        "filename": filename,
        "size": len(data),
        "image_path": path,
    }


def docker_archive_tag(data: bytes) -> str:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as archive:
            for member in archive:
                if member.name != "manifest.json":
                    continue
                handle = archive.extractfile(member)
                manifests = json.loads(handle.read()) if handle is not None else None
                tags = manifests[0].get("RepoTags") if isinstance(manifests, list) and manifests else None
                if isinstance(tags, list) and tags and isinstance(tags[0], str):
                    return tags[0]
    except (tarfile.TarError, ValueError, AttributeError, EOFError, OSError):
        return ""
    return ""


def manifest_uploaded(m: StagedManifest, filename: str) -> dict[str, Any]:
    """``UploadManifest``'s ``{path, metadata}``; ``manifest_path``, ``app_id`` and ``filename``
    are the twin's older names, kept for its own clients."""
    metadata = {"id": m.app_id, "name": m.name, "version": m.version, "description": m.description}
    return {
        "path": m.path,
        "metadata": metadata,
        "manifest_path": m.path,
        "app_id": m.app_id,
        "filename": filename,
    }


def install_task(t: InstallTask) -> dict[str, Any]:
    return {
        "task_id": t.task_id,
        "phase": t.phase,
        "percent": t.percent,
        "message": t.message,
        "app_id": t.app_id,
        "error": t.error,
    }


def app_stats(s: AppStats) -> dict[str, Any]:
    return {"app_id": s.app_id, "uptime_seconds": s.uptime_seconds} | proto(
        {
            "cpu_usage_percent": s.cpu_usage_percent,
            "memory_usage_bytes": s.memory_usage_bytes,
            "memory_limit_bytes": s.memory_limit_bytes,
            "memory_percent": s.memory_percent,
        }
    )


def ndjson(lines: tuple[LogLine, ...]) -> bytes:
    """The device's app log format: one JSON object per line, not an array."""
    return b"".join(
        json.dumps({"timestamp": ln.timestamp_ns, "level": ln.level, "message": ln.message}).encode() + b"\n"
        for ln in lines
    )


# Containers and images ------------------------------------------------------------------------
def container(c: ContainerInfo) -> dict[str, Any]:
    return proto(
        {
            "id": c.id,
            "name": c.name,
            "image": c.image,
            "status": c.state,
            "state": c.state,
            "pid": c.pid,
            "created_at": rfc3339(c.created_at),
            "labels": c.labels,
            "cpu_percent": c.cpu_percent,
            "memory_usage": c.memory_usage,
        }
    )


def container_page(items: list[ContainerInfo], page: int, page_size: int) -> dict[str, Any]:
    counts = {"all": len(items), "running": 0, "stopped": 0, "error": 0}
    for c in items:
        if c.state == "running":
            counts["running"] += 1
        elif c.state in ("stopped", "exited"):  # ListContainers: any other state counts as an error
            counts["stopped"] += 1
        else:
            counts["error"] += 1
    start = (page - 1) * page_size
    return {
        "containers": [container(c) for c in items[start : start + page_size]],
        "total": len(items),
        "page": page,
        "page_size": page_size,
        "status_count": counts,
    }


def container_stats(s: ContainerStats) -> dict[str, Any]:
    """The app manager's ``ContainerStats`` (proto-JSON: zero fields omitted)."""
    return {
        "stats": proto(
            {
                "cpu_usage": s.cpu_usage,
                "cpu_percent": s.cpu_percent,
                "memory_usage": s.memory_usage,
                "memory_limit": s.memory_limit,
                "memory_percent": s.memory_percent,
                "network_rx": s.network_rx,
                "network_tx": s.network_tx,
                "block_read": s.block_read,
                "block_write": s.block_write,
                "pids": s.pids,
            }
        )
    }


def images(items: tuple[ImageInfo, ...]) -> dict[str, Any]:
    """The app manager's ``ImageInfo`` rows (proto-JSON: ``created_at`` an int64 of unix seconds,
    zero fields such as ``in_use: false`` omitted)."""
    return {
        "images": [
            proto(
                {
                    "id": i.id,
                    "name": i.name,
                    "tags": list(i.tags),
                    "size": i.size,
                    "created_at": int(i.created_at),
                    "in_use": i.in_use,
                }
            )
            for i in items
        ]
    }


# Event bus ------------------------------------------------------------------------------------
def topics(items: tuple[TopicInfo, ...]) -> dict[str, Any]:
    return {
        "topics": [
            {"topic": t.topic, "subscriber_count": t.subscriber_count}
            | proto({"total_messages": t.total_messages, "last_message_ts": t.last_message_ts})
            for t in items
        ]
    }


def bus_event(e: BusEvent) -> str:
    """A stream frame: ``payload`` stays a JSON-encoded string; metadata is dropped."""
    return json.dumps(
        {
            "topic": e.topic,
            "payload": e.payload,
            "payload_type": e.payload_type,
            "timestamp_ns": e.timestamp_ns,
            "source": e.source,
            "event_id": e.event_id,
        }
    )


# Storage and monitor --------------------------------------------------------------------------
def partitions(items: tuple[PartitionUsage, ...]) -> dict[str, Any]:
    return {
        "partitions": [
            {
                "device": p.device,
                "mountpoint": p.mountpoint,
                "fstype": p.fstype,
                "total": p.total,
                "used": p.used,
                "free": p.free,
                "usage_percent": p.usage_percent,
                "is_system": p.is_system,
                "is_removable": p.is_removable,
                "is_protected": p.is_protected,
                "mountpoint_label": p.label,
            }
            for p in items
        ]
    }
