"""The simulated chat model on its own: what it asks the tools for, round by round, and its pieces."""

from __future__ import annotations

import json

from twin.automation.chat_tools import CHAT_TOOLS
from twin.automation.sim_model import SimChatModel, tokens

TOOLS = set(CHAT_TOOLS)
DEVICES = {
    "devices": [
        {"device_id": f"env_sensor-000{i}", "device_type": "env_sensor", "status": "online"} for i in (1, 2)
    ]
}
METRICS = {
    "device_id": "env_sensor-0002",
    "status": "online",
    "values": {"temperature": 21.5, "humidity": 40.0},
}
DETAILS = {"device_id": "env_sensor-0002", "commands": [{"name": "set_interval", "parameters": ["interval"]}]}


def conversation(prompt: str, *results: tuple[str, dict, dict]) -> list[dict]:
    """The user's prompt, then for each (tool, arguments, result) the call and its result."""
    messages = [{"role": "system", "content": "sys"}, {"role": "user", "content": prompt}]
    for i, (name, args, data) in enumerate(results):
        call = {"id": f"c{i}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        messages.append({"role": "assistant", "content": "", "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{i}", "name": name, "content": json.dumps(data)})
    return messages


def calls(model: SimChatModel, prompt: str, *results: tuple[str, dict, dict]) -> list[tuple[str, dict]]:
    return [(c.name, c.arguments) for c in model.reply(conversation(prompt, *results), TOOLS).tool_calls]


def test_the_pieces_give_the_text_back() -> None:
    text = "On env_sensor-0001 (online) the temperature is 18.21, humidity is 37.16.\n\nDone!"
    pieces = tokens(text)
    assert "".join(pieces) == text and len(pieces) > 15 and all(len(p.strip()) <= 5 for p in pieces)


def test_plans_round_by_round_from_the_turns_results() -> None:
    model = SimChatModel(42)
    ask = "What is the temperature of my sensor?"
    assert calls(model, ask) == [("list_devices", {})]
    assert calls(model, ask, ("list_devices", {}, DEVICES)) == [
        ("get_device_metrics", {"device_id": "env_sensor-0001"})
    ]
    named = "set the interval of env_sensor-0002 to 30"
    assert calls(model, named) == [("get_device", {"device_id": "env_sensor-0002"})]
    assert calls(model, named, ("get_device", {"device_id": "env_sensor-0002"}, DETAILS)) == [
        (
            "send_device_command",
            {"device_id": "env_sensor-0002", "command": "set_interval", "params": {"interval": 30}},
        )
    ]
    rule = "create a rule when env_sensor-0002 humidity is above 70"
    assert calls(model, rule) == [("get_device_metrics", {"device_id": "env_sensor-0002"})]
    [(name, args)] = calls(model, rule, ("get_device_metrics", {"device_id": "env_sensor-0002"}, METRICS))
    definition = json.loads(args["dsl"])
    assert name == "create_rule" and definition["condition"]["source"] == "device:env_sensor-0002:humidity"
    assert (definition["condition"]["operator"], definition["condition"]["threshold"]) == (">", 70)


def test_answers_from_the_results_and_the_seed_picks_the_words() -> None:
    done = ("get_device_metrics", {"device_id": "env_sensor-0002"}, METRICS)
    reply = SimChatModel(42).reply(conversation("temperature of env_sensor-0002?", done), TOOLS)
    assert not reply.tool_calls and "the temperature is 21.5, humidity is 40.0" in reply.content
    assert SimChatModel(42).reply(conversation("hi"), TOOLS) == SimChatModel(42).reply(
        conversation("hi"), TOOLS
    )
    greetings = {SimChatModel(seed).reply(conversation("hi"), TOOLS).content for seed in range(20)}
    assert len(greetings) == 2
    failed = ("get_device_metrics", {"device_id": "ghost-1"}, {"error": "Device ghost-1 not found"})
    assert (
        "get_device_metrics failed: Device ghost-1 not found."
        in SimChatModel(1).reply(conversation("read ghost-1", failed), TOOLS).content
    )
    assert SimChatModel(1).reply(conversation("read ghost-1"), set()).tool_calls == ()  # no tools: it answers
