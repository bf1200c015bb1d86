"""Scenarios run on the live world from the console: the library (``GET /scenarios``), loading one
(``POST /scenario/load`` with a library ``name`` or an uploaded ``yaml`` text), running and stopping
it (``POST`` / ``DELETE /scenario/run``), its status with the expectations judged on what has
happened so far (``GET /scenario``), and the HTML report (``GET /scenario/report``)."""

from __future__ import annotations

from typing import Any, Literal

from fastapi import APIRouter
from fastapi.responses import HTMLResponse
from pydantic import BaseModel, ConfigDict, Field

from api.control.deps import ConsoleControl, ScenarioConsole, Scenarios, clock_json

router = APIRouter(tags=["scenarios"])

MAX_YAML = 1_000_000


class LoadBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str | None = Field(default=None, max_length=100, description="a scenario of the library")
    yaml: str | None = Field(default=None, max_length=MAX_YAML, description="a scenario file's text")
    filename: str = Field(default="upload", max_length=200, description="named in validation errors")


class RunBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    mode: Literal["step", "realtime"] | None = Field(default=None, description="default: the scenario's")
    speed: float | None = Field(default=None, gt=0, description="default: the scenario's")
    drive: bool = Field(default=True, description="step mode: the run moves the clock itself")


def _scenario(s: Any, source: str) -> dict[str, Any]:
    return {
        "name": s.name,
        "description": s.description.strip(),
        "source": source,
        "seed": s.seed,
        "clock": {"mode": s.clock.mode, "speed": s.clock.speed, "epoch": s.clock.epoch},
        "stop_at": s.stop.at,
        "timeline": [
            {
                "at": step.at,
                "after": step.after.model_dump() if step.after is not None else None,
                "do": step.do,
                "params": step.params,
                "for": step.for_,
            }
            for step in s.timeline
        ],
        "expectations": [
            {"name": e.label, "expect": e.expect, "server": e.server, "optional": e.optional}
            for e in s.expectations
        ],
    }


def _verdict(v: Any) -> dict[str, Any]:
    """A verdict: its outcome (``passed``, ``failed`` or ``inconclusive``), and whether the scenario
    lets the run pass while it is inconclusive (``optional``)."""
    return {"name": v.name, "outcome": str(v.outcome), "message": v.message, "optional": v.optional}


def _live(control: ConsoleControl) -> Scenarios:
    assert control.scenarios is not None  # the ScenarioConsole dependency made sure
    return control.scenarios


def _status(control: ConsoleControl) -> dict[str, Any]:
    s = _live(control)
    out: dict[str, Any] = {
        "clock": clock_json(control.clock.state()),
        "loaded": _scenario(s.loaded, s.source) if s.loaded is not None else None,
        "run": None,
    }
    run = s.run
    if run is not None:
        result = s.current()
        out["run"] = {
            "scenario": _scenario(result.scenario, str(result.source)),
            "state": run.state,
            "mode": run.mode,
            "drive": run.drive,
            "stop_at": run.stop_at,
            "sim_time": result.record.end,
            "passed": result.passed,
            "outcome": str(result.outcome),
            "verdicts": [_verdict(v) for v in result.verdicts],
            "errors": list(result.errors),
            "requests": len(result.record.journal),
            "events": len(result.record.events),
            "actions": control.action_log(run.first_action),
        }
    return out


@router.get("/scenarios")
async def library(control: ScenarioConsole) -> dict:
    """The scenario library: each file's name (what ``load`` takes), title, description, stop time
    and fleet size, or the error that keeps it from loading."""
    return {"scenarios": _live(control).library()}


@router.post("/scenario/load")
async def load(body: LoadBody, control: ScenarioConsole) -> dict:
    _live(control).load(body.name, body.yaml, body.filename)
    return _status(control)


@router.get("/scenario")
async def status(control: ScenarioConsole) -> dict:
    """The loaded scenario, and the current or last run: its state, sim time, verdicts so far,
    timeline errors and the actions it ran (each with when it started and ended)."""
    return _status(control)


@router.post("/scenario/run")
async def run(control: ScenarioConsole, body: RunBody | None = None) -> dict:
    """Rebuild the world from the loaded scenario and run it; ``409`` with nothing loaded, a run
    going on, or a fleet whose cameras this twin does not serve."""
    body = body or RunBody()
    _live(control).start(body.mode, body.speed, body.drive)
    return _status(control)


@router.delete("/scenario/run")
async def stop(control: ScenarioConsole) -> dict:
    """End the run now; its verdicts are judged on what happened until then."""
    _live(control).stop()
    return _status(control)


@router.get("/scenario/report", response_class=HTMLResponse)
async def report(control: ScenarioConsole) -> HTMLResponse:
    """The current or last run's HTML report (the one ``twin scenario run --report`` writes)."""
    return HTMLResponse(_live(control).report())
