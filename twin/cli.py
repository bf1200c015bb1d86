"""``twin`` command line: ``twin run`` serves the world; ``twin scenario list|validate|run`` works with
scenario files and runs them against a client under test."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from twin import http_limits
from twin import settings as settings_mod
from twin.camera.video.decoder import SourceError
from twin.cluster import options as shard_options
from twin.cluster.plan import ClusterUnreachable, ShardLost
from twin.scenario.model import ScenarioError
from twin.scenario.notices import CLIENT_VARIABLES
from twin.scenario.suite import FAILED, INCONCLUSIVE, INVALID, NOT_RUN, PASSED
from twin.state_dir import StateError

if TYPE_CHECKING:
    from twin.scenario.runner import RunResult

SCENARIO_DIR = settings_mod.DEFAULT_SCENARIO.parent

COMMANDS = {
    "run": "start the world and every server on it (options: twin run --help)",
    "scenario list": "list the scenario library, each file with what it proves",
    "scenario validate": "check scenario files: every problem, one line each (file:line: message)",
    "scenario run": "run scenario files (or directories of them) against a client under test and judge it",
    "record": "record a real camera or automation server into a fixture a scenario replays (--help)",
}

EXIT_STATUS = f"""exit status of twin scenario run:
  {PASSED}  passed: every expectation was exercised and held (optional ones may be inconclusive),
     and the client ended as the scenario expects
  {FAILED}  failed: an expectation failed, the client's exit status was not the expected one, or a
     timeline step failed
  {INVALID}  the scenario file is invalid or unreadable, or the command line is wrong
  {INCONCLUSIVE}  inconclusive: nothing failed, but an expectation the scenario requires was not
     exercised (a run without --client exercises none)
  {NOT_RUN}  the run could not be carried out (the client could not be started, a port is taken)
A suite (several files, or a directory) exits with its worst outcome, in the order
  error ({INVALID}, then {NOT_RUN}) > failed ({FAILED}) > inconclusive ({INCONCLUSIVE}) > passed ({PASSED})"""
CLIENT_ENV = "environment of the client under test (its own environment, plus):\n" + "\n".join(
    f"  {name:<19} {text}" for name, text in CLIENT_VARIABLES.items()
)
PACING = """clock: with --client a run keeps the file's clock (every library file is realtime at a speed of
its own, so a client that sleeps on its own clock meets the timeline); --step is for a client that
paces itself through POST /clock/sleep on TWIN_CONTROL_URL; without --client the run is in step
mode, as fast as the CPU allows (nothing is judged then)."""

CLIENT_TAIL_LINES = 15
"""Lines of a failed client's output shown on stderr."""


