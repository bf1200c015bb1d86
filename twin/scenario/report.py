"""Run reports: a console summary, JUnit XML for CI, and a self-contained HTML page with inline SVG
plots (watched metrics, the requests with one lane per device or path coloured by status, the ones
an expectation blamed marked in red with its name, fault windows). No network assets.

Each shows the client's exit status first, then every expectation as PASS, FAIL or INCONCLUSIVE
(``optional`` when the scenario lets the run pass without it), then the run's notices (a world clock
that stood still, a client that reached none of the run's servers). In JUnit a run is one
``<testsuite>`` (its file, seed, clock and client as ``<properties>``, the tail of the client's output
in ``<system-err>``): an inconclusive expectation the run needs is an ``<error type="inconclusive">``
(counted in the suite's ``errors``), an optional one ``<skipped>``, a notice an ``<error
type="notice">`` of the test case ``run``; the client's exit status is a test case of its own,
whose ``time`` is the run's wall time."""

from __future__ import annotations

import html
import math
import re
from collections import Counter, defaultdict
from pathlib import Path
from xml.etree import ElementTree as ET

from twin.scenario.expectations import Outcome, Verdict
from twin.scenario.runner import RunResult

_W, _H, _PAD = 900, 220, 40
_LANE_H, _MAX_LANES, _LABEL_W = 18, 40, 360
CLIENT_TAIL_CHARS = 20_000
"""The tail of the client's output in a JUnit ``<system-err>``."""
_DEVICE = re.compile(r"/devices/([^/?]+)")


def _kind(v: Verdict) -> str:
    """``pass``, ``fail``, ``inconclusive``, or ``optional`` (inconclusive, and the run may do without)."""
    if v.inconclusive:
        return "optional" if v.optional else "inconclusive"
    return "pass" if v.passed else "fail"


def label(v: Verdict) -> str:
    """PASS, FAIL, INCONCLUSIVE, or INCONCLUSIVE (optional)."""
    kind = _kind(v)
    return "INCONCLUSIVE (optional)" if kind == "optional" else kind.upper()


def verdicts(result: RunResult) -> list[Verdict]:
    """The client's verdict (when a client ran), then the expectations'."""
    client = [result.client_verdict] if result.client_verdict is not None else []
    return [*client, *result.verdicts]


def headline(result: RunResult) -> str:
    """``PASSED``, or ``FAILED: ...`` / ``INCONCLUSIVE: ...`` naming what made it so."""
    outcome = result.outcome
    if outcome is Outcome.PASSED:
        return "PASSED"
    why = []
    client = result.client_verdict
    if client is not None and not client.passed:
        why.append(f"client {client.message}")
    why += [v.name for v in result.failed]
    if result.errors:
        why.append(f"{len(result.errors)} timeline error{'s' if len(result.errors) != 1 else ''}")
    if result.inconclusive:
        also = "" if outcome is Outcome.INCONCLUSIVE else "also "
        why.append(f"{also}not exercised: {', '.join(v.name for v in result.inconclusive)}")
    if result.record.client_exit is None and result.scenario.expectations:
        why.append("no client ran (--client)")
    if result.notices:
        why.append("the run's notice" + ("s" if len(result.notices) > 1 else ""))
    return f"{outcome.value.upper()}: {'; '.join(why)}"


def summary(result: RunResult) -> str:
    s = result.scenario
    lines = [
        f"scenario {s.name} ({result.source}): seed {s.seed}, {result.mode} mode, "
        f"sim {result.record.end:g} s in {result.wall_s:.2f} s wall, {result.events_published} world events, "
        f"{len(result.record.journal)} requests",
    ]
    if result.record.client_exit is None:
        lines.append("  no client ran")
    for v in verdicts(result):
        lines.append(f"  {label(v)}  {v.name}: {v.message}")
    for err in result.errors:
        lines.append(f"  ERROR {err}")
    for notice in result.notices:
        lines.append(f"  NOTICE {notice}")
    lines.append(headline(result))
    return "\n".join(lines)


