"""``twin`` command line: ``twin run`` serves the world; ``twin scenario run|validate|list`` runs
scenario files against a client under test."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from twin import settings as settings_mod
from twin.scenario.model import ScenarioError

SCENARIO_DIR = settings_mod.DEFAULT_SCENARIO.parent


def _scenario_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="twin scenario", description="Run scenario files against a client.")
    sub = p.add_subparsers(dest="action", required=True)
    run = sub.add_parser("run", help="run a scenario and judge the client under test")
    run.add_argument("file", type=Path)
    pace = run.add_mutually_exclusive_group()
    pace.add_argument("--speed", type=float, help="realtime at this speed factor")
    pace.add_argument("--step", action="store_true", default=None, help="step mode: as fast as possible")
    run.add_argument("--client", help="command line of the client under test (run as a subprocess)")
    run.add_argument("--report", type=Path, help="directory for summary, JUnit XML, HTML report and trace")
    run.add_argument("--quiet", action="store_true", help="no progress bar")
    run.add_argument("--until", type=float, help="stop at this sim time if the file says later")
    validate = sub.add_parser("validate", help="check scenario files; one line per problem")
    validate.add_argument("files", type=Path, nargs="+")
    lst = sub.add_parser("list", help="the scenario library")
    lst.add_argument("--dir", type=Path, default=SCENARIO_DIR)
    return p


def _first_comment(path: Path) -> str:
    for line in path.read_text().splitlines():
        if line.startswith("#"):
            return line.lstrip("# ").strip()
        if line.strip():
            break
    return ""


def scenario_main(argv: list[str]) -> int:
    args = _scenario_parser().parse_args(argv)
    if args.action == "list":
        for path in sorted(args.dir.glob("*.yaml")):
            print(f"{path.name:<28} {_first_comment(path)}")
        return 0
    if args.action == "validate":
        from twin.scenario.model import load_scenario

        status = 0
        for path in args.files:
            try:
                load_scenario(path)
                print(f"{path}: ok")
            except ScenarioError as err:
                print(str(err), file=sys.stderr)
                status = 2
        return status
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
        result = asyncio.run(run(args.file, opts))
    except ScenarioError as err:
        print(str(err), file=sys.stderr)
        return 2
    except OSError as err:
        print(f"twin: {err}", file=sys.stderr)
        return 1
    if show is not None:
        sys.stderr.write("\n")
    print(report.summary(result))
    if args.report:
        report.write(result, args.report)
    for v in result.failed:
        print(f"twin: expectation failed: {v.name}: {v.message}", file=sys.stderr)
    for err in result.errors:
        print(f"twin: {err}", file=sys.stderr)
    return 0 if result.passed else 1


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["scenario"]:
        logging.basicConfig(level="WARNING", format="%(message)s")
        logging.getLogger("amqtt").setLevel(logging.CRITICAL)
        logging.getLogger("transitions").setLevel(logging.ERROR)
        return scenario_main(argv[1:])
    command, settings = settings_mod.parse(argv)
    logging.basicConfig(level=settings.log_level.upper(), format="%(message)s")
    logging.getLogger("amqtt").setLevel(logging.CRITICAL)
    logging.getLogger("transitions").setLevel(logging.ERROR)
    if command == "run":
        from twin.scenario.model import load_scenario
        from twin.scenario.runner import attach
        from twin.serve import Running, serve

        def on_start(running: Running) -> None:  # the scenario's timeline, the MQTT broker switch
            attach(running, load_scenario(settings.scenario) if settings.scenario else None)

        try:
            asyncio.run(serve(settings, on_start))
        except ScenarioError as err:
            print(f"twin: {err}", file=sys.stderr)
            return 2
        except OSError as err:
            print(f"twin: {err}", file=sys.stderr)
            return 1
        except KeyboardInterrupt:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
