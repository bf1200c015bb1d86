"""Typed settings, read once at the composition root from the command line and the environment."""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hardware.ports.types import ClockMode

DEFAULT_SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "default.yaml"


@dataclass(frozen=True, slots=True)
class Settings:
    scenario: Path | None = DEFAULT_SCENARIO
    seed: int | None = None
    speed: float | None = None
    step: bool = False
    cameras: int | None = None
    sensors: int | None = None
    state_dir: Path | None = None
    release: str = "0.9.24"
    host: str = "0.0.0.0"
    port: int = 9375
    gateway_addressing: str = "ip"
    gateway_http_port: int = 8080
    gateway_https_port: int = 8443
    mqtt_host: str = "0.0.0.0"
    mqtt_port: int = 1883
    mqtt_url: str | None = None
    control_host: str = "127.0.0.1"
    control_port: int = 9380
    log_level: str = "info"

    @property
    def clock_mode(self) -> ClockMode | None:
        return ClockMode.STEP if self.step else None


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="twin", description="Hardware-in-the-loop simulator and digital twin.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the world and every server on it")
    run.add_argument("--scenario", type=Path, help="scenario YAML (default: scenarios/default.yaml)")
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    run.add_argument("--speed", type=float, help="realtime speed factor (60 = a minute per second)")
    run.add_argument("--step", action="store_true", help="time moves only when the control plane advances it")
    run.add_argument("--cameras", type=int, help="number of simulated cameras")
    run.add_argument("--sensors", type=int, help="number of simulated sensors")
    run.add_argument("--state-dir", type=Path, help="durable state directory (default: in-memory)")
    run.add_argument(
        "--release", choices=("0.9.24", "0.9.17"), default="0.9.24", help="automation backend release profile"
    )
    run.add_argument("--host", default="0.0.0.0", help="automation API bind address")
    run.add_argument("--port", type=int, help="automation API port (env NEOMIND_PORT; default 9375)")
    run.add_argument(
        "--gateway-addressing",
        choices=("ip", "port"),
        default="ip",
        help="ip: 127.0.1.N:8080/8443; port: 127.0.0.1:8080+N/8443+N",
    )
    run.add_argument("--gateway-http-port", type=int, default=8080)
    run.add_argument("--gateway-https-port", type=int, default=8443)
    run.add_argument("--mqtt-port", type=int, default=1883, help="embedded broker port")
    run.add_argument(
        "--mqtt-url", help="use an external broker (mqtt://host:port) instead of the embedded one"
    )
    run.add_argument("--control-port", type=int, default=9380)
    run.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    return p


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[str, Settings]:
    environ = os.environ if environ is None else environ
    args = _parser().parse_args(argv)
    port = args.port
    if port is None:
        env_port = environ.get("NEOMIND_PORT")
        port = int(env_port) if env_port and env_port.isdigit() else 9375
    return args.command, Settings(
        scenario=args.scenario or DEFAULT_SCENARIO,
        seed=args.seed,
        speed=args.speed,
        step=args.step,
        cameras=args.cameras,
        sensors=args.sensors,
        state_dir=args.state_dir,
        release=args.release,
        host=args.host,
        port=port,
        gateway_addressing=args.gateway_addressing,
        gateway_http_port=args.gateway_http_port,
        gateway_https_port=args.gateway_https_port,
        mqtt_port=args.mqtt_port,
        mqtt_url=args.mqtt_url,
        control_port=args.control_port,
        log_level=args.log_level,
    )
