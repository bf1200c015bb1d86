"""The simulated chat model reads every device it lists when asked about each of them."""

from __future__ import annotations

import json
from typing import Any

from twin.automation.sim_model import MAX_TARGETS, SimChatModel

TOOLS = {"list_devices", "get_device", "get_device_metrics", "send_device_command", "query_telemetry"}


def converse(question: str, count: int) -> tuple[str, list[str]]:
    """Run the model's tool loop against ``count`` online sensors; its answer and the devices it read."""
    devices = [{"device_id": f"env_sensor-{i:04d}", "device_type": "env_sensor", "status": "online"}
               for i in range(1, count + 1)]  # fmt: skip
    model = SimChatModel(seed_key=7)
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    read: list[str] = []
    for _ in range(10):
        reply = model.reply(messages, TOOLS)
        if not reply.tool_calls:
            return reply.content, read
        messages.append({"role": "assistant", "content": reply.content, "tool_calls": [
            {"id": c.call_id, "function": {"name": c.name, "arguments": json.dumps(c.arguments)}}
            for c in reply.tool_calls
        ]})  # fmt: skip
        for call in reply.tool_calls:
            if call.name == "list_devices":
                result: dict[str, Any] = {"devices": devices}
            else:
                device_id = call.arguments["device_id"]
                read.append(device_id)
                n = int(device_id[-4:])
                result = {"device_id": device_id, "status": "online", "values": {"temperature": 20 + n / 10},
                          "units": {"temperature": "°C"}}  # fmt: skip
            messages.append(model.tool_message(call, json.dumps(result)))
    raise AssertionError("the model never answered")


def test_each_sensor_is_read_and_reported() -> None:
    answer, read = converse("What is the temperature of each sensor?", 5)
    ids = [f"env_sensor-{i:04d}" for i in range(1, 6)]
    assert read == ids
    assert "I found 5 devices" in answer
    for i, device_id in enumerate(ids, start=1):
        assert f"On {device_id} (online) the temperature is {20 + i / 10:g} °C" in answer


def test_a_fleet_larger_than_a_list_reads_as_many_as_the_list_names() -> None:
    answer, read = converse("Show me the temperature of all sensors", MAX_TARGETS + 4)
    assert len(read) == MAX_TARGETS and "and 4 more" in answer
    assert all(f"On {d} (online)" in answer for d in read)


def test_one_sensor_is_read_once() -> None:
    _, read = converse("What is the temperature of env_sensor-0003?", 5)
    assert read == ["env_sensor-0003"]
