"""Typed settings, read once at the composition root from the command line and the environment."""

from __future__ import annotations

import argparse
import os
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from hardware.ports.types import ClockMode
from twin import http_limits
from twin.cluster import options as shard_options

DEFAULT_SCENARIO = Path(__file__).resolve().parent.parent / "scenarios" / "default.yaml"
AUTOMATION = "automation"


class RealMemberError(ValueError):
    """A real member the fleet cannot take (an unknown camera id, more cameras than the fleet's)."""


@dataclass(frozen=True, slots=True)
class RealMember:
    """A member of the fleet that is a real device or server: the twin forwards its address to ``url``."""

    name: str
    """``automation`` or a camera id."""
    url: str
    insecure: bool = False
    """Accept the endpoint's certificate unverified (a device's self-signed one)."""
    api_key: str | None = field(default=None, repr=False)
    """The automation server's API key for the twin's own requests (read from the environment)."""
    login: tuple[str, str] | None = field(default=None, repr=False)
    """A camera's username and password for the twin's own start-up login (read from the environment)."""


@dataclass(frozen=True, slots=True)
class FleetPublishing:
    """The simulated sensors published as devices to an outside MQTT broker (``--publish-fleet-to``)."""

    url: str
    login: tuple[str, str] | None = field(default=None, repr=False)
    """Username and password, from ``TWIN_PUBLISH_MQTT_USERNAME`` / ``TWIN_PUBLISH_MQTT_PASSWORD``."""
    buffer: int = 10_000
    """Messages kept while the broker is away; past that the oldest are dropped (and counted)."""


PUBLISH_USERNAME_ENV = "TWIN_PUBLISH_MQTT_USERNAME"
PUBLISH_PASSWORD_ENV = "TWIN_PUBLISH_MQTT_PASSWORD"


