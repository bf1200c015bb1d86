"""The automation server's own log, as its file layer writes it: one line per thing the server logs
at INFO and above, in tracing's full format (``2026-01-01T00:00:00.000000Z  INFO target: message``,
no ANSI codes), in daily files ``neomind.log.YYYY-MM-DD`` (UTC dates, the world's clock).

The lines come from the world's events (devices online and offline, ingested metrics and
discoveries, commands, rules, messages, agents, extensions, users, resets). Like a buffered file
writer, lines are kept in memory and written to the store in chunks (every :data:`CHUNK` lines,
and before an archive is built), so they survive a restart up to the last write; the newest
:data:`MAX_CHUNKS` chunks are kept. ``GET /api/logs/download`` zips the files in memory.
"""

from __future__ import annotations

import io
import zipfile
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import NotFound
from hardware.ports.events import Event, EventKind

if TYPE_CHECKING:
    from twin.engine import Engine

CHUNK = 200
MAX_CHUNKS = 250
"""About 50 000 lines."""
FILE_PREFIX = "neomind.log."

Line = tuple[str, str, str]
"""(level, target, message)."""


def _metric(e: Event) -> Line:
    return (
        "INFO",
        "neomind_devices::adapters",
        f"Device '{e.source}' reported metric '{e.data.get('metric')}'",
    )


FORMATS: dict[EventKind, Callable[[Event], Line]] = {
    EventKind.DEVICE_ONLINE: lambda e: ("INFO", "neomind_devices::service", f"Device '{e.source}' is online"),
    EventKind.DEVICE_OFFLINE: lambda e: (
        "WARN", "neomind_devices::service",
        f"Device '{e.source}' went offline ({e.data.get('reason', 'timeout')})",
    ),
    EventKind.DEVICE_METRIC: _metric,
    EventKind.DEVICE_DISCOVERED: lambda e: (
        "INFO", "neomind_api::automation::discovery",
        f"Unknown device '{e.source}' discovered via {e.data.get('via', 'webhook')}; draft created",
    ),
    EventKind.DEVICE_COMMAND_RESULT: lambda e: (
        "INFO", "neomind_devices::service",
        f"Command '{e.data.get('command')}' sent to device '{e.source}': {e.data.get('status')}",
    ),
    EventKind.RULE_TRIGGERED: lambda e: (
        "INFO", "neomind_rules::engine", f"Rule '{e.data.get('rule_name')}' ({e.source}) triggered"
    ),
    EventKind.RULE_EXECUTED: lambda e: (
        "INFO" if e.data.get("success") else "WARN", "neomind_rules::engine",
        f"Rule '{e.data.get('rule_name')}' executed: success={str(bool(e.data.get('success'))).lower()}"
        + (f", error: {e.data['error']}" if e.data.get("error") else ""),
    ),
    EventKind.MESSAGE_CREATED: lambda e: (
        "INFO", "neomind_messages::manager",
        f"Message created [{e.data.get('severity')}]: {e.data.get('title')} (source: {e.source})",
    ),
    EventKind.MESSAGE_ACKNOWLEDGED: lambda e: (
        "INFO", "neomind_messages::manager", f"Message {e.data.get('message_id')} acknowledged"
    ),
    EventKind.MESSAGE_RESOLVED: lambda e: (
        "INFO", "neomind_messages::manager", f"Message {e.data.get('message_id')} resolved"
    ),
    EventKind.AGENT_EXECUTION_STARTED: lambda e: (
        "INFO", "neomind_agent::ai_agent",
        f"Agent '{e.data.get('agent_name')}' execution {e.data.get('execution_id')} started "
        f"({e.data.get('trigger_type')})",
    ),
    EventKind.AGENT_EXECUTION_COMPLETED: lambda e: (
        "INFO" if e.data.get("success") else "ERROR", "neomind_agent::ai_agent",
        f"Agent {e.source} execution {e.data.get('execution_id')} {e.data.get('status')} "
        f"in {e.data.get('duration_ms')} ms",
    ),
    EventKind.EXTENSION_COMMAND_COMPLETED: lambda e: (
        "INFO", "neomind_api::handlers::extensions",
        f"Extension '{e.source}' command '{e.data.get('command')}' completed "
        f"in {e.data.get('duration_ms')} ms",
    ),
    EventKind.USER_CREATED: lambda e: (
        "INFO", "neomind_api::auth_users", f"User '{e.data.get('username')}' created ({e.data.get('role')})"
    ),
    EventKind.CLOCK_JUMP: lambda e: ("WARN", "neomind", f"System clock jumped: {e.data}"),
    EventKind.WORLD_RESET: lambda e: ("WARN", "neomind", "Server state reset"),
    EventKind.CUSTOM: lambda e: (
        "INFO", "neomind_core::event", f"Event '{e.data.get('custom_type')}' published by {e.source}"
    ),
}  # fmt: skip


