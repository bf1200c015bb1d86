"""A third device kind, defined in this test only: a doorbell. One registration gives it a wing in
the world (a SimPy process and state), a server the composition root builds and serves, an entry
in a scenario's fleet and a timeline action, with no change to World, twin/serve.py or
twin/settings.py."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from pydantic import BaseModel, ConfigDict, Field

from api.automation.ratelimit import RateLimiter
from twin.engine import Host
from twin.kinds import FleetEntry, Kind
from twin.scenario.actions import Action, Params, Reach, Target
from twin.scenario.model import load_scenario, parse_scenario
from twin.scenario.runner import schedule
from twin.scenario.source import ScenarioError
from twin.serve import build
from twin.serving import Address, Served, Site
from twin.settings import Settings
from twin.wings import KINDS

DOORBELL = "doorbell"
HEARTBEAT_S = 60.0


class Doorbells:
    """The wing: a row of doorbells, each counting its presses, and one process that beats."""

    def __init__(self, world: Host, count: int) -> None:
        self.world = world
        self.presses = [0] * count
        self.heartbeats = 0
        world.env.process(self._beat())

    def _beat(self):
        while True:
            yield self.world.env.timeout(HEARTBEAT_S)
            self.heartbeats += 1

    def press(self, number: int) -> None:
        self.presses[number - 1] += 1

    def snapshot(self) -> list[int]:
        return list(self.presses)

    def restore(self, state: list[int]) -> None:
        self.presses = list(state)


def doorbells_of(world: Host) -> Doorbells:
    wing = world.wings[DOORBELL]
    assert isinstance(wing, Doorbells)
    return wing


class DoorbellFleet(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    count: int = Field(ge=1, le=8)


class PressParams(Params):
    doorbell: int = Field(default=1, ge=1)


def press(target: Target, params: PressParams) -> None:
    doorbells_of(target.world).press(params.doorbell)


def servers(site: Site) -> list[Served]:
    app = FastAPI()

    @app.get("/presses")
    def presses() -> dict[str, Any]:
        return {"presses": doorbells_of(site.world).presses}

    limiter = RateLimiter(site.base_limit, site.clock.now)
    address = Address(DOORBELL, "127.0.0.1", 0)
    return [Served(DOORBELL, DOORBELL, None, app, (address,), "doorbell API", limiter)]


KIND = Kind(
    DOORBELL,
    lambda world: Doorbells(world, world.config.entry(DOORBELL) or 0),
    servers=servers,
    fleet=FleetEntry("doorbells", DoorbellFleet, spec=lambda entry: entry.count, description="doorbells"),
    actions=(Action("doorbell_press", PressParams, press, "someone presses a doorbell", Reach.WING),),
)

SCENARIO = """\
name: doorbells
clock: {mode: step}
fleet:
  doorbells: {count: 2}
timeline:
  - at: 30
    do: doorbell_press
    params: {doorbell: 2}
"""


@pytest.fixture
def registered() -> Iterator[None]:
    KINDS.register(KIND)
    yield
    KINDS.unregister(DOORBELL)


async def test_a_kind_registered_once_gets_a_wing_a_server_a_fleet_entry_and_an_action(
    registered: None, tmp_path: Path
) -> None:
    path = tmp_path / "doorbells.yaml"
    path.write_text(SCENARIO)
    scenario = load_scenario(path)
    assert scenario.world_config().entry(DOORBELL) == 2

    twin = build(Settings(scenario=path, step=True))
    doorbells = doorbells_of(twin.world)
    assert doorbells.presses == [0, 0]
    errors: list[str] = []
    schedule(scenario, twin.control, errors)
    twin.world.env.run(until=HEARTBEAT_S + 1)
    assert (doorbells.presses, doorbells.heartbeats, errors) == ([0, 1], 1, [])
    assert "doorbell" in twin.served and "doorbell" in twin.faults

    twin.control.run_action("doorbell_press", {"doorbell": 1}, None)
    transport = httpx.ASGITransport(app=twin.served[DOORBELL].app)
    async with httpx.AsyncClient(transport=transport, base_url="http://doorbell") as client:
        assert (await client.get("/presses")).json() == {"presses": [1, 1]}
    assert [e.server for e in twin.journal.entries][-1:] == ["doorbell"]

    snap = twin.world.snapshot()
    doorbells.press(1)
    twin.world.restore(snap)
    assert doorbells_of(twin.world).presses == [1, 1]
    twin.world.store.close()


def test_the_fleet_entry_is_strict_and_known_only_while_the_kind_is_registered() -> None:
    with pytest.raises(ScenarioError, match="doorbells"):
        parse_scenario("name: x\nfleet:\n  doorbells: {count: 1}\n")
    KINDS.register(KIND)
    try:
        with pytest.raises(ScenarioError, match="unknown key"):
            parse_scenario("name: x\nfleet:\n  doorbells: {count: 1, colour: red}\n")
        assert parse_scenario("name: x\nfleet:\n  doorbells: {count: 1}\n").fleet.entries() == (
            ("doorbell", 1),
        )
    finally:
        KINDS.unregister(DOORBELL)