def _parser() -> argparse.ArgumentParser:
    """The top-level parser, for ``twin --help`` and unknown commands; each command parses its own
    arguments (``twin run`` in :mod:`twin.settings`)."""
    listing = "\n".join(f"  {name:<19} {text}" for name, text in COMMANDS.items())
    p = argparse.ArgumentParser(
        prog="twin",
        usage="twin [-h] command ...",
        description="Hardware-in-the-loop simulator and digital twin.",
        epilog=f"commands:\n{listing}\n\n{EXIT_STATUS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="command", help=argparse.SUPPRESS)
    sub.add_parser("run", add_help=False)
    sub.add_parser("scenario", add_help=False)
    sub.add_parser("record", add_help=False)
    return p


def _listen(value: str) -> tuple[str, int]:
    host, _, port = value.rpartition(":")
    if not host or not port.isdigit() or int(port) > 65535:
        raise argparse.ArgumentTypeError("expected HOST:PORT")
    return host.strip("[]"), int(port)


def _jobs(value: str) -> int:
    if not value.isdigit() or not 1 <= int(value) <= 64:
        raise argparse.ArgumentTypeError("expected a whole number from 1 to 64")
    return int(value)


def _positive(value: str) -> float:
    number = float(value)
    if not number > 0:
        raise argparse.ArgumentTypeError("must be positive")
    return number


def _record_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="twin record",
        description="Serve a recording passthrough in front of a real camera's gateway or a real automation "
        "server: clients use the address it prints; every answer, event stream and frame is written with "
        "its offset to a fixture (NDJSON) that a scenario replays on the world clock (replay: FILE). "
        "Credentials are never written.",
    )
    member = p.add_mutually_exclusive_group(required=True)
    url = settings_mod._endpoint
    member.add_argument("--camera", metavar="URL", type=url, help="a camera's gateway")
    member.add_argument("--automation", metavar="URL", type=url, help="an automation server")
    p.add_argument("--duration", metavar="SECONDS", type=_positive, required=True, help="how long to record")
    p.add_argument("--out", metavar="FIXTURE", type=Path, required=True, help="the fixture file to write")
    p.add_argument(
        "--listen",
        metavar="HOST:PORT",
        type=_listen,
        default=("127.0.0.1", 9385),
        help="where clients reach the recorder (default 127.0.0.1:9385; port 0: a free one)",
    )
    p.add_argument("--insecure", action="store_true", help="do not verify the endpoint's TLS certificate")
    p.add_argument(
        "--api-key-env",
        metavar="VAR",
        help="environment variable with the credential of the recorder's own reads (X-API-Key)",
    )
    p.add_argument(
        "--poll",
        metavar="SECONDS",
        type=_positive,
        help="also read the status and telemetry routes every SECONDS (default: never)",
    )
    return p


def record_main(argv: list[str]) -> int:
    import os
    import signal

    from api.members.record import RecordOptions, record

    parser = _record_parser()
    args = parser.parse_args(argv)
    key = os.environ.get(args.api_key_env) if args.api_key_env else None
    if args.api_key_env and not key:
        parser.error(f"--api-key-env: the environment variable {args.api_key_env} is not set")
    host, port = args.listen
    options = RecordOptions(
        "gateway" if args.camera else "automation", args.camera or args.automation, args.out, args.duration,
        host, port, args.insecure, key, args.poll or 0.0,
    )  # fmt: skip

    async def recording():
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
        limits = http_limits.GO if args.camera else http_limits.HYPER  # the recorded member's own
        return await record(
            options,
            lambda url: print(f"twin: recording at {url}", flush=True),
            stop,
            http=http_limits.protocol(limits),
        )

    try:
        summary = asyncio.run(recording())
    except OSError as err:
        print(f"twin: {err}", file=sys.stderr)
        return NOT_RUN
    s = summary
    print(f"twin: wrote {args.out}: {s.exchanges} answers, {s.streams} streams, {s.frames} frames", end="")
    print(f" ({s.skipped} relayed but not recorded)" if s.skipped else "")
    return PASSED


def _scenario_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="twin scenario", description="Run scenario files against a client.")
    sub = p.add_subparsers(dest="action", required=True)
    run = sub.add_parser(
        "run",
        help=COMMANDS["scenario run"],
        description=COMMANDS["scenario run"],
        epilog=f"{PACING}\n\n{CLIENT_ENV}\n\n{EXIT_STATUS}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    run.add_argument("files", type=Path, nargs="+", metavar="FILE|DIR", help="scenario files or directories")
    pace = run.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=_positive, help="realtime at this speed factor, whatever the file says")
    pace.add_argument(
        "--step",
        action="store_true",
        default=None,
        help="step mode: time moves only when the client calls POST /clock/sleep (or a request waits on it)",
    )
    run.add_argument("--client", help="command line of the client under test (run as a subprocess)")
    run.add_argument(
        "--report",
        type=Path,
        help="directory for summary, JUnit XML, HTML report, trace and client log (a suite: junit.xml and "
        "summary.txt there, the rest under DIR/<scenario>/)",
    )
    run.add_argument(
        "--junit", type=Path, metavar="FILE", help="write the JUnit XML (one file for a suite) here"
    )
    run.add_argument("--jobs", type=_jobs, default=1, metavar="N", help="a suite: run N scenarios at once")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--until", type=float, help="stop at this sim time if the file says later")
    shard_options.add_arguments(run)
    validate = sub.add_parser("validate", help=COMMANDS["scenario validate"])
    validate.add_argument("files", type=Path, nargs="+")
    lst = sub.add_parser("list", help=COMMANDS["scenario list"])
    lst.add_argument("--dir", type=Path, default=SCENARIO_DIR)
    return p