def testsuite(result: RunResult) -> ET.Element:
    """The run as one JUnit ``<testsuite>``."""
    judged = verdicts(result)
    kinds = Counter(_kind(v) for v in judged)
    extra = len(result.errors) + len(result.notices)
    suite = ET.Element(
        "testsuite",
        name=result.scenario.name,
        tests=str(len(judged) + extra),
        failures=str(kinds["fail"]),
        errors=str(kinds["inconclusive"] + extra),
        skipped=str(kinds["optional"]),
        time=f"{result.wall_s:.3f}",
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (
        ("file", str(result.source)),
        ("seed", str(result.scenario.seed)),
        ("clock", f"{result.mode} x{result.speed:g}"),
        ("sim_seconds", f"{result.record.end:g}"),
        ("client", result.client_command or ""),
        ("outcome", result.outcome.value),
    ):
        ET.SubElement(props, "property", name=key, value=value)
    classname = f"scenario.{result.scenario.name}"
    times = [result.wall_s] if result.client_verdict is not None else []
    times += result.judge_s or [0.0] * len(result.verdicts)
    for v, spent in zip(judged, times, strict=False):
        case = ET.SubElement(suite, "testcase", classname=classname, name=v.name, time=f"{spent:.3f}")
        kind = _kind(v)
        if kind == "fail":
            ET.SubElement(case, "failure", message=v.message).text = v.message
        elif kind == "optional":
            ET.SubElement(case, "skipped", message=f"inconclusive (optional): {v.message}")
        elif kind == "inconclusive":
            message = f"inconclusive: {v.message} (the scenario requires this expectation)"
            ET.SubElement(case, "error", type="inconclusive", message=message).text = message
        else:
            ET.SubElement(case, "system-out").text = v.message
    for err in result.errors:
        case = ET.SubElement(suite, "testcase", classname=classname, name="timeline", time="0")
        ET.SubElement(case, "error", message=err).text = err
    for notice in result.notices:
        case = ET.SubElement(suite, "testcase", classname=classname, name="run", time="0")
        ET.SubElement(case, "error", type="notice", message=notice).text = notice
    ET.SubElement(suite, "system-out").text = summary(result)
    ET.SubElement(suite, "system-err").text = client_tail(result.client_output)
    return suite


def client_tail(output: str, limit: int = CLIENT_TAIL_CHARS) -> str:
    """The end of the client's output, whole lines, at most ``limit`` characters."""
    if len(output) <= limit:
        return output
    tail = output[-limit:]
    return "[...]\n" + tail.split("\n", 1)[-1]


def junit_of(suites: list[ET.Element]) -> str:
    """One JUnit document of several ``<testsuite>`` elements."""
    root = ET.Element("testsuites")
    for name in ("tests", "failures", "errors", "skipped"):
        root.set(name, str(sum(int(s.get(name, "0")) for s in suites)))
    root.set("time", f"{sum(float(s.get('time', '0')) for s in suites):.3f}")
    root.extend(suites)
    return ET.tostring(root, encoding="unicode")


def junit(result: RunResult) -> str:
    return junit_of([testsuite(result)])


def _x(t: float, end: float, left: float = _PAD) -> float:
    return left + (_W - left - _PAD) * (t / end if end > 0 else 0.0)


def _windows_svg(result: RunResult, end: float, height: float = _H, left: float = _PAD) -> str:
    parts = []
    for start, stop, name in result.fault_windows:
        x0, x1 = _x(start, end, left), _x(stop if stop is not None else end, end, left)
        parts.append(
            f'<rect x="{x0:.1f}" y="{_PAD / 2}" width="{max(1.0, x1 - x0):.1f}" height="{height - _PAD:.0f}" '
            f'fill="#f5a623" fill-opacity="0.18"><title>{html.escape(name)} {start:g}-'
            f"{'end' if stop is None else f'{stop:g}'} s</title></rect>"
        )
    return "".join(parts)


def _axis(end: float) -> str:
    y = _H - _PAD / 2
    return (
        f'<line x1="{_PAD}" y1="{y}" x2="{_W - _PAD}" y2="{y}" stroke="#888"/>'
        f'<text x="{_PAD}" y="{_H - 4}" font-size="11">0 s</text>'
        f'<text x="{_W - _PAD}" y="{_H - 4}" font-size="11" text-anchor="end">{end:g} s</text>'
    )


def _colour(status: int) -> str:
    if status == 0:
        return "#000"
    if status >= 500:
        return "#d0021b"
    if status == 429:
        return "#f5a623"
    if status >= 400:
        return "#9013fe"
    return "#2a9d3f"


def lane_of(e) -> str:
    """A request's lane: its server and the device it is about, else its path."""
    device = _DEVICE.search(e.path)
    return f"{e.server} device {device.group(1)}" if device else f"{e.server} {e.path}"


def lanes(result: RunResult) -> tuple[dict[str, int], bool]:
    """Lane name -> row, in order of first request, and whether paths were folded: past
    :data:`_MAX_LANES` lanes a path that is no device's folds into its route template."""
    journal = result.record.journal
    names = list(dict.fromkeys(lane_of(e) for e in journal))
    fold = len(names) > _MAX_LANES
    if fold:
        names = list(dict.fromkeys(_lane(e, fold=True) for e in journal))
    return {n: i for i, n in enumerate(names[:_MAX_LANES])}, fold


def _lane(e, fold: bool) -> str:
    name = lane_of(e)
    return f"{e.server} {e.route}" if fold and " device " not in name else name


def blamed(result: RunResult) -> dict[int, list[str]]:
    """Journal seq -> the names of the expectations that blamed that request."""
    out: dict[int, list[str]] = defaultdict(list)
    for v in result.verdicts:
        for seq in v.blame:
            out[seq].append(v.name)
    return out


def requests_svg(result: RunResult) -> str:
    """One lane per device or path; every request a dot coloured by status, the ones an expectation
    blamed a red cross on a red lane that names the expectation."""
    end = max(result.record.end, 1e-9)
    rows, fold = lanes(result)
    blame = blamed(result)
    lane_blame: dict[int, Counter[str]] = defaultdict(Counter)
    height = _PAD + _LANE_H * max(1, len(rows))
    marks = []
    for e in result.record.journal:
        row = rows.get(_lane(e, fold))
        if row is None:
            continue
        x, y = _x(e.at, end, _LABEL_W), _PAD / 2 + _LANE_H * (row + 0.5)
        title = html.escape(e.trace_line())
        if e.seq in blame:
            lane_blame[row].update(blame[e.seq])
            title += html.escape(" (blamed by " + ", ".join(blame[e.seq]) + ")")
            marks.append(
                f'<path d="M{x - 4:.1f},{y - 4:.1f}L{x + 4:.1f},{y + 4:.1f}M{x - 4:.1f},{y + 4:.1f}'
                f'L{x + 4:.1f},{y - 4:.1f}" stroke="#d0021b" stroke-width="2.5"><title>{title}</title></path>'
            )
        else:
            marks.append(
                f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{_colour(e.status)}">'
                f"<title>{title}</title></circle>"
            )
    rows_svg = []
    for name, i in rows.items():
        top = _PAD / 2 + _LANE_H * i
        fill = "#fde2e2" if i in lane_blame else ("#f6f6f6" if i % 2 else "#fff")
        rows_svg.append(f'<rect x="0" y="{top:.1f}" width="{_W}" height="{_LANE_H}" fill="{fill}"/>')
        label = html.escape(name if len(name) <= 44 else "…" + name[-43:])
        colour = "#333"
        if i in lane_blame:
            names = ", ".join(f"{n} ({c})" for n, c in lane_blame[i].items())
            label, colour = f"✗ {label} — {html.escape(names)}", "#d0021b"
        rows_svg.append(
            f'<text x="4" y="{top + _LANE_H * 0.7:.1f}" font-size="10" fill="{colour}">{label}</text>'
        )
    axis_y = height - _PAD / 2
    axis = (
        f'<line x1="{_LABEL_W}" y1="{axis_y}" x2="{_W - _PAD}" y2="{axis_y}" stroke="#888"/>'
        f'<text x="{_LABEL_W}" y="{height - 4}" font-size="11">0 s</text>'
        f'<text x="{_W - _PAD}" y="{height - 4}" font-size="11" text-anchor="end">{end:g} s</text>'
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{height:.0f}">{"".join(rows_svg)}'
        f"{_windows_svg(result, end, height, _LABEL_W)}{axis}{''.join(marks)}</svg>"
    )


def metric_svg(result: RunResult, name: str) -> str:
    times, values = result.watched[name]
    finite = [v for v in values if not math.isnan(v)]
    end = max(result.record.end, 1e-9)
    lo, hi = (min(finite), max(finite)) if finite else (0.0, 1.0)
    span = hi - lo or 1.0
    points = " ".join(
        f"{_x(t, end):.1f},{_PAD / 2 + (_H - _PAD) * (1 - (v - lo) / span):.1f}"
        for t, v in zip(times, values, strict=True)
        if not math.isnan(v)
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}">{_windows_svg(result, end)}'
        f'{_axis(end)}<polyline fill="none" stroke="#1f6feb" stroke-width="1.5" points="{points}"/>'
        f'<text x="{_PAD}" y="14" font-size="11">{lo:g} … {hi:g}</text></svg>'
    )