@dataclass(frozen=True, slots=True)
class Settings:
    scenario: Path | None = DEFAULT_SCENARIO
    scenario_files: tuple[Path, ...] = ()
    """Directories a scenario's fixtures and videos may be in besides its own (``--scenario-files``)."""
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
    """The embedded broker's bind address (``--mqtt-host``; on the command line it follows ``--host``)."""
    mqtt_port: int = 1883
    mqtt_require_login: bool = False
    """``--mqtt-require-login``: the embedded broker refuses anonymous clients, whatever is stored."""
    mqtt_url: str | None = None
    control_host: str = "127.0.0.1"  # beyond loopback the control plane asks for its token
    control_port: int = 9380
    header_timeout: float = http_limits.HEADER_TIMEOUT_S  # wall seconds (twin/http_limits.py)
    idle_timeout: float = http_limits.IDLE_TIMEOUT_S
    ws_auth_timeout: float = http_limits.WS_AUTH_TIMEOUT_S
    log_level: str = "info"
    rate_limit: int | None = None
    """Requests per minute per client; ``None`` derives it from the host like the real server."""
    api_key: str | None = None
    """A default API key to seed (``NEOMIND_API_KEY``); never printed."""
    public_host: str | None = None
    """The host clients reach this server at (``NEOMIND_PUBLIC_HOST``); default: this host's LAN address."""
    server_url: str | None = None
    """The public base URL of the API server (``NEOMIND_SERVER_URL``), e.g. behind a reverse proxy."""
    video_sources: tuple[str, ...] = ()
    """Cameras' video sources over the scenario's (``--video-source``): ``SOURCE`` or ``CAMERA_ID=SOURCE``."""
    real_automation: str | None = None
    """The URL of a real automation server served through the twin's layers."""
    real_automation_api_key: str | None = field(default=None, repr=False)
    """Its API key, from the environment variable ``--real-automation-api-key-env`` names."""
    real_cameras: tuple[str, ...] = ()
    """Real cameras' gateways, each ``URL`` (the fleet's next camera) or ``CAMERA_ID=URL``."""
    insecure: tuple[str, ...] = ()
    """Real members (``automation`` or a camera id) whose certificates are not verified."""
    publish_fleet: FleetPublishing | None = None
    """Where the simulated sensors are published as real devices would publish, if anywhere."""
    fleet_broker: str | None = None  # --fleet-broker: started for publish_fleet (whose url is then "")
    rs485: tuple[str, ...] = ()
    """Cameras' RS485 on a serial port over the scenario's (``--rs485``): each ``CAMERA_ID=URL``."""
    host_stats: tuple[str, ...] = ()
    """Cameras whose monitor figures are this host's (``--host-stats``), by id."""
    shards: int | None = None
    """Shards of one world (``--shards``, :mod:`twin.cluster`); ``None``: one process, no Ray."""
    cluster: str | None = None
    """The Ray cluster's head (``--cluster HOST:PORT``); ``None``: an embedded Ray, if sharded."""

    @property
    def has_real_members(self) -> bool:
        return bool(self.real_automation or self.real_cameras)

    def real_clock(self, mode: ClockMode, speed: float, declared: str = "") -> tuple[ClockMode, float]:
        """The clock of a run: realtime at speed 1 when a member is real, whatever the scenario says
        (``mode``, ``speed``); :class:`RealMemberError` when the scenario's real members (``declared``,
        in words; its own clock was checked with the file) meet ``step`` or another ``speed`` here."""
        problem = wall_clock_problem(declared, self.step, self.speed or 1.0) if declared else None
        if problem is not None:
            raise RealMemberError(problem)
        return (ClockMode.REALTIME, 1.0) if self.has_real_members or declared else (mode, speed)

    def real_members(
        self, camera_ids: Sequence[str], declared: Mapping[str, RealMember] | None = None
    ) -> dict[str, RealMember]:
        """Every real member by name: the scenario's (``declared``), then the command line's; a
        camera given without an id takes the fleet's next camera (``camera_ids`` in fleet order) not
        named by another. :class:`RealMemberError` says what is wrong."""
        declared = declared or {}
        members: dict[str, RealMember] = dict(declared)
        if self.real_automation:
            if AUTOMATION in members:
                raise RealMemberError("--real-automation: the scenario's automation server is real already")
            members[AUTOMATION] = RealMember(
                AUTOMATION, self.real_automation, AUTOMATION in self.insecure, self.real_automation_api_key
            )
        specs = [camera_spec(spec) for spec in self.real_cameras]
        free = iter(c for c in camera_ids if c not in {name for name, _ in specs} and c not in members)
        for name, url in specs:
            if not name:
                name = next(free, "")
                if not name:
                    raise RealMemberError(f"--real-camera: more than the fleet's {len(camera_ids)} cameras")
            elif name not in camera_ids:
                raise RealMemberError(f"--real-camera: the fleet has no camera {name!r}")
            if name in members:
                where = "real in the scenario already" if name in declared else "given twice"
                raise RealMemberError(f"--real-camera: camera {name!r} is {where}")
            members[name] = RealMember(name, url, name in self.insecure)
        unknown = sorted(set(self.insecure) - set(members))
        if unknown:
            raise RealMemberError(f"--insecure: {', '.join(unknown)} is not a real member")
        for name in set(self.insecure) & set(declared):
            members[name] = replace(members[name], insecure=True)
        return members

    def host_hardware(
        self, rs485: Mapping[str, str | None], host_stats: Mapping[str, bool], real: Collection[str] = ()
    ) -> tuple[dict[str, str], set[str]]:
        """The cameras with a part on this machine's hardware: each one's RS485 URL (``--rs485`` over
        the scenario's ``rs485``; both maps hold every camera of the fleet) and the cameras whose
        figures are this host's (``--host-stats`` and the scenario's). :class:`RealMemberError` for an
        unknown camera, a real one (its parts are its own) or one serial device given to two cameras."""
        ports = {camera_id: url for camera_id, url in rs485.items() if url}
        for spec in self.rs485:
            name, url = camera_spec(spec)
            if name is None or name not in rs485:
                raise RealMemberError(f"--rs485: the fleet has no camera {name!r}")
            ports[name] = url
        unknown = sorted(set(self.host_stats) - set(host_stats))
        if unknown:
            raise RealMemberError(f"--host-stats: the fleet has no camera {unknown[0]!r}")
        hosted = {camera_id for camera_id, on in host_stats.items() if on} | set(self.host_stats)
        devices = [url for url in ports.values() if not url.startswith("loop://")]
        twice = sorted({url for url in devices if devices.count(url) > 1})
        if twice:
            raise RealMemberError(f"RS485: the serial port {twice[0]} is given to more than one camera")
        both = sorted((set(ports) | hosted) & set(real))
        if both:
            raise RealMemberError(f"camera {both[0]} is real: its RS485 and its figures are its own")
        return ports, hosted


