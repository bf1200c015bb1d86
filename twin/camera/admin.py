"""A camera's administrative state: device name and factory data, key/value settings, network
configuration of its interfaces, the operation/system event log, and config jobs.

Event logs: clients add entries; the device adds its own (boot). Levels info, warning, error,
critical; categories operation, system. Network: ``eth0`` (the default route) and ``wlan0``
(down); a static configuration is validated as dotted quads.

The name, factory data, settings and network configuration are durable (the device keeps them on
disk): one document per camera in the store, written by every change and read back at build. So is
the event log, one document per entry; each build (a start of the device) logs its boot.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import ipaddress
import re
from collections import deque
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound
from twin.camera.event_templates import TEMPLATES, TEMPLATES_BY_CODE

if TYPE_CHECKING:
    from twin.camera.clock import DeviceClock
    from twin.engine import Engine

NAME = re.compile(r"^[A-Za-z0-9_-]+$")
SETTING_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
MAX_EVENT_LOGS = 5000
FACTORY_TOOL = "/etc/factory-eeprom.sh"
FACTORY_FIELDS = {"SN": "serial_number", "MAC": "mac_address", "PN": "product_number"}
FACTORY_FIELDS |= {"BATCH": "batch", "HWREV": "hardware_revision"}
"""The factory EEPROM's fields and the keys ``factoryeeprom.Info`` serialises them under."""
FACTORY_ALIASES = {
    **dict.fromkeys(("SN", "SERIAL", "SERIAL_NUMBER"), "SN"),
    **dict.fromkeys(("MAC", "MAC_ADDRESS", "FACTORY_MAC", "FACTORY_MAC_ADDRESS"), "MAC"),
    **dict.fromkeys(("PN", "PRODUCT_NUMBER", "PART_NUMBER"), "PN"),
    **dict.fromkeys(("BATCH", "BATCH_NUMBER"), "BATCH"),
    **dict.fromkeys(("HWREV", "HW_REV", "HARDWARE_REVISION", "HARDWARE_VERSION"), "HWREV"),
}
"""``factoryeeprom.NormalizeField``: upper-cased, '-' as '_'."""
FACTORY_VALUE = re.compile(r"^[A-Za-z0-9._:-]+$")
MODEL = "NE503-AIPC"
ADMIN_KIND = "camera_admin"
"""Durable: one document per camera, keyed by its id (see :meth:`DeviceAdmin.save`)."""
EVENT_LOGS_KIND = "camera_event_logs"
"""Durable: one document per event-log entry, keyed ``<camera id>:<entry id>``."""


@dataclass
class Interface:
    name: str
    mac: str
    mode: str = "dhcp"
    ip: str = ""
    mask: str = "255.255.255.0"
    gateway: str = ""
    dns: list[str] = field(default_factory=list)
    up: bool = True
    default: bool = False


