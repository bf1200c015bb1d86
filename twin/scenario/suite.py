"""Suites: several scenario files, or directories of them, in one ``twin scenario run``.

Each file runs as a run of its own in a child process (``python -m twin.cli scenario run FILE``):
its own world, its own servers on free loopback ports, its own client process, so ``--jobs N``
runs N at once without their clocks, ports or clients meeting. Each child writes its reports under
``REPORT/<name>/``; the suite gathers their JUnit ``<testsuite>`` elements into one JUnit document
(a file that could not be run at all becomes a ``<testsuite>`` with one ``<error>``) and exits
with the worst outcome, in the order error > failed > inconclusive > passed (:data:`RANK`).

A file without expectations (``scenarios/default.yaml``, the world of ``twin run``) judges nothing:
a suite lists it as skipped, a ``<testsuite>`` whose one test case is ``<skipped>``, and does not
run it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from xml.etree import ElementTree as ET

PASSED, FAILED, INVALID, INCONCLUSIVE, NOT_RUN = 0, 1, 2, 3, 4
RANK = {PASSED: 0, INCONCLUSIVE: 1, FAILED: 2, NOT_RUN: 3, INVALID: 4}
"""Worse is higher: an error (an invalid file, a run that could not be carried out) outranks a
failure, which outranks an inconclusive run, which outranks a pass."""
WORDS = {
    PASSED: "passed",
    FAILED: "failed",
    INCONCLUSIVE: "inconclusive",
    INVALID: "invalid",
    NOT_RUN: "not run",
}
STDERR_CHARS = 4000


def worst(statuses: list[int]) -> int:
    """The suite's exit status: the worst of its members' (an empty suite is invalid)."""
    return max(statuses, key=lambda s: RANK.get(s, RANK[NOT_RUN])) if statuses else INVALID


def files_of(paths: list[Path]) -> list[Path]:
    """The scenario files named: a directory gives its ``*.yaml`` files in name order; anything
    else is kept as given (a missing file is then reported as invalid, like any other)."""
    out: list[Path] = []
    for path in paths:
        out += sorted(path.glob("*.yaml")) if path.is_dir() else [path]
    return out


@dataclass
class Member:
    """One file of the suite, once run."""

    path: Path
    status: int
    suite: ET.Element
    summary: str
    stderr: str
    wall_s: float
    skipped: bool = False

    @property
    def word(self) -> str:
        return "skipped" if self.skipped else WORDS[self.status]


def _report_dirs(files: list[Path], root: Path) -> list[Path]:
    seen: dict[str, int] = {}
    out = []
    for path in files:
        n = seen[path.stem] = seen.get(path.stem, 0) + 1
        out.append(root / (path.stem if n == 1 else f"{path.stem}-{n}"))
    return out


def broken_suite(path: Path, status: int, stderr: str, wall_s: float) -> ET.Element:
    """A ``<testsuite>`` for a file that gave no report of its own (invalid, or not run)."""
    what = "invalid" if status == INVALID else "not-run"
    lines = [line for line in stderr.strip().splitlines() if line.strip()]
    message = lines[0] if lines else f"the run exited with status {status}"
    suite = ET.Element(
        "testsuite", name=path.stem, tests="1", failures="0", errors="1", skipped="0", time=f"{wall_s:.3f}"
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="file", value=str(path))
    ET.SubElement(props, "property", name="outcome", value=what)
    case = ET.SubElement(suite, "testcase", classname=f"scenario.{path.stem}", name="scenario file", time="0")
    ET.SubElement(case, "error", type=what, message=message).text = stderr[-STDERR_CHARS:]
    return suite


NOTHING_TO_JUDGE = "no expectations: nothing to judge (run the file alone to see its world)"


def _judges_nothing(path: Path) -> bool:
    from twin.scenario.model import ScenarioError, load_scenario

    try:
        return not load_scenario(path).expectations
    except (ScenarioError, OSError):
        return False  # its own run reports why


def skipped_suite(path: Path) -> ET.Element:
    suite = ET.Element(
        "testsuite", name=path.stem, tests="1", failures="0", errors="0", skipped="1", time="0.000"
    )
    props = ET.SubElement(suite, "properties")
    ET.SubElement(props, "property", name="file", value=str(path))
    case = ET.SubElement(suite, "testcase", classname=f"scenario.{path.stem}", name="scenario file", time="0")
    ET.SubElement(case, "skipped", message=NOTHING_TO_JUDGE)
    return suite


async def _one(path: Path, out_dir: Path, args: list[str], gate: asyncio.Semaphore) -> Member:
    if _judges_nothing(path):
        return Member(
            path, PASSED, skipped_suite(path), f"scenario {path}: skipped: {NOTHING_TO_JUDGE}", "", 0.0, True
        )
    async with gate:
        wall0 = time.monotonic()
        cmd = [
            sys.executable,
            "-m",
            "twin.cli",
            "scenario",
            "run",
            str(path),
            "--quiet",
            "--report",
            str(out_dir),
        ]
        proc = await asyncio.create_subprocess_exec(
            *cmd, *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=os.environ.copy()
        )
        try:
            out, err = await proc.communicate()
        finally:
            if proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    proc.kill()
                await proc.wait()
        wall = time.monotonic() - wall0
        status = proc.returncode if proc.returncode in RANK else NOT_RUN
        stdout, stderr = out.decode(errors="replace"), err.decode(errors="replace")
        junit = out_dir / "junit.xml"
        suite = None
        if junit.exists() and status in (PASSED, FAILED, INCONCLUSIVE):
            with contextlib.suppress(ET.ParseError):
                suite = ET.parse(junit).getroot().find("testsuite")
        if suite is None:
            suite = broken_suite(path, status, stderr, wall)
        return Member(path, status, suite, stdout.strip(), stderr, wall)


async def run_suite(
    files: list[Path], args: list[str], jobs: int, report: Path, done: Callable[[Member], None]
) -> list[Member]:
    """Run every file (at most ``jobs`` at once), each with the command-line options ``args``,
    its reports under ``report``; ``done`` is told of each as it ends. Returns them in file order."""
    gate = asyncio.Semaphore(max(1, jobs))

    async def one(path: Path, out_dir: Path) -> Member:
        member = await _one(path, out_dir, args, gate)
        done(member)
        return member

    return list(
        await asyncio.gather(*(one(p, d) for p, d in zip(files, _report_dirs(files, report), strict=True)))
    )


def table(members: list[Member], status: int, wall_s: float) -> str:
    """The suite's closing lines: one per file, then the count of each outcome and the exit status."""
    lines = [f"  {m.word.upper():<13} {m.path} ({m.wall_s:.1f} s)" for m in members]
    counts = {word: sum(1 for m in members if m.word == word) for word in [*WORDS.values(), "skipped"]}
    said = ", ".join(f"{n} {word}" for word, n in counts.items() if n)
    lines.append(f"suite: {len(members)} scenarios in {wall_s:.1f} s: {said}; exit status {status}")
    return "\n".join(lines)
