"""What the camera's container runtime keeps: imported images, containers with their volumes and
log lines, and the followers of a container's log."""

from __future__ import annotations

import datetime as dt
from collections import deque
from collections.abc import Callable, Generator
from dataclasses import dataclass, field
from typing import Any

import simpy

from hardware.ports.gateway_apps import LogLine
from twin.feed import Feed

LOG_BUFFER = 2000
FOLLOW_BUFFER = 256


@dataclass
class Image:
    ref: str
    digest: str
    archive_size: int
    unpacked_size: int
    created_at: float
    unpacked: bool = False
    unpacking: simpy.Event | None = None
    broken: bool = False
    """A previous unpack ran out of space: its parent snapshot is gone."""

    @property
    def owner(self) -> str:
        return f"image:{self.ref}"


@dataclass
class Volume:
    host: str
    container: str
    readonly: bool = False


@dataclass
class Container:
    id: str
    image: str
    app_id: str
    created_at: float
    volumes: list[Volume] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    cpu_limit: float = 0.5
    memory_limit: int = 256 * 1024 * 1024
    state: str = "created"
    pid: int = 0
    started_at: float | None = None
    stopped_at: float | None = None
    workload: simpy.Process | None = None
    logs: deque[LogLine] = field(default_factory=lambda: deque(maxlen=LOG_BUFFER))
    followers: set[LogFollower] = field(default_factory=set)
    block_read: int = 0
    block_write: int = 0


class LogFollower(Feed[str]):
    """New log lines of one container; ``next()`` is None once the container is removed."""

    def __init__(self, container: Container) -> None:
        super().__init__(FOLLOW_BUFFER, on_close=lambda: container.followers.discard(self))


Workload = Callable[[Container], Generator[simpy.Event, Any, None]]


def line_text(line: LogLine) -> str:
    """A log line as the runtime prints it: RFC 3339 time in milliseconds, level, message."""
    moment = dt.datetime.fromtimestamp(line.timestamp_ns / 1e9, tz=dt.UTC)
    return f"{moment.strftime('%Y-%m-%dT%H:%M:%S.%f')[:-3]}Z {line.level.upper()} {line.message}"