def html_report(result: RunResult) -> str:
    rows = "".join(
        f"<tr class='{_kind(v)}'><td>{label(v)}</td>"
        f"<td>{html.escape(v.name)}</td><td>{html.escape(v.message)}</td></tr>"
        for v in verdicts(result)
    )
    errors = "".join(f"<li>{html.escape(e)}</li>" for e in result.errors)
    said = "".join(f"<p class='notice'>{html.escape(n)}</p>" for n in result.notices)
    metrics = "".join(
        f"<h3>{html.escape(name)}</h3>{metric_svg(result, name)}" for name in sorted(result.watched)
    )
    s = result.scenario
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><title>{html.escape(s.name)}: scenario report</title>
<style>body{{font-family:sans-serif;margin:2em}}td{{padding:2px 8px}}
svg{{border:1px solid #ddd;display:block}}.pass td:first-child,h1.passed{{color:#2a9d3f}}
.fail td:first-child,h1.failed{{color:#d0021b;font-weight:bold}}.inconclusive{{background:#fff3e0}}
.inconclusive td:first-child,h1.inconclusive{{color:#b35900;font-weight:bold}}
.optional td{{color:#777}}.notice{{background:#fff3e0;border-left:4px solid #b35900;padding:6px 10px;
font-weight:bold}}</style>
</head><body>
<h1 class="{result.outcome.value}">{html.escape(s.name)} — {html.escape(headline(result))}</h1>
{said}<p>{html.escape(s.description)}</p>
<p>{html.escape(str(result.source))}: seed {s.seed}, {result.mode} mode x{result.speed:g},
{result.record.end:g} s of world time in {result.wall_s:.2f} s,
{result.events_published} world events, {len(result.record.journal)} requests,
client: {html.escape(result.client_command or "none")}</p>
<h2>Verdicts</h2><table>{rows}</table>
<p>INCONCLUSIVE: nothing in the run exercised the expectation, so it was not judged; it fails the run
unless it is optional.</p>
{f"<h2>Errors</h2><ul>{errors}</ul>" if errors else ""}
<h2>Requests, one lane per device or path</h2>
<p>Dots: green 2xx, purple 4xx, orange 429, red 5xx, black closed; shaded: faults. A red cross on a
red lane is a request an expectation blamed, named on the lane.</p>
{requests_svg(result)}
{f"<h2>Watched metrics</h2>{metrics}" if metrics else ""}
</body></html>
"""


def write(result: RunResult, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    files = {
        "summary.txt": summary(result) + "\n",
        "junit.xml": junit(result),
        "report.html": html_report(result),
        "trace.txt": "\n".join(result.trace) + "\n",
        "client.log": result.client_output,
    }
    out = []
    for name, text in files.items():
        path = directory / name
        path.write_text(text)
        out.append(path)
    return out