LOOPBACK: dict[str, Any] = {
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
    files = "a directory a scenario's fixtures and videos may be in besides its own (repeatable)"
    run.add_argument("--scenario-files", metavar="DIR", type=Path, action="append", help=files)
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
    addressing = "ip: 127.0.1.N:8080/8443; port: 127.0.0.1:8080+N/8443+N"
    run.add_argument("--gateway-addressing", choices=("ip", "port"), help=addressing)
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
    run.add_argument("--mqtt-host", help="embedded broker bind address (default: the --host address)")
    login = "the embedded broker refuses anonymous clients (default: allowed, as the real server does)"
    run.add_argument("--mqtt-require-login", action="store_true", default=None, help=login)
    run.add_argument("--mqtt-url", help="an external broker (mqtt://host:port) in place of the embedded one")
    run.add_argument("--control-port", type=int)
    run.add_argument("--control-host", help="control plane bind address (beyond loopback: token required)")
    http_limits.add_arguments(run)
    shard_options.add_arguments(run)
    run.add_argument("--log-level", choices=("debug", "info", "warning", "error"))
    run.add_argument("--rate-limit", type=int, help="automation API requests per minute per client")
    run.add_argument(
        "--video-source",
        metavar="[ID=]SOURCE",
        dest="video_sources",
        action="append",
        help="real video in place of the synthetic scene, for every camera or camera ID: a file, an "
        "rtsp://, http(s):// URL or /dev/videoN (repeatable)",
    )
    fleet = run.add_mutually_exclusive_group()
    fleet.add_argument(
        "--publish-fleet-to",
        metavar="URL",
        type=_broker_url,
        help="also publish every simulated sensor's samples to this MQTT broker (mqtt:// or mqtts://) "
        f"as the devices would, QoS 1; login from {PUBLISH_USERNAME_ENV} / {PUBLISH_PASSWORD_ENV}",
    )
    brokers = "start this broker (loopback, free ports) and publish the fleet into it like --publish-fleet-to"
    fleet.add_argument("--fleet-broker", choices=("nats", "mosquitto"), help=brokers)
    buffer = "messages kept while that broker is away (default 10000; then the oldest are dropped)"
    run.add_argument("--publish-fleet-buffer", metavar="N", type=int, help=buffer)
    real = run.add_argument_group(
        "real members", "serve a real server or camera through the twin's faults, journal and verdicts"
    )
    real.add_argument("--real-automation", metavar="URL", type=_endpoint, help="a real automation server")
    real.add_argument(
        "--real-automation-api-key-env",
        metavar="VAR",
        help="environment variable holding the real server's API key (for the twin's own checks)",
    )
    real.add_argument(
        "--real-camera",
        metavar="[ID=]URL",
        dest="real_cameras",
        action="append",
        type=_camera_endpoint,
        help="a real camera's gateway in place of a simulated one (repeatable)",
    )
    real.add_argument(
        "--insecure",
        metavar="MEMBER",
        action="append",
        help="do not verify this real member's TLS certificate (automation or a camera id; repeatable)",
    )
    host = run.add_argument_group("host hardware", "a simulated camera's parts on this machine's hardware")
    host.add_argument(
        "--rs485",
        metavar="ID=URL",
        action="append",
        type=_serial_port,
        help="camera ID's RS485 on a serial port: a pyserial URL, /dev/ttyUSB0 or loop:// (repeatable)",
    )
    host.add_argument(
        "--host-stats",
        metavar="ID",
        action="append",
        help="camera ID's CPU, memory, disk and network figures are this host's, from /proc (repeatable)",
    )
    return p


def endpoint_problem(value: str) -> str | None:
    """What is wrong with a real member's URL (command line or scenario file), if anything."""
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return "expected an http:// or https:// URL"
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username or parts.password:
        return "a real endpoint's URL has no path, query or credentials"
    return None


def _endpoint(value: str) -> str:
    problem = endpoint_problem(value)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return value.rstrip("/")


def _broker_url(value: str) -> str:
    from hardware.adapters.mqtt_fleet import broker_address  # only when the option is given

    try:
        broker_address(value)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err
    return value.rstrip("/")


def _publish_checks(parser: argparse.ArgumentParser, values: dict, environ: Mapping[str, str]) -> None:
    """``--publish-fleet-to`` (or ``--fleet-broker``: the URL is known once it runs) and the buffer
    become one :class:`FleetPublishing`; the login comes from the environment only."""
    url, buffer = values.pop("publish_fleet_to", None), values.pop("publish_fleet_buffer", None)
    if url is None and "fleet_broker" not in values:
        if buffer is not None:
            parser.error("--publish-fleet-buffer needs --publish-fleet-to or --fleet-broker")
        return
    if buffer is not None and buffer < 1:
        parser.error("--publish-fleet-buffer must be at least 1")
    user, password = environ.get(PUBLISH_USERNAME_ENV), environ.get(PUBLISH_PASSWORD_ENV)
    if password and not user:
        parser.error(f"{PUBLISH_PASSWORD_ENV} is set without {PUBLISH_USERNAME_ENV}")
    login = (user, password or "") if user and url else None
    values["publish_fleet"] = FleetPublishing(url or "", login, **({"buffer": buffer} if buffer else {}))


def _serial_port(value: str) -> str:
    from hardware.adapters.serial_port import check_url  # pyserial, only when the option is given

    name, url = camera_spec(value)
    if not name:
        raise argparse.ArgumentTypeError("expected ID=URL: a camera id and a serial port")
    try:
        check_url(url)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from err
    return value


def camera_spec(spec: str) -> tuple[str | None, str]:
    """``ID=URL`` or ``URL`` (the id ``None``): an ``=`` before any ``://`` ends a camera id."""
    name, sep, rest = spec.partition("=")
    return (name, rest) if sep and "://" not in name else (None, spec)


def _camera_endpoint(value: str) -> str:
    name, url = camera_spec(value)
    if name is None:
        return _endpoint(value)
    if not name:
        raise argparse.ArgumentTypeError("expected ID=URL or URL")
    return f"{name}={_endpoint(url)}"


def in_words(members: Sequence[str | None]) -> str:
    """Real members by name (``automation``, camera ids, ``None`` for a camera given without one) in
    words: ``the automation server, camera X, a camera``."""
    return ", ".join(
        "the automation server" if name == AUTOMATION else f"camera {name}" if name else "a camera"
        for name in members
    )


def _real_names(values: Mapping[str, Any]) -> str:
    names: list[str | None] = [AUTOMATION] if values.get("real_automation") else []
    return in_words(names + [camera_spec(spec)[0] for spec in values.get("real_cameras", ())])


def wall_clock_problem(
    names: str, step: bool, speed: float, terms: tuple[str, str] = ("--step", "--speed")
) -> str | None:
    """Real members run on the realtime clock at speed 1: what is wrong with a clock in ``step``
    mode or at ``speed``, said in ``terms`` (the options or the scenario keys), naming the real
    members (``names``); ``None`` if nothing."""
    if step:
        return f"{terms[0]} cannot be used with a real member ({names} is real): it runs on wall time"
    if speed != 1.0:
        return f"{terms[1]} must be 1 with a real member ({names} is real): it runs on wall time"
    return None


def _real_checks(parser: argparse.ArgumentParser, values: dict, environ: Mapping[str, str]) -> None:
    """Real members run on the realtime clock at speed 1; their secrets come from the environment."""
    variable = values.pop("real_automation_api_key_env", None)
    if variable is not None:
        if not values.get("real_automation"):
            parser.error("--real-automation-api-key-env needs --real-automation")
        if not environ.get(variable):
            parser.error(f"--real-automation-api-key-env: the environment variable {variable} is not set")
        values["real_automation_api_key"] = environ[variable]
    if not (values.get("real_automation") or values.get("real_cameras")):
        if "insecure" in values:
            parser.error("--insecure names a real member; there is none")
        return
    problem = wall_clock_problem(_real_names(values), bool(values.get("step")), values.get("speed", 1.0))
    if problem is not None:
        parser.error(problem)


def parse(argv: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[str, Settings]:
    """The command and its settings; flags win over the environment, which wins over defaults."""
    environ = os.environ if environ is None else environ
    parser = _parser()
    args = vars(parser.parse_args(argv))
    command = args.pop("command")
    values: dict[str, Any] = {
        key: tuple(v) if isinstance(v, list) else v for key, v in args.items() if v is not None
    }
    _real_checks(parser, values, environ)
    _publish_checks(parser, values, environ)
    if problem := shard_options.problem(values.get("shards"), values.get("cluster")):
        parser.error(problem)
    if "host" in values and "mqtt_host" not in values:  # every server on the address asked for
        values["mqtt_host"] = values["host"]
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
