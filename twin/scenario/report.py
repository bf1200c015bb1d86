"""Run reports: a console summary, JUnit XML for CI, and a self-contained HTML page with inline SVG
plots (watched metrics, the request timeline coloured by status, fault windows). No network assets.

Each shows the client's exit status first, then every expectation as PASS, FAIL or INCONCLUSIVE
(``optional`` when the scenario lets the run pass without it). In JUnit an inconclusive expectation
the run needs is an ``<error type="inconclusive">`` (counted in the suite's ``errors``), an optional
one ``<skipped>``; the client's exit status is a test case of its own."""

from __future__ import annotations

import html
import math
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree as ET

from twin.scenario.expectations import Outcome, Verdict
from twin.scenario.runner import RunResult

_W, _H, _PAD = 900, 220, 40


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
    lines.append(headline(result))
    return "\n".join(lines)


def junit(result: RunResult) -> str:
    root = ET.Element("testsuites")
    judged = verdicts(result)
    kinds = Counter(_kind(v) for v in judged)
    suite = ET.SubElement(
        root,
        "testsuite",
        name=result.scenario.name,
        tests=str(len(judged) + len(result.errors)),
        failures=str(kinds["fail"]),
        errors=str(kinds["inconclusive"] + len(result.errors)),
        skipped=str(kinds["optional"]),
        time=f"{result.wall_s:.3f}",
    )
    classname = f"scenario.{result.scenario.name}"
    for v in judged:
        case = ET.SubElement(suite, "testcase", classname=classname, name=v.name)
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
        case = ET.SubElement(suite, "testcase", classname=classname, name="timeline")
        ET.SubElement(case, "error", message=err).text = err
    return ET.tostring(root, encoding="unicode")


def _x(t: float, end: float) -> float:
    return _PAD + (_W - 2 * _PAD) * (t / end if end > 0 else 0.0)


def _windows_svg(result: RunResult, end: float) -> str:
    parts = []
    for start, stop, name in result.fault_windows:
        x0, x1 = _x(start, end), _x(stop if stop is not None else end, end)
        parts.append(
            f'<rect x="{x0:.1f}" y="{_PAD / 2}" width="{max(1.0, x1 - x0):.1f}" height="{_H - _PAD:.0f}" '
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


def requests_svg(result: RunResult) -> str:
    end = max(result.record.end, 1e-9)
    routes = sorted({e.route for e in result.record.journal})
    rows = {r: i for i, r in enumerate(routes)}
    height = max(1, len(routes))
    dots = []
    for e in result.record.journal:
        y = _PAD / 2 + (_H - _PAD) * (rows[e.route] + 0.5) / height
        dots.append(
            f'<circle cx="{_x(e.at, end):.1f}" cy="{y:.1f}" r="2.5" fill="{_colour(e.status)}">'
            f"<title>{html.escape(e.trace_line())}</title></circle>"
        )
    labels = "".join(
        f'<text x="{_PAD + 2}" y="{_PAD / 2 + (_H - _PAD) * (i + 0.5) / height - 4:.1f}" font-size="9" '
        f'fill="#555">{html.escape(r)}</text>'
        for r, i in rows.items()
    )
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}">'
        f"{_windows_svg(result, end)}{_axis(end)}{labels}{''.join(dots)}</svg>"
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
.optional td{{color:#777}}</style>
</head><body>
<h1 class="{result.outcome.value}">{html.escape(s.name)} — {html.escape(headline(result))}</h1>
<p>{html.escape(s.description)}</p>
<p>seed {s.seed}, {result.mode} mode, {result.record.end:g} s of world time in {result.wall_s:.2f} s,
{result.events_published} world events, {len(result.record.journal)} requests,
client: {html.escape(result.client_command or "none")}</p>
<h2>Verdicts</h2><table>{rows}</table>
<p>INCONCLUSIVE: nothing in the run exercised the expectation, so it was not judged; it fails the run
unless it is optional.</p>
{f"<h2>Errors</h2><ul>{errors}</ul>" if errors else ""}
<h2>Requests by route (green 2xx, purple 4xx, orange 429, red 5xx, black closed; shaded: faults)</h2>
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
