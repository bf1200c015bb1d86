"""The twin inside a user's own test suite (the pytest plugin, ``pytest_twin``, is built on it).

- :class:`LiveTwin` serves a whole twin on free loopback ports from an event loop in a thread of its
  own, so that a test's plain blocking code (``httpx``, ``requests``, an SDK) talks to it over real
  sockets while the test drives the world clock, runs actions and reads the request journal.
  Everything that touches the world runs on the twin's loop, between its handlers, as the control
  plane's own calls do.
- :func:`run_scenario` runs a scenario file with a Python callable as the client under test (in
  place of the subprocess ``twin scenario run --client`` starts) and returns the runner's result;
  :func:`scenario_failure` is the verdict text a failed run is reported with.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import tempfile
import threading
import traceback
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import httpx

from twin.journal import JournalEntry
from twin.scenario.runner import RunOptions, RunResult, attach, client_env, run
from twin.serve import Running, build, start, stop
from twin.settings import LOOPBACK, Settings

T = TypeVar("T")

START_WAIT_S = 300.0
"""Wall seconds a start or a stop may take before it is reported as stuck (a loaded CI machine)."""
CLIENT_TAIL_LINES = 30


class _Loop:
    """An asyncio event loop running in a daemon thread; coroutines are handed to it and awaited."""

    def __init__(self, name: str) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, work: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        if threading.current_thread() is self.thread:
            work.close()
            raise RuntimeError("called from the twin's own event loop: await the coroutine there instead")
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(timeout)

    def close(self) -> None:
        async def cancel_rest() -> None:
            rest = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in rest:
                task.cancel()
            await asyncio.gather(*rest, return_exceptions=True)

        with contextlib.suppress(Exception):
            self.run(cancel_rest(), START_WAIT_S)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(START_WAIT_S)
        if not self.thread.is_alive():
            self.loop.close()


async def _call(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    return fn(*args, **kwargs)


def loopback_settings(**overrides: Any) -> Settings:
    """Every server on a free loopback port, the clock in step mode (time moves only when the test
    moves it) unless ``speed`` is given or ``step=False``; ``overrides`` are :class:`Settings` fields."""
    values: dict[str, Any] = {"scenario": None, "log_level": "warning", **LOOPBACK, **overrides}
    values.setdefault("step", values.get("speed") is None)
    if values["scenario"] is not None:
        values["scenario"] = Path(values["scenario"])
    return Settings(**values)


class LiveTwin:
    """A twin served on free loopback ports until :meth:`stop` (or the end of a ``with`` block).

    ``settings`` as :func:`loopback_settings` makes them. The scenario's timeline, if the settings
    name a scenario, runs on the world clock as in ``twin run`` (a step that fails is appended to
    :attr:`errors`). In step mode the world moves only by :meth:`advance` and :meth:`sleep`."""

    def __init__(self, settings: Settings | None = None) -> None:
        self.settings = settings or loopback_settings()
        self.errors: list[str] = []
        self._loop: _Loop | None = None
        self._running: Running | None = None
        self._tmp: tempfile.TemporaryDirectory | None = None

    # Life ------------------------------------------------------------------------------------
    def start(self) -> LiveTwin:
        if self._running is not None:
            return self
        self._loop = _Loop("twin-loop")
        self._tmp = tempfile.TemporaryDirectory(prefix="twin-test-")
        try:
            self._running = self._loop.run(self._start(Path(self._tmp.name)), START_WAIT_S)
        except BaseException:
            self._close()
            raise
        return self

    async def _start(self, cert_dir: Path) -> Running:
        from twin.scenario.model import load_scenario

        running = await start(build(self.settings), cert_dir)
        scenario = load_scenario(self.settings.scenario) if self.settings.scenario else None
        self.errors = attach(running, scenario)
        return running

    def stop(self) -> None:
        if self._loop is not None and self._running is not None:
            running, self._running = self._running, None
            self._loop.run(stop(running), START_WAIT_S)
        self._close()

    def _close(self) -> None:
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        if self._tmp is not None:
            self._tmp.cleanup()
            self._tmp = None

    def __enter__(self) -> LiveTwin:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def running(self) -> Running:
        """The started twin (its servers, world, clock and control object); starts it if needed.
        Touch the world only through :meth:`call`: it belongs to the twin's event loop."""
        if self._running is None:
            self.start()
        assert self._running is not None
        return self._running

    # Where it listens ------------------------------------------------------------------------
    @property
    def env(self) -> dict[str, str]:
        """The variables ``twin scenario run`` gives a client (``TWIN_AUTOMATION_URL``...)."""
        return client_env(self.running)

    @property
    def automation_url(self) -> str:
        return self.running.url("automation")

    @property
    def control_url(self) -> str:
        return self.running.url("control")

    @property
    def gateway_urls(self) -> dict[str, str]:
        """Each camera's gateway over HTTP, by camera id."""
        names = self.running.twin.gateways
        return {camera_id: self.running.url(f"{camera_id}/http") for camera_id in names}

    @property
    def gateway_url(self) -> str:
        """The first camera's gateway over HTTP."""
        urls = self.gateway_urls
        if not urls:
            raise LookupError("this twin has no camera")
        return next(iter(urls.values()))

    @property
    def mqtt_url(self) -> str | None:
        """The embedded MQTT broker; ``None`` when the twin uses an outside one."""
        return self.env.get("TWIN_MQTT_URL")

    # The world -------------------------------------------------------------------------------
    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` on the twin's event loop (where the world may be read and changed)."""
        running = self.running
        assert self._loop is not None and running is not None
        return self._loop.run(_call(fn, *args, **kwargs))

    @property
    def now(self) -> float:
        """Sim seconds since the start."""
        return self.call(lambda: self.running.twin.world.env.now)

    def advance(self, seconds: float) -> float:
        """Move the world clock ``seconds`` on (every event due by then happens); returns the new time."""
        control = self.running.twin.control
        return self.call(lambda: control.advance(seconds).sim_time)

    def sleep(self, seconds: float) -> float:
        """A client's pause on the world clock, as ``POST /clock/sleep``: in step mode the clock moves
        on (and waits until the cameras' listeners follow their power), in realtime it is waited for."""
        control = self.running.twin.control
        assert self._loop is not None
        return self._loop.run(control.sleep_world(seconds)).sim_time

    def action(self, name: str, params: dict[str, Any] | None = None, *, for_: float | None = None) -> dict:
        """Run a scenario action now (``twin.action("rate_limit_storm", {"limit": 2}, for_=60)``);
        returns its id, parameters and when it is undone."""
        control = self.running.twin.control
        return self.call(control.run_action, name, params or {}, for_)

    def undo(self, action_id: int) -> bool:
        return self.call(self.running.twin.control.undo_action, action_id)

    def journal(self, **select: Any) -> list[JournalEntry]:
        """The requests the servers answered, oldest first; ``select``: ``server``, ``route``,
        ``status``, ``client``, ``since`` (a ``seq``), ``limit``."""
        journal = self.running.twin.journal
        assert journal is not None
        select.setdefault("limit", len(journal) or 1)
        return self.call(journal.select, **select)


# The test's own code as the client under test ------------------------------------------------
@dataclasses.dataclass
class ClientContext:
    """What an in-process client is handed: the addresses (as ``env``, the variables a subprocess
    client gets, and as attributes), an event set when the run ends (a client that loops should
    return soon after), its own log, and a pause on the world clock."""

    env: dict[str, str]
    log_path: Path
    stopping: threading.Event = dataclasses.field(default_factory=threading.Event)
    _lock: threading.Lock = dataclasses.field(default_factory=threading.Lock, repr=False)

    @property
    def automation_url(self) -> str:
        return self.env["TWIN_AUTOMATION_URL"]

    @property
    def control_url(self) -> str:
        return self.env["TWIN_CONTROL_URL"]

    @property
    def gateway_url(self) -> str | None:
        return self.env.get("TWIN_GATEWAY_URL")

    @property
    def gateway_urls(self) -> dict[str, str]:
        pairs = (item.partition("=") for item in self.env.get("TWIN_GATEWAY_URLS", "").split())
        return {name: url for name, _, url in pairs}

    @property
    def mqtt_url(self) -> str | None:
        return self.env.get("TWIN_MQTT_URL")

    def log(self, *parts: object) -> None:
        """A line of the client's output (the run's ``client_output``, the reports' client tail)."""
        with self._lock, open(self.log_path, "a", errors="replace") as out:
            out.write(" ".join(str(p) for p in parts) + "\n")

    def sleep(self, seconds: float) -> bool:
        """Pause ``seconds`` of world time through the control plane (``POST /clock/sleep``): in step
        mode this is what moves the world. ``False`` once the run is ending (the client should stop)."""
        done = threading.Event()

        def post() -> None:
            try:
                httpx.post(f"{self.control_url}/clock/sleep", json={"seconds": seconds}, timeout=None)
            except httpx.HTTPError:
                pass  # the run ended under it
            finally:
                done.set()

        if self.stopping.is_set():
            return False
        threading.Thread(target=post, name="twin-client-sleep", daemon=True).start()
        while not done.wait(0.05):
            if self.stopping.is_set():
                return False
        return not self.stopping.is_set()


Client = Callable[[ClientContext], Any]
"""An in-process client: ``client(ctx)``, plain or ``async``. It returns its exit status (``None``
is 0); an exception is exit status 1, its traceback in the client's output."""


class _ThreadClient:
    """The runner's view of an in-process client: a subprocess's ``wait``, ``returncode``,
    ``terminate`` (sets ``ctx.stopping``) and ``kill`` (gives up on the thread, status -9)."""

    def __init__(self, client: Client, ctx: ClientContext) -> None:
        self.client, self.ctx = client, ctx
        self.returncode: int | None = None
        self._loop = asyncio.get_running_loop()
        self._done: asyncio.Future[int] = self._loop.create_future()
        self.thread = threading.Thread(target=self._main, name="twin-client", daemon=True)
        self.thread.start()

    def _main(self) -> None:
        status = 1
        try:
            out = self.client(self.ctx)
            if inspect.isawaitable(out):
                out = asyncio.run(_awaited(out))
            status = 0 if out is None else int(out)
        except SystemExit as end:
            status = end.code if isinstance(end.code, int) else (0 if end.code is None else 1)
        except BaseException:
            self.ctx.log(traceback.format_exc().rstrip())
        with contextlib.suppress(RuntimeError):  # the run's loop is gone (the client was given up on)
            self._loop.call_soon_threadsafe(self._finish, status)

    def _finish(self, status: int) -> None:
        if not self._done.done():
            self.returncode = status
            self._done.set_result(status)

    async def wait(self) -> int:
        return await self._done

    def terminate(self) -> None:
        self.ctx.stopping.set()

    def kill(self) -> None:
        self.ctx.stopping.set()
        self._finish(-9)


async def _awaited(work: Any) -> Any:
    return await work


def client_launcher(client: Client) -> Callable[[str, dict[str, str], Path], Coroutine[Any, Any, Any]]:
    """For :attr:`RunOptions.launch`: start ``client`` in a thread of its own."""

    async def launch(_name: str, env: dict[str, str], log_path: Path) -> _ThreadClient:
        log_path.touch()
        return _ThreadClient(client, ClientContext(dict(env), log_path))

    return launch


def run_scenario(
    path: str | Path,
    client: Client | None = None,
    *,
    speed: float | None = None,
    step: bool | None = None,
    until: float | None = None,
) -> RunResult:
    """Run the scenario file ``path`` with ``client`` as the client under test, on free loopback
    ports, as ``twin scenario run`` does (``speed``, ``step`` and ``until`` are its ``--speed``,
    ``--step`` and ``--until``); returns the result (``result.outcome``, ``result.verdicts``). Raises
    :class:`~twin.scenario.source.ScenarioError` for a file that does not validate."""
    name = getattr(client, "__qualname__", repr(client)) if client is not None else None
    opts = RunOptions(
        speed=speed,
        step=step,
        client=f"{name} (in-process)" if name else None,
        stop_at=until,
        launch=client_launcher(client) if client is not None else None,
    )
    loop = _Loop("twin-scenario")
    try:
        return loop.run(run(Path(path), opts))
    finally:
        loop.close()


def scenario_failure(result: RunResult) -> str | None:
    """``None`` when the run passed; else its summary (every verdict with its message, the timeline's
    errors, the headline) and the tail of the client's output."""
    if result.passed:
        return None
    from twin.scenario.report import summary

    text = summary(result)
    tail = result.client_output.rstrip().splitlines()[-CLIENT_TAIL_LINES:]
    if tail:
        text += "\nthe client's last output:\n" + "\n".join(f"  | {line}" for line in tail)
    return text