class DeviceAdmin:
    """The administration port."""

    def __init__(self, world: Engine, camera_id: str, index: int, clock: DeviceClock, firmware: str) -> None:
        self.clock = clock
        self.firmware_version = firmware
        n = index
        digest = hashlib.blake2b(f"{world.seed}/{camera_id}".encode(), digest_size=6).hexdigest()
        self.device_name = f"aicam-{n:02d}"
        mac = ":".join(["02", "1a", *(digest[i : i + 2] for i in range(0, 8, 2))])
        self.factory_fields: dict[str, str] = {
            "SN": f"NE503{digest[:8].upper()}",
            "MAC": mac,
            "PN": "NE503-AIPC-W",
            "BATCH": "2026W11",
            "HWREV": "V1.2",
        }
        self.network_interfaces: dict[str, Interface] = {
            "eth0": Interface(
                "eth0",
                mac,
                "dhcp",
                f"192.168.1.{100 + n}",
                "255.255.255.0",
                "192.168.1.1",
                ["192.168.1.1"],
                True,
                True,
            ),
            "wlan0": Interface("wlan0", mac[:-2] + "ff", "dhcp", "", "", "", [], False, False),
        }
        self.setting_values: dict[str, str] = {}
        self._docs, self._id = world.store.collection(ADMIN_KIND), camera_id
        if (stored := self._docs.get_as(camera_id, _stored)) is not None:
            self.device_name, factory, self.setting_values, self.network_interfaces = stored
            if set(factory) <= set(FACTORY_FIELDS):
                self.factory_fields = factory
        self._log_docs = world.store.collection(EVENT_LOGS_KIND)
        kept = [doc for _, doc in self._log_docs.items_under(camera_id + ":")]
        self.logs: deque[dict[str, Any]] = deque(kept[-MAX_EVENT_LOGS:], maxlen=MAX_EVENT_LOGS)
        self._seq = max((entry["id"] for entry in kept), default=0)
        booted = world.config.history  # the device has been up since the world's past began
        self.log("system.boot", "system", "info", "system", "Device booted", "设备启动", ago=booted)

    # Name and factory data ---------------------------------------------------------------------
    def factory(self) -> dict[str, object]:
        """``factoryeeprom.Info``: ``available`` always, the rest omitted when empty."""
        fields = {FACTORY_FIELDS[k]: v for k, v in self.factory_fields.items() if v}
        return {"available": True, "source": FACTORY_TOOL, **fields}

    def rename(self, name: str) -> None:
        """``UpdateDeviceName``'s checks (code 1001)."""
        if not name:
            raise InvalidInput("Device name cannot be empty")
        if not NAME.match(name):
            raise InvalidInput("Device name can only contain letters, numbers, underscores and hyphens")
        self.device_name = name
        self.save()

    def set_factory(self, key: str, value: str) -> tuple[str, str]:
        """``factoryeeprom.NormalizeField`` then ``ValidateValue``: the field's name and the value
        as written (a MAC lower-cased)."""
        name = FACTORY_ALIASES.get(key.strip().upper().replace("-", "_"))
        if name is None:
            raise InvalidInput(f'unsupported factory EEPROM field "{key}"', resource="parameter")
        value = value.strip()
        if not value:
            raise InvalidInput(f"{name} cannot be empty", resource="parameter")
        if name == "MAC":
            octets = value.replace("-", ":").split(":")
            if len(octets) != 6 or not all(re.fullmatch(r"[0-9A-Fa-f]{2}", o) for o in octets):
                raise InvalidInput(f'invalid MAC address "{value}"', resource="parameter")
            value = ":".join(octets).lower()
        elif not FACTORY_VALUE.match(value):
            raise InvalidInput(f"{name} contains unsupported characters", resource="parameter")
        self.factory_fields[name] = value
        self.save()
        return name, value

    # Settings ----------------------------------------------------------------------------------
    def settings(self) -> dict[str, str]:
        return dict(self.setting_values)

    def set_setting(self, key: str, value: str) -> None:
        if not SETTING_KEY.match(key):
            raise InvalidInput("invalid setting key", resource="parameter")
        self.setting_values[key] = value
        self.save()

    def delete_setting(self, key: str) -> None:
        if self.setting_values.pop(key, None) is None:
            raise NotFound(f"setting not found: {key}")
        self.save()

    def save(self) -> None:
        doc = {
            "device_name": self.device_name,
            "factory": self.factory_fields,
            "settings": self.setting_values,
        }
        interfaces = {n: asdict(i) for n, i in self.network_interfaces.items()}
        self._docs.put(self._id, doc | {"interfaces": interfaces})

    # Network -----------------------------------------------------------------------------------
    def interface(self, name: str) -> Interface:
        iface = self.network_interfaces.get(name or "eth0")
        if iface is None:
            raise NotFound(f"interface not found: {name}")
        return iface

    def network_config(self, name: str) -> dict[str, object]:
        i = self.interface(name)
        dns = [*i.dns, "", ""]
        return {
            "interface": i.name,
            "mode": i.mode,
            "ip_address": i.ip,
            "subnet_mask": i.mask,
            "gateway": i.gateway,
            "dns1": dns[0],
            "dns2": dns[1],
            "mac_address": i.mac,
        }

    def configure_network(
        self, name: str, mode: str, ip: str, mask: str, gateway: str, dns: list[str]
    ) -> None:
        iface = self.interface(name)
        if mode not in ("dhcp", "static"):
            raise InvalidInput("mode must be dhcp or static", resource="parameter")
        if mode == "static":
            for label, value in (("ip_address", ip), ("subnet_mask", mask)):
                _quad(label, value, required=True)
            _quad("gateway", gateway)
            for value in dns:
                _quad("dns", value)
            iface.ip, iface.mask, iface.gateway, iface.dns = ip, mask, gateway, [d for d in dns if d]
        iface.mode = mode
        self.save()

    def interfaces(self) -> list[dict[str, object]]:
        return [
            {
                "name": i.name,
                "ip_address": i.ip,
                "subnet_mask": i.mask,
                "mac_address": i.mac,
                "status": "up" if i.up else "down",
                "is_default": i.default,
                "gateway": i.gateway if i.default else "",
                "dns": list(i.dns) if i.default else None,  # a nil slice off the default route
            }
            for i in self.network_interfaces.values()
        ]

    # Event logs --------------------------------------------------------------------------------
    def log(
        self,
        event_type: str,
        category: str,
        level: str,
        source: str,
        message: str,
        message_zh: str = "",
        user: str = "",
        data: dict[str, Any] | None = None,
        ago: float = 0.0,
    ) -> dict[str, Any]:
        """An entry stamped now, or ``ago`` seconds before now (the boot in the world's past)."""
        if not event_type or not message:
            raise InvalidInput("event_type and message are required")
        self._seq += 1
        stamp = _rfc3339(self.clock.now() - ago)
        entry: dict[str, Any] = {
            "id": self._seq,
            "event_id": f"{event_type}-{self._seq}",
            "timestamp": stamp,
            "event_type": event_type,
            "level": level,
            "category": category,
            "source": source,
            "message": message,
            "message_zh": message_zh,
            "created_at": stamp,
        }
        if user:
            entry["user"] = user
        if data:
            entry["data"] = data
        if len(self.logs) == self.logs.maxlen:
            self._log_docs.delete(self._log_id(self.logs[0]))
        self.logs.append(entry)
        self._log_docs.put(self._log_id(entry), entry)
        return entry

    def add_event_log(self, fields: dict[str, Any]) -> dict[str, Any]:
        """A client's entry (``EventLogHandler.Create``; a bound ``LogRecord``: its strings, and
        ``data`` an object)."""
        message, message_zh, data = fields["message"], "", fields["data"]
        template = TEMPLATES_BY_CODE.get(fields["event_type"])
        if template is not None:  # toModel: a known code's texts are rendered from its template
            message, message_zh = _render(template[4], data), _render(template[5], data)
        return self.log(
            fields["event_type"],
            fields.get("category", ""),
            fields.get("level", ""),
            fields["source"],
            message,
            message_zh,
            user=fields.get("user", ""),
            data=data,
        )

    def _log_id(self, entry: dict[str, Any]) -> str:
        return f"{self._id}:{entry['id']}"

    def event_logs(
        self, category: str, level: str, start: str, end: str, search: str, limit: int, offset: int
    ) -> dict[str, object]:
        """``EventLogHandler.List``: limit 0 means 100; a time that is not RFC 3339 is ignored; the
        search matches either message or the event type."""
        if not 0 <= limit <= 1000:
            raise InvalidInput("limit must be between 0 and 1000", resource="parameter")
        if offset < 0:
            raise InvalidInput("offset must not be negative", resource="parameter")
        limit = limit or 100
        lo, hi, term = _parse_time(start), _parse_time(end), search.lower()
        rows = [
            e
            for e in reversed(self.logs)
            if (category in ("", "all") or e["category"] == category)
            and (not level or e["level"] == level)
            and (lo is None or _parse_time(e["timestamp"]) >= lo)  # type: ignore[operator]
            and (hi is None or _parse_time(e["timestamp"]) <= hi)  # type: ignore[operator]
            and (not term or any(term in e[k].lower() for k in ("message", "message_zh", "event_type")))
        ]
        return {
            "total": len(rows),
            "limit": limit,
            "offset": offset,
            "entries": rows[offset : offset + limit],
        }

    def event_log_statistics(self) -> dict[str, int]:
        today = _rfc3339(self.clock.now())[:10]
        todays = [e for e in self.logs if e["timestamp"].startswith(today)]
        return {
            "today_errors": sum(1 for e in todays if e["level"] == "error"),
            "today_warnings": sum(1 for e in todays if e["level"] == "warning"),
            "today_critical": sum(1 for e in todays if e["level"] == "critical"),
            "operations": sum(1 for e in self.logs if e["category"] == "operation"),
            "system_events": sum(1 for e in self.logs if e["category"] == "system"),
            "total_entries": len(self.logs),
        }

    def event_log_templates(self) -> dict[str, dict[str, object]]:
        """``GetTemplates``: the device's message templates by code."""
        return {
            code: {"en": en, "zh": zh, "module": module, "level": level, "params": list(params or []) or None}
            for code, module, level, params, en, zh in TEMPLATES
        }

    def cleanup_event_logs(self, days: int) -> int:
        """``CleanupOldEvents``: drop the entries created more than ``days`` days ago."""
        cutoff = _parse_time(_rfc3339(self.clock.now() - days * 86400))
        keep = [e for e in self.logs if _parse_time(e["created_at"]) >= cutoff]  # type: ignore[operator]
        kept_ids = {e["id"] for e in keep}
        for entry in self.logs:
            if entry["id"] not in kept_ids:
                self._log_docs.delete(self._log_id(entry))
        removed = len(self.logs) - len(keep)
        self.logs = deque(keep, maxlen=MAX_EVENT_LOGS)
        return removed


