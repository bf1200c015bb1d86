"""What the control plane's routes need of the object behind them beyond the :class:`WorldControl`
port: scenario actions and the client sleep, the console's readings of the fleet, scenarios run on
the live world, and the request journal. A backend without a part answers ``404`` for its routes."""

from __future__ import annotations

from dataclasses import asdict, is_dataclass
from typing import Annotated, Any, Protocol, runtime_checkable

from fastapi import Depends, Request
from fastapi.responses import JSONResponse

from hardware.ports.control import WorldControl
from hardware.ports.devices import Device
from hardware.ports.errors import DomainError, ErrorCode, NotFound
from hardware.ports.gateway import GatewayBackend
from hardware.ports.types import ClockMode, ClockState, SnapshotInfo

STATUS = {
    ErrorCode.INVALID_INPUT: 400,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CONFLICT: 409,
    ErrorCode.UNAVAILABLE: 503,
}


def error_response(exc: DomainError) -> JSONResponse:
    """The control plane's error: ``{"error": {"code", "message"}}`` with the code's status."""
    body = {"error": {"code": exc.code.value, "message": exc.message}}
    return JSONResponse(body, status_code=STATUS.get(exc.code, 500))


class ActionControl(Protocol):
    """Scenario actions and the client sleep."""

    def run_action(
        self, name: str, params: dict[str, Any], for_seconds: float | None = None
    ) -> dict[str, Any]: ...

    def undo_action(self, action_id: int) -> bool: ...

    def active_actions(self) -> list[int]: ...

    def action_log(self, since_id: int = 0) -> list[dict[str, Any]]:
        """Recent actions: ``id, action, params, at, undo_at, ended_at, active``."""

    async def sleep_world(self, seconds: float) -> ClockState: ...


class Run(Protocol):
    """A scenario run on the live world."""

    state: str
    """``running``, ``finished`` (reached its stop time), ``stopped`` (early) or ``aborted``."""
    mode: str
    drive: bool
    stop_at: float
    first_action: int
    """Actions with a greater id were run during this run."""


class Scenarios(Protocol):
    loaded: Any
    """The loaded scenario (the scenario model), or ``None``."""
    source: str
    run: Run | None

    def library(self) -> list[dict[str, Any]]: ...

    def load(self, name: str | None = None, text: str | None = None, filename: str = "upload") -> Any:
        """``NotFound`` for a name the library lacks, ``InvalidInput`` for a file that does not validate."""

    def start(self, mode: str | None = None, speed: float | None = None, drive: bool = True) -> None:
        """``Conflict`` with nothing loaded, a run going on, or cameras this twin does not serve."""

    def stop(self) -> None: ...

    def current(self) -> Any:
        """The run's result (verdicts, record, errors, ``passed``); ``NotFound`` before any run."""

    def report(self) -> str: ...


class ConsoleControl(WorldControl, ActionControl, Protocol):
    scenarios: Scenarios | None
    """``None`` where nothing runs scenarios on this world (``twin run`` sets them)."""

    def set_mode(self, mode: ClockMode) -> ClockState: ...

    def snapshots(self) -> list[SnapshotInfo]: ...

    def delete_snapshot(self, snapshot_id: str) -> None:
        """``NotFound`` for an unknown id."""

    def gateway(self, camera_id: str) -> GatewayBackend:
        """``NotFound`` for an unknown camera."""

    def camera_ids(self) -> list[str]: ...

    def generation(self) -> int:
        """Changes whenever the world has been rebuilt (reset, restore, a scenario run's start)."""

    def camera_state(self, camera_id: str) -> dict[str, Any]: ...

    def sensors(self, page: int, limit: int, points: int) -> tuple[list[Device], int, dict[str, Any]]: ...


@runtime_checkable
class Directory(Protocol):
    """Where a sharded world's members are (its coordinator's control object)."""

    @property
    def clock(self) -> Any: ...

    def members(self) -> list[dict[str, Any]]:
        """Every server: ``name, shard, node, node_id, pid, urls``."""

    def shards(self) -> list[dict[str, Any]]:
        """Every shard: ``name, holds, node, pid, state, sim_time, errors``."""

    def readings(self, page: int, limit: int, points: int) -> dict[str, Any]:
        """The console's ``sensors`` and ``cameras``, read on the shards that hold them."""

    def camera_detail(self, camera_id: str) -> dict[str, Any]:
        """One camera as ``GET /cameras/{id}`` shows it; ``NotFound`` for an unknown one."""


class JournalView(Protocol):
    dropped: int

    @property
    def last_seq(self) -> int: ...

    def __len__(self) -> int: ...

    def select(
        self,
        *,
        since: int = 0,
        server: str | None = None,
        route: str | None = None,
        status: int | None = None,
        client: str | None = None,
        limit: int = 1000,
    ) -> list[Any]: ...

    def distinct(self, since: int = 0) -> dict[str, set]:
        """The distinct ``server``, ``route``, ``status`` and ``client`` of the entries after ``since``."""


async def _control(request: Request) -> WorldControl:
    return request.app.state.control


def has(control: WorldControl, attribute: str, what: str) -> Any:
    """``control`` if it has ``attribute``, else ``NotFound`` naming ``what`` it lacks."""
    if not hasattr(control, attribute):
        raise NotFound(f"this backend has no {what}", resource="control")
    return control


async def _actions(request: Request) -> ActionControl:
    return has(request.app.state.control, "run_action", "scenario actions")


async def console(request: Request) -> ConsoleControl:
    return has(request.app.state.control, "camera_state", "console readings")


async def _scenarios(request: Request) -> ConsoleControl:
    control = await console(request)
    if control.scenarios is None:
        message = "this twin runs no scenarios from its control plane (`twin run` does)"
        raise NotFound(message, resource="scenario")
    return control


Control = Annotated[WorldControl, Depends(_control)]
Actions = Annotated[ActionControl, Depends(_actions)]
Console = Annotated[ConsoleControl, Depends(console)]
ScenarioConsole = Annotated[ConsoleControl, Depends(_scenarios)]
"""The console's control object with its live scenarios set."""


def clock_json(state: ClockState) -> dict[str, Any]:
    return {
        "mode": state.mode.value,
        "speed": state.speed,
        "paused": state.paused,
        "sim_time": state.sim_time,
        "epoch": state.epoch,
        "unix_time": state.unix_time,
    }


def plain(value: Any) -> Any:
    """A port value (frozen dataclasses, tuples, enums) as JSON-ready data."""
    return asdict(value) if is_dataclass(value) and not isinstance(value, type) else value