def _first_comment(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


def _validate(files: list[Path]) -> int:
    from twin.scenario.model import load_scenario

    status = PASSED
    for path in files:
        try:
            load_scenario(path)
            print(f"{path}: ok")
        except ScenarioError as err:
            _problems(err)
            status = INVALID
    return status


def scenario_main(argv: list[str]) -> int:
    args = _scenario_parser().parse_args(argv)
    if args.action == "list":
        for path in sorted(args.dir.glob("*.yaml")):
            print(f"{path.name:<28} {_first_comment(path)}")
        return PASSED
    if args.action == "validate":
        return _validate(args.files)
    if problem := shard_options.problem(args.shards, args.cluster):
        print(f"twin scenario run: {problem}", file=sys.stderr)
        return INVALID
    if len(args.files) > 1 or args.files[0].is_dir():
        return _suite(args)
    return _single(args, args.files[0])


def _single(args: argparse.Namespace, path: Path) -> int:
    from twin.scenario import report
    from twin.scenario.runner import RunOptions, progress_printer, run

    show = None if args.quiet or not sys.stderr.isatty() else progress_printer()
    opts = RunOptions(
        speed=args.speed,
        step=args.step,
        client=args.client,
        progress=show,
        stop_at=args.until,
    )
    try:
        result = asyncio.run(_sharded(path, opts, args) if args.shards else run(path, opts))
    except ScenarioError as err:
        _problems(err)
        return INVALID
    except ValueError as err:  # a fleet that cannot be split so
        print(f"twin: {err}", file=sys.stderr)
        return INVALID
    except (OSError, ShardLost) as err:  # a port taken, a cluster nobody answers, a shard that died
        print(f"twin: {err}", file=sys.stderr)
        return NOT_RUN
    if show is not None:
        sys.stderr.write("\n")
    print(report.summary(result))
    if args.report:
        report.write(result, args.report)
    if args.junit:
        _write(args.junit, report.junit(result))
    _explain(result)
    return {"passed": PASSED, "failed": FAILED, "inconclusive": INCONCLUSIVE}[result.outcome.value]


async def _sharded(path: Path, opts, args: argparse.Namespace) -> RunResult:
    from twin.cluster.run import run  # imports Ray: only a sharded run does

    return await run(path, opts, args.shards, args.cluster)


def _suite(args: argparse.Namespace) -> int:
    """Several files: each in a process of its own (``--jobs`` at once), one JUnit document."""
    import tempfile
    import time

    from twin.scenario.report import junit_of
    from twin.scenario.suite import files_of, run_suite, table, worst

    files = files_of(args.files)
    if not files:
        print(f"twin: no scenario file (*.yaml) in {', '.join(map(str, args.files))}", file=sys.stderr)
        return INVALID
    passed_on = [
        f"--{k}={v}"
        for k, v in (
            ("client", args.client), ("speed", args.speed), ("until", args.until),
            ("shards", args.shards), ("cluster", args.cluster),
        )
    ]  # fmt: skip
    child_args = [a for a in passed_on if not a.endswith("=None")] + (["--step"] if args.step else [])

    def done(member) -> None:
        print(member.summary or f"scenario {member.path}: {member.stderr.strip()[:500]}", flush=True)

    wall0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="twin-suite-") as tmp:
        root = args.report or Path(tmp)
        members = asyncio.run(run_suite(files, child_args, args.jobs, root, done))
    status = worst([m.status for m in members])
    closing = table(members, status, time.monotonic() - wall0)
    print(closing)
    document = junit_of([m.suite for m in members])
    if args.report:
        _write(args.report / "junit.xml", document)
        _write(args.report / "summary.txt", "\n\n".join(m.summary for m in members) + "\n\n" + closing + "\n")
    if args.junit:
        _write(args.junit, document)
    return status


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _explain(result: RunResult) -> None:
    """On stderr: what failed the run, and the tail of a client's output when the client failed."""
    client = result.client_verdict
    if client is not None and not client.passed:
        print(f"twin: client {result.client_command!r} {client.message}", file=sys.stderr)
        tail = result.client_output.rstrip().splitlines()[-CLIENT_TAIL_LINES:]
        if tail:
            print("twin: the client's last output:", file=sys.stderr)
            print("\n".join(f"  | {line}" for line in tail), file=sys.stderr)
    for v in result.failed:
        print(f"twin: expectation failed: {v.name}: {v.message}", file=sys.stderr)
    for v in result.inconclusive:
        print(f"twin: expectation inconclusive: {v.name}: {v.message}", file=sys.stderr)
    for err in result.errors:
        print(f"twin: {err}", file=sys.stderr)


