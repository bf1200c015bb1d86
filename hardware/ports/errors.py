"""The domain error tree shared by every backend (the twin world and real hardware).

Errors carry a symbolic ``code`` and a human message, never an HTTP status: each vendor API
maps codes to its own status and body in one table (``api/<vendor>/errors.py``).

::

    DomainError
    ├── InvalidInput          a request the domain refuses (bad value, missing field)
    ├── NotFound              an id that names nothing
    ├── Conflict              already exists / wrong state for the operation
    ├── AuthError
    │   ├── Unauthenticated   no or bad credentials
    │   ├── Forbidden         credentials fine, operation not allowed
    │   └── TimestampSkew     a signed request whose timestamp is outside the window
    ├── RateLimited           too many requests; carries ``retry_after`` seconds
    ├── Unavailable           a service or device that is down, booting or unreachable
    ├── Timeout               a deadline passed in sim time
    ├── StorageFull           a partition has no room left
    └── InternalError         the backend failed in a way the client cannot fix
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any


class ErrorCode(StrEnum):
    """Symbolic error codes. Values are stable: they appear in traces and journals."""

    INVALID_INPUT = "invalid_input"
    NOT_FOUND = "not_found"
    CONFLICT = "conflict"
    UNAUTHENTICATED = "unauthenticated"
    FORBIDDEN = "forbidden"
    TIMESTAMP_SKEW = "timestamp_skew"
    RATE_LIMITED = "rate_limited"
    UNAVAILABLE = "unavailable"
    TIMEOUT = "timeout"
    STORAGE_FULL = "storage_full"
    INTERNAL = "internal"


class DomainError(Exception):
    """Base of every error a backend raises towards the API layer.

    ``resource`` names the kind of thing involved (``"device"``, ``"user"``, ``"session"``...) so a
    vendor table can pick a more specific code (``DEVICE_NOT_FOUND``) without the domain knowing it.
    ``details`` holds structured extras (``retry_after``, the offending field...).
    """

    code: ErrorCode = ErrorCode.INTERNAL

    def __init__(self, message: str, *, resource: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.resource = resource
        self.details = details

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, resource={self.resource!r})"


class InvalidInput(DomainError):
    code = ErrorCode.INVALID_INPUT


class NotFound(DomainError):
    code = ErrorCode.NOT_FOUND


class Conflict(DomainError):
    code = ErrorCode.CONFLICT


class AuthError(DomainError):
    code = ErrorCode.UNAUTHENTICATED


class Unauthenticated(AuthError):
    code = ErrorCode.UNAUTHENTICATED


class Forbidden(AuthError):
    code = ErrorCode.FORBIDDEN


class TimestampSkew(AuthError):
    code = ErrorCode.TIMESTAMP_SKEW


class RateLimited(DomainError):
    code = ErrorCode.RATE_LIMITED

    def __init__(self, message: str, *, retry_after: int, **details: Any) -> None:
        super().__init__(message, retry_after=retry_after, **details)
        self.retry_after = retry_after


class Unavailable(DomainError):
    code = ErrorCode.UNAVAILABLE


class Timeout(DomainError):
    code = ErrorCode.TIMEOUT


class StorageFull(DomainError):
    code = ErrorCode.STORAGE_FULL


class InternalError(DomainError):
    code = ErrorCode.INTERNAL


__all__ = [
    "AuthError",
    "Conflict",
    "DomainError",
    "ErrorCode",
    "Forbidden",
    "InternalError",
    "InvalidInput",
    "NotFound",
    "RateLimited",
    "StorageFull",
    "Timeout",
    "TimestampSkew",
    "Unauthenticated",
    "Unavailable",
]
