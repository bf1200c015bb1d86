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
    rtsp_port: int = 8554
    """Each camera's RTSP server: on its own address at this port (``ip`` addressing), or at this
    port + N - 1 (``port`` addressing); a taken port gives way to a free one, which the camera's
    media configuration then reports."""
    rtsp_udp: bool = False
    """Also serve RTP over UDP; the device serves it interleaved on the RTSP connection only."""
    mqtt_host: str = "0.0.0.0"
    mqtt_port: int = 1883
    mqtt_url: str | None = None
    control_host: str = "127.0.0.1"
    control_port: int = 9380
    log_level: str = "info"
    rate_limit: int | None = None
    """Requests per minute per client; ``None`` derives it from the host like the real server."""
    api_key: str | None = None
    """A default API key to seed (``NEOMIND_API_KEY``); never printed."""
    public_host: str | None = None
    """The host clients reach this server at (``NEOMIND_PUBLIC_HOST``); default: this host's LAN address."""
    server_url: str | None = None
    """The public base URL of the API server (``NEOMIND_SERVER_URL``), e.g. behind a reverse proxy."""

    @property
    def clock_mode(self) -> ClockMode | None:
        return ClockMode.STEP if self.step else None


LOOPBACK = {
    "host": "127.0.0.1",
    "port": 0,
    "control_port": 0,
    "mqtt_host": "127.0.0.1",
    "mqtt_port": 0,
    "gateway_addressing": "port",
    "gateway_http_port": 0,
    "gateway_https_port": 0,
    "rtsp_port": 0,
}
"""Settings that put every server on a free loopback port (scenario runs, benches, socket tests)."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="twin", description="Hardware-in-the-loop simulator and digital twin.")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="start the world and every server on it")
    run.add_argument("--scenario", type=Path, help="scenario YAML (default: scenarios/default.yaml)")
    run.add_argument("--seed", type=int, help="override the scenario's seed")
    run.add_argument("--speed", type=float, help="realtime speed factor (60 = a minute per second)")
    run.add_argument(
        "--step", action="store_true", default=None, help="time moves only when the control plane advances it"
    )
    run.add_argument("--cameras", type=int, help="number of simulated cameras")
    run.add_argument("--sensors", type=int, help="number of simulated sensors")
    run.add_argument("--state-dir", type=Path, help="durable state directory (default: in-memory)")
    run.add_argument("--release", choices=("0.9.24", "0.9.17"), help="automation backend release profile")
    run.add_argument("--host", help="automation API bind address")
    run.add_argument("--port", type=int, help="automation API port (env NEOMIND_PORT; default 9375)")
    run.add_argument(
        "--gateway-addressing",
        choices=("ip", "port"),
        help="ip: 127.0.1.N:8080/8443; port: 127.0.0.1:8080+N/8443+N",
    )
    run.add_argument("--gateway-http-port", type=int)
    run.add_argument("--gateway-https-port", type=int)
    run.add_argument("--rtsp-port", type=int, help="cameras' RTSP port (default 8554)")
    run.add_argument(
        "--rtsp-udp",
        action="store_true",
        default=None,
        help="also serve RTSP sessions over UDP (the device answers 461: TCP interleaved only)",
    )
    run.add_argument("--mqtt-port", type=int, help="embedded broker port")
    run.add_argument(
        "--mqtt-url", help="use an external broker (mqtt://host:port) instead of the embedded one"
    )
    run.add_argument("--control-port", type=int)
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    run.add_argument("--rate-limit", type=int, help="automation API requests per minute per client")
    return p


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[str, Settings]:
    """The command and its settings; flags win over the environment, which wins over defaults."""
    environ = os.environ if environ is None else environ
    args = vars(_parser().parse_args(argv))
    command = args.pop("command")
    values = {key: value for key, value in args.items() if value is not None}
    port_variable = "PORT" if values.get("release") == "0.9.17" else "NEOMIND_PORT"  # renamed after 0.9.17
    if "port" not in values and environ.get(port_variable, "").isdigit():
        values["port"] = int(environ[port_variable])
    if environ.get("NEOMIND_API_KEY"):
        values["api_key"] = environ["NEOMIND_API_KEY"]
    if environ.get("NEOMIND_PUBLIC_HOST", "").strip():
        values["public_host"] = environ["NEOMIND_PUBLIC_HOST"].strip()
    if environ.get("NEOMIND_SERVER_URL", "").strip():
        values["server_url"] = environ["NEOMIND_SERVER_URL"].strip()
    return command, Settings(**values)
