"""Frozen value types that cross the port boundary. No vendor JSON here: API layers map them."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum


class ClockMode(StrEnum):
    REALTIME = "realtime"
    STEP = "step"


@dataclass(frozen=True, slots=True)
class ClockState:
    mode: ClockMode
    speed: float
    paused: bool
    sim_time: float
    """Seconds since sim time 0."""
    epoch: float
    """Unix time that sim time 0 maps to."""

    @property
    def unix_time(self) -> float:
        return self.epoch + self.sim_time


@dataclass(frozen=True, slots=True)
class SnapshotInfo:
    id: str
    sim_time: float
    seed: int


@dataclass(frozen=True, slots=True)
class User:
    id: str
    username: str
    role: str
    created_at: int
    """Unix seconds on the world clock."""


@dataclass(frozen=True, slots=True)
class Login:
    token: str
    user: User


@dataclass(frozen=True, slots=True)
class Readiness:
    database: bool
    mqtt: bool
    llm: bool
    notes: tuple[str, ...] = ()

    @property
    def ready(self) -> bool:
        return self.database and self.llm


@dataclass(frozen=True, slots=True)
class PublicKey:
    pem: str
    algorithm: str
    unix_timestamp: int


@dataclass(frozen=True, slots=True)
class GatewayInfo:
    version: str
    services: dict[str, bool] = field(default_factory=dict)
