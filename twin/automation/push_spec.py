"""A data push target's settings: the checks and defaults of a create or update body, and which
sources a target's ``data_filter.source_patterns`` (``*`` wildcards) take."""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Mapping
from typing import Any

from hardware.ports.errors import InvalidInput
from hardware.ports.rules import PUSH_TARGET_TYPES

SELF_WEBHOOK = re.compile(r"/api/devices/(?:[^/]+/)?webhook/?$")
DEFAULT_RETRY = {"max_retries": 3, "backoff_secs": 5, "max_backoff_secs": 300}
DEFAULT_BATCH = {"batch_size": 1, "batch_interval_ms": 2000, "format": "flat"}
MASK = "*****"
"""What a stored secret reads as (the vendor's mask for broker passwords); sent back unchanged in an
update, it keeps the stored value."""
SECRET_HEADER = re.compile(r"authorization|cookie|token|secret|password|api[-_]?key|auth", re.IGNORECASE)


def _bad(message: str, field: str) -> InvalidInput:
    return InvalidInput(message, resource="push_target", field=field)


def validate(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The stored settings of a target from a create/update body (defaults filled in)."""
    if not spec.get("name"):
        raise _bad("name is required", "name")
    kind = spec.get("target_type")
    if kind not in PUSH_TARGET_TYPES:
        raise _bad(f"target_type must be one of {', '.join(PUSH_TARGET_TYPES)}", "target_type")
    config = dict(spec.get("config") or {})
    if kind == "webhook":
        url = str(config.get("url") or "")
        if not url.startswith(("http://", "https://")):
            raise _bad("webhook target needs config.url (http or https)", "config.url")
        if SELF_WEBHOOK.search(url.split("?", 1)[0]):
            raise _bad("A push target must not point at this server's own device webhook", "config.url")
    else:
        if not config.get("topic"):
            raise _bad("mqtt target needs config.topic", "config.topic")
        if not (config.get("broker_url") or config.get("host")):
            raise _bad("mqtt target needs config.broker_url or config.host", "config.broker_url")
    schedule = dict(spec.get("schedule") or {"type": "event_driven", "event_types": []})
    if schedule.get("type") == "interval":
        secs = schedule.get("interval_secs")
        if isinstance(secs, bool) or not isinstance(secs, int | float) or secs <= 0:
            raise _bad("interval schedule needs interval_secs > 0", "schedule.interval_secs")
    elif schedule.get("type") == "event_driven":
        schedule.setdefault("event_types", [])
    else:
        raise _bad("schedule.type must be event_driven or interval", "schedule.type")
    data_filter = dict(spec.get("data_filter") or {})
    data_filter.setdefault("source_patterns", [])
    data_filter.setdefault("only_changes", False)
    retry = {**DEFAULT_RETRY, **(spec.get("retry_config") or {})}
    batch = {**DEFAULT_BATCH, **(spec.get("batch_config") or {})}
    if int(retry["max_retries"]) < 0 or float(retry["backoff_secs"]) < 0:
        raise _bad("retry_config values must not be negative", "retry_config")
    if int(batch["batch_size"]) < 1 or batch["format"] not in ("flat", "nested"):
        raise _bad("batch_size must be at least 1 and format flat or nested", "batch_config")
    return {
        "name": spec["name"],
        "target_type": kind,
        "config": config,
        "schedule": schedule,
        "data_filter": data_filter,
        "template": spec.get("template"),
        "enabled": bool(spec.get("enabled", True)),
        "retry_config": retry,
        "batch_config": batch,
    }


def _secret_paths(config: Mapping[str, Any]) -> list[tuple[str, ...]]:
    """Where a target's configuration holds a secret: credential headers, the bearer token, the basic
    auth and broker passwords. They are write-only."""
    paths: list[tuple[str, ...]] = [("auth_token",), ("password",), ("auth_basic", "password")]
    headers = config.get("headers")
    if isinstance(headers, Mapping):
        paths += [("headers", str(k)) for k in headers if SECRET_HEADER.search(str(k))]
    return paths


def _get(config: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    node: Any = config
    for key in path:
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def _set(config: dict[str, Any], path: tuple[str, ...], value: Any) -> None:
    node = config
    for key in path[:-1]:
        node[key] = dict(node[key])
        node = node[key]
    node[path[-1]] = value


def masked(config: Mapping[str, Any]) -> dict[str, Any]:
    """A target's configuration as a client reads it: every secret set reads ``*****``."""
    out = dict(config)
    for path in _secret_paths(config):
        if _get(config, path):
            _set(out, path, MASK)
    return out


def keep_secrets(new: Mapping[str, Any], old: Mapping[str, Any]) -> dict[str, Any]:
    """An update's configuration with every ``*****`` it sends back replaced by the stored secret."""
    out = dict(new)
    for path in _secret_paths(new):
        if _get(new, path) == MASK and _get(old, path) is not None:
            _set(out, path, _get(old, path))
    return out


def matches(patterns: list[str], source: str) -> bool:
    return not patterns or any(fnmatch.fnmatchcase(source, p) for p in patterns)