def _quad(label: str, value: str, *, required: bool = False) -> None:
    if not value and not required:
        return
    try:
        ipaddress.IPv4Address(value)
    except ValueError as err:
        raise InvalidInput(f"invalid {label}: {value!r}", resource="parameter") from err


def _rfc3339(unix: float) -> str:
    return dt.datetime.fromtimestamp(unix, tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _stored(doc: dict[str, Any]) -> tuple[str, dict[str, str], dict[str, str], dict[str, Interface]]:
    """The name, factory data, settings and interfaces a document holds (see :meth:`DeviceAdmin.save`)."""
    interfaces = {name: Interface(**fields) for name, fields in doc["interfaces"].items()}
    return doc["device_name"], doc["factory"], doc["settings"], interfaces


def _render(template: str, data: dict[str, Any]) -> str:
    """A message template's ``{{.name}}`` fields filled from the event's data (text/template's
    ``<no value>`` for a missing one)."""
    return re.sub(r"\{\{\.(\w+)\}\}", lambda m: str(data.get(m.group(1), "<no value>")), template)


def _parse_time(value: str) -> dt.datetime | None:
    """An RFC 3339 time; None when empty or not one (the handler ignores such a filter)."""
    try:
        moment = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return moment if moment.tzinfo else moment.replace(tzinfo=dt.UTC)
