"""The contract between the API layer and whatever stands behind it (the twin world or real hardware).

Imports nothing from ``api/`` or ``twin/``.
"""

from hardware.ports.automation import AutomationBackend
from hardware.ports.clock import Clock
from hardware.ports.control import WorldControl
from hardware.ports.errors import (
    AuthError,
    Conflict,
    DomainError,
    ErrorCode,
    Forbidden,
    InternalError,
    InvalidInput,
    NotFound,
    RateLimited,
    StorageFull,
    Timeout,
    TimestampSkew,
    Unauthenticated,
    Unavailable,
)
from hardware.ports.events import Event, EventKind, Subscription
from hardware.ports.gateway import GatewayAuth, GatewayBackend, GatewaySystem
from hardware.ports.types import (
    ClockMode,
    ClockState,
    GatewayInfo,
    Login,
    PublicKey,
    Readiness,
    SnapshotInfo,
    User,
)

__all__ = [
    "AuthError",
    "AutomationBackend",
    "Clock",
    "ClockMode",
    "ClockState",
    "Conflict",
    "DomainError",
    "ErrorCode",
    "Event",
    "EventKind",
    "Forbidden",
    "GatewayAuth",
    "GatewayBackend",
    "GatewayInfo",
    "GatewaySystem",
    "InternalError",
    "InvalidInput",
    "Login",
    "NotFound",
    "PublicKey",
    "RateLimited",
    "Readiness",
    "SnapshotInfo",
    "StorageFull",
    "Subscription",
    "Timeout",
    "TimestampSkew",
    "Unauthenticated",
    "Unavailable",
    "User",
    "WorldControl",
]