def stamp(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class ServerLog:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.chunks = world.store.collection("server_log")
        ids = sorted(self.chunks.items(), key=lambda kv: kv[0])
        self._ids = [i for i, _ in ids]
        self._next = int(self._ids[-1]) + 1 if self._ids else 0
        self.pending: list[tuple[float, str]] = []
        world.observers.append(self._observe)
        self.write("INFO", "neomind", f"Server starting (seed {world.seed})")

    def _observe(self, event: Event) -> None:
        fmt = FORMATS.get(event.kind)
        if fmt is not None:
            self.write(*fmt(event), at=self.world.epoch + event.at)

    def write(self, level: str, target: str, message: str, at: float | None = None) -> None:
        unix = self.world.now() if at is None else at
        self.pending.append((unix, f"{stamp(unix)} {level:>5} {target}: {message}"))
        if len(self.pending) >= CHUNK:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        chunk_id = f"{self._next:012d}"
        self.chunks.put(chunk_id, {"lines": [[t, text] for t, text in self.pending]})
        self._ids.append(chunk_id)
        self._next += 1
        self.pending = []
        while len(self._ids) > MAX_CHUNKS:
            self.chunks.delete(self._ids.pop(0))

    def lines(self) -> list[tuple[float, str]]:
        self.flush()
        out: list[tuple[float, str]] = []
        for chunk_id in self._ids:
            doc: dict[str, Any] | None = self.chunks.get(chunk_id)
            out += [(t, text) for t, text in (doc or {}).get("lines", [])]
        return out

    def archive(self, days: int | None) -> tuple[str, bytes]:
        """(file name, ZIP of the daily files, newest first); ``NotFound`` as the vendor words it."""
        files: dict[str, list[tuple[float, str]]] = {}
        for unix, text in self.lines():
            files.setdefault(datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d"), []).append((unix, text))
        today = datetime.fromtimestamp(self.world.now(), UTC).date()
        cutoff = None
        if days and days - 1 < (today - date.min).days:  # further back than the calendar: every file
            cutoff = (today - timedelta(days=days - 1)).isoformat()
        kept = {d: rows for d, rows in files.items() if cutoff is None or d >= cutoff}
        if not kept:
            if files:
                raise NotFound(
                    f"No log files match the selected time range ({len(files)} file(s) filtered out).",
                    resource="logs",
                )
            raise NotFound("No log files found in log directory.", resource="logs")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
            for day in sorted(kept, reverse=True):
                rows = kept[day]
                modified = datetime.fromtimestamp(
                    max(rows[-1][0], 315_532_800), UTC
                )  # zip dates start in 1980
                info = zipfile.ZipInfo(FILE_PREFIX + day, modified.timetuple()[:6])
                info.compress_type = zipfile.ZIP_DEFLATED
                archive.writestr(info, "".join(text + "\n" for _, text in rows))
        suffix = f"-last-{days}d" if days else ""
        return f"neomind-logs-{today.isoformat()}{suffix}.zip", buf.getvalue()
