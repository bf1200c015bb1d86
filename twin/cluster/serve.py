"""``twin run --shards N`` (or ``--cluster HOST:PORT``): the world served by its shards, the control
plane by the coordinator, until SIGINT or SIGTERM.

Every member keeps the address it has in one process (the automation API on ``--port``, each
camera on its own loopback address or port), whichever shard serves it; ``GET /fleet`` on the
control plane and the banner say where each one is. A shard whose process dies is reported on the
control plane (``GET /fleet``: its ``state``) and in the log; the others go on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time

from hardware.ports.types import ClockMode
from twin import http_limits as limits
from twin import listeners as http
from twin.cluster.control import ClusterClock, ClusterControl, control_app
from twin.cluster.coordinator import Coordinator, ShardLost
from twin.cluster.plan import AUTOMATION_SHARD
from twin.cluster.run import CoordinatorSteps, owners_of
from twin.scenario.model import load_scenario
from twin.scenario.timeline import LoggedList
from twin.settings import Settings

log = logging.getLogger("twin")
WATCH_WALL_S = 0.5
STEPS_WALL_S = 0.02
"""How often (wall seconds) the coordinator looks at the timeline's clock steps and relays."""


def serve_sharded(settings: Settings) -> None:
    asyncio.run(_serve(settings))


async def _serve(settings: Settings) -> None:
    from twin.cluster.plan import SplitError, split
    from twin.serve import world_config

    scenario = (
        load_scenario(settings.scenario, allowed=settings.scenario_files) if settings.scenario else None
    )
    if settings.has_real_members or (scenario is not None and scenario.real_names()):
        raise SplitError(
            "real members (--real-automation, --real-camera) are served by one process: drop --shards"
        )
    config, mode, speed = world_config(settings, scenario)
    specs = split(config, settings.shards or 1, publishing=settings.publish_fleet is not None)
    coordinator = Coordinator(settings, specs, owners_of(specs), address=settings.cluster)
    coordinator.start()  # Ray wants its first call on the main thread
    try:
        clock = ClusterClock(coordinator, ClockMode.STEP, speed, coordinator.info[AUTOMATION_SHARD]["epoch"])
        control = ClusterControl(coordinator, clock, config.seed)
        if mode is ClockMode.REALTIME:
            control.set_mode(ClockMode.REALTIME)
        app, token = control_app(control, coordinator, settings)
        server = http.server(app, settings.control_host, settings.control_port, None, limits.CONTROL)
        listener = http.Listener("control", server)
        await http.open_all([listener])
        log.info("%s", banner(control, listener.url + _token_note(settings, token)))
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        steps = CoordinatorSteps(scenario, control, LoggedList()) if scenario is not None else None
        watch = asyncio.create_task(_watch(coordinator, steps))
        await stop.wait()
        watch.cancel()
        with contextlib.suppress(BaseException):
            await watch
        await http.close_all([listener])
    finally:
        log.info("twin: shutting down %d shards", len(coordinator.specs))
        await asyncio.to_thread(coordinator.shutdown)


async def _watch(coordinator: Coordinator, steps: CoordinatorSteps | None) -> None:
    """Look for shards whose process is gone (the coordinator logs each once), and do the
    coordinator's part of the scenario's timeline."""
    last = 0.0
    while True:
        await asyncio.sleep(STEPS_WALL_S if steps is not None else WATCH_WALL_S)
        with contextlib.suppress(ShardLost):  # logged, and left out of every later call
            if steps is not None:
                steps.tick()
            if time.monotonic() - last > WATCH_WALL_S:
                coordinator.check()
                last = time.monotonic()


def _token_note(settings: Settings, token: str | None) -> str:
    from api.control.guard import TOKEN_FILE

    if token is None:
        return ""
    return f"  (token in {settings.state_dir / TOKEN_FILE})" if settings.state_dir else f"/?token={token}"


def banner(control: ClusterControl, control_url: str) -> str:
    state = control.clock.state()
    lines = [f"twin: {len(control.coordinator.specs)} shards, clock {state.mode.value} x{state.speed:g}"]
    for spec in control.coordinator.specs:
        info = control.coordinator.info[spec.name]
        lines.append(f"  {spec.name:<9} {info.get('node_ip')} pid {info.get('pid')}: {spec.describe()}")
    lines.append(f"  control plane   {control_url}")
    for m in control.members():
        lines.append(f"  {m['name']:<14}  {'  '.join(m['urls'].values())}  ({m['shard']})")
    return "\n".join(lines)
