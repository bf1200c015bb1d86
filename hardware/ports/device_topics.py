"""The device topics on MQTT, as the automation server and its devices speak them: a device publishes
its samples on ``device/{device_type}/{device_id}/uplink`` (a JSON object of its metrics and a
``timestamp``) and receives commands on ``device/{device_type}/{device_id}/downlink``.

The twin's MQTT bridge and the fleet publisher both speak this format, so it lives with the ports.
"""

from __future__ import annotations

import json

import orjson

from hardware.ports.events import Event

UPLINK_FILTER = "device/+/+/uplink"
DOWNLINK_FILTER = "device/+/+/downlink"


def uplink_topic(device_type: str, device_id: str) -> str:
    return f"device/{device_type}/{device_id}/uplink"


def uplink_payload(event: Event) -> bytes:
    body = dict(event.data["metrics"])
    body["timestamp"] = int(event.data["timestamp"])
    return orjson.dumps(body)


def device_of_uplink(topic: str) -> str | None:
    """``device/{type}/{id}/uplink`` → the device id; anything else → ``None``."""
    return device_of(topic, "uplink")


def device_of(topic: str, direction: str) -> str | None:
    """``device/{type}/{id}/{direction}`` → the device id; anything else → ``None``."""
    parts = topic.split("/")
    if len(parts) == 4 and parts[0] == "device" and parts[3] == direction and parts[1] and parts[2]:
        return parts[2]
    return None


def command_of(payload: bytes) -> tuple[str, dict] | None:
    """A downlink payload ``{"command": str, "params"?: object}`` → (command, params), else ``None``."""
    try:
        body = json.loads(payload)
    except ValueError:
        return None
    if not isinstance(body, dict):
        return None
    command, params = body.get("command"), body.get("params", {})
    if not isinstance(command, str) or not command or not isinstance(params, dict):
        return None
    return command, params


def downlink_payload(event: Event) -> bytes:
    """What a real device receives: the command's rendered ``payload_template`` when the world
    rendered one, else ``{"command", "params", "request_id"}``."""
    if isinstance(payload := event.data.get("payload"), str):
        return payload.encode()
    body = {
        "command": event.data["command"],
        "params": event.data["params"],
        "request_id": event.data["command_id"],
    }
    return json.dumps(body, separators=(",", ":")).encode()
