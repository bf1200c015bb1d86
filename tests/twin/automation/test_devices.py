"""The device registry in the world, no HTTP: status on the world clock, snapshots, reset."""

from __future__ import annotations

import pytest

from hardware.ports.devices import KEEP, AutomationDevices
from hardware.ports.errors import InternalError, NotFound
from hardware.ports.types import ClockMode
from twin.automation.backend import TwinAutomation
from twin.automation.server import automation_of
from twin.clock import SimClock
from twin.world import World


def test_adapter_satisfies_the_port_and_survives_reset(world: World) -> None:
    backend = TwinAutomation(world, SimClock(world, mode=ClockMode.STEP))
    assert isinstance(backend.devices, AutomationDevices)
    backend.devices.create("env_sensor", "lab", "webhook", {}, device_id="lab")
    world.reset()
    with pytest.raises(NotFound):
        backend.devices.detail("lab")
    assert backend.devices.list().total == 4


def test_status_uses_the_timeout_chain(world: World) -> None:
    automation_of(world).devices.create("env_sensor", "lab", "webhook", {}, "lab", None)
    assert automation_of(world).devices.view("lab").status == "disconnected"
    automation_of(world).ingest.webhook("lab", {"t": 1}, None, None, None)
    world.env.run(until=299)
    assert automation_of(world).devices.view("lab").status == "online"
    world.env.run(until=301)
    assert automation_of(world).devices.view("lab").status == "offline"
    automation_of(world).devices.update(
        "lab", name=None, adapter_type=None, connection_config=None, adapter_id=KEEP, offline_timeout_secs=600
    )
    assert automation_of(world).devices.view("lab").status == "online"
    sensor = automation_of(world).devices.view("env_sensor-0001")
    assert sensor.status == "online" and sensor.last_seen == world.epoch + 300


def test_unknown_type_is_an_internal_error(world: World) -> None:
    with pytest.raises(InternalError, match="Device type template 'x' not found"):
        automation_of(world).devices.create("x", "n", "mqtt", {}, None, None)


def test_snapshot_restores_devices_samples_and_drafts(world: World) -> None:
    automation_of(world).devices.create("env_sensor", "lab", "webhook", {}, "lab", None)
    automation_of(world).ingest.webhook("lab", {"t": 1.5}, None, None, None)
    automation_of(world).ingest.webhook("stray", {"t": 2}, None, None, None)
    snap = world.snapshot()
    automation_of(world).devices.delete("lab")
    automation_of(world).ingest.approve_draft("stray", "env_sensor", None, None)
    world.restore(snap)
    assert automation_of(world).devices.view("lab").status == "online"
    assert world.store.latest_samples("lab")["t"][1] == 1.5
    assert [d.device_id for d in automation_of(world).ingest.list_drafts()] == ["stray"]


def test_command_payload_template_rendering() -> None:
    from hardware.ports.devices import CommandDef, DataType, ParameterDef
    from twin.automation.device_types import render_payload

    command = CommandDef(
        "set_mode",
        "Set mode",
        payload_template='{"mode":"${mode}","level":${level},"zone":${zone},"id":"${request_id}","x":${x}}',
        parameters=(
            ParameterDef("mode", "Mode", DataType("string")),
            ParameterDef("level", "Level", DataType("integer"), default_value=3),
        ),
        fixed_values={"zone": {"a": 1}},
    )
    rendered = render_payload(command, {"mode": "eco", "zone": "ignored"}, "r-1")
    assert rendered == '{"mode":"eco","level":3,"zone":{"a":1},"id":"r-1","x":${x}}'
    assert render_payload(command, {"mode": "on", "level": 7}, "r-2").startswith('{"mode":"on","level":7,')
    plain = render_payload(CommandDef("ping", "Ping"), {"n": True}, "r-3")
    assert plain == '{"command":"ping","params":{"n":true},"request_id":"r-3"}'