def _problems(err: ScenarioError, prefix: str = "") -> None:
    for problem in err.problems:
        print(f"{prefix}{problem}", file=sys.stderr)


def _logging(level: str) -> None:
    logging.basicConfig(level=level, format="%(message)s")
    logging.getLogger("amqtt").setLevel(logging.CRITICAL)
    logging.getLogger("transitions").setLevel(logging.ERROR)
    # httpx names every request's URL at INFO, query tokens and bot tokens in paths included
    logging.getLogger("httpx").setLevel(logging.WARNING)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["scenario"]:
        _logging("WARNING")
        return scenario_main(argv[1:])
    if argv[:1] == ["record"]:
        _logging("WARNING")
        return record_main(argv[1:])
    if argv[:1] != ["run"]:
        _parser().parse_args(argv)  # help, or an error naming the commands; exits
    command, settings = settings_mod.parse(argv)
    _logging(settings.log_level.upper())
    if command == "run":
        from hardware.adapters.broker_server import BrokerError, BrokerMissing, start_broker
        from twin.scenario.live import LiveScenarios
        from twin.scenario.model import load_scenario
        from twin.scenario.runner import attach
        from twin.serve import Running, serve_forever

        def on_start(running: Running) -> None:  # the scenario's timeline, the MQTT broker switch
            files = settings.scenario_files
            attach(running, load_scenario(settings.scenario, allowed=files) if settings.scenario else None)
            running.twin.control.scenarios = LiveScenarios(running.twin.control, allowed=files)  # console
            running.fleet_broker = broker

        broker = None
        try:
            if settings.fleet_broker is not None:  # started here, in the thread it must not outlive
                broker = start_broker(settings.fleet_broker)
                out = settings.publish_fleet or settings_mod.FleetPublishing("")
                out = dataclasses.replace(out, url=broker.mqtt_url)
                settings = dataclasses.replace(settings, publish_fleet=out)
            if settings.shards is not None:
                from twin.cluster.serve import serve_sharded  # imports Ray: only a sharded twin does

                serve_sharded(settings)
            else:
                serve_forever(settings, on_start)
        except BrokerMissing as err:  # --fleet-broker names a broker that is not installed
            print(f"twin: --fleet-broker: {err}", file=sys.stderr)
            return 2
        except BrokerError as err:
            print(f"twin: --fleet-broker: {err}", file=sys.stderr)
            return NOT_RUN
        except ScenarioError as err:
            _problems(err, "twin: ")
            return 2
        except (settings_mod.RealMemberError, SourceError, StateError, ValueError) as err:  # a fleet too
            print(f"twin: {err}", file=sys.stderr)  # small for its shards, a video source, --state-dir
            return 2
        except (ClusterUnreachable, ShardLost) as err:  # a cluster nobody answers, a shard that died
            print(f"twin: {err}", file=sys.stderr)
            return 4
        except OSError as err:
            print(f"twin: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            pass
        finally:
            if broker is not None:
                broker.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
