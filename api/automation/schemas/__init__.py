"""Wire shapes of the automation backend (release 0.9.24 unless stated). Only here."""

from __future__ import annotations

import functools
import os
from datetime import UTC, datetime
from typing import Any

import orjson
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from hardware.ports.types import ApiKey, Login, Principal, Readiness, User

SERVICE_NAME = "edge-ai-agent"


def rfc3339_nanos(unix: float) -> str:
    """``2026-08-18T11:52:25.123456789Z``: the server's chrono timestamp format."""
    whole = int(unix // 1)
    nanos = round((unix - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    return f"{_second(whole)}.{nanos:09d}Z"


@functools.lru_cache(maxsize=256)
def _second(whole: int) -> str:
    """A whole second's date and time (many responses share their second)."""
    return datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def request_id() -> str:
    """A random (version 4) UUID as text: what ``str(uuid.uuid4())`` gives, at a third of the cost.
    The bytes come from ``os.urandom`` as uuid4's do, read a pool at a time rather than 16 at a time."""
    global _pool, _taken
    if _taken >= _POOL:
        _pool, _taken = os.urandom(_POOL), 0
    r = int.from_bytes(_pool[_taken : _taken + 16]) & _UUID4_CLEAR | _UUID4_SET
    _taken += 16
    h = f"{r:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_POOL = 4096
_pool, _taken = b"", _POOL


def _fresh_pool() -> None:
    """A forked child draws its own ids, never its parent's pooled bytes."""
    global _pool, _taken
    _pool, _taken = b"", _POOL


os.register_at_fork(after_in_child=_fresh_pool)
_UUID4_CLEAR = ~((0xF000 << 64) | (0xC000 << 48)) & ((1 << 128) - 1)
_UUID4_SET = (0x4000 << 64) | (0x8000 << 48)


class Json(JSONResponse):
    """JSON rendered by orjson: same bytes as the compact stdlib form, several times faster."""

    def render(self, content: Any) -> bytes:
        return orjson.dumps(content)

    @classmethod
    def of(cls, body: bytes) -> Json:
        """A 200 of ``body`` (JSON already rendered): what ``Json(content)`` makes, headers in the
        same order, without going through the constructor."""
        response = cls.__new__(cls)
        response.status_code = 200
        response.background = None
        response.body = body
        response.raw_headers = [
            (b"content-length", str(len(body)).encode()),
            (b"content-type", b"application/json"),
        ]
        return response


def ok(data: Any, now: float) -> JSONResponse:
    """The success envelope ``{success, data, meta{timestamp, request_id}}``."""
    return Json.of(
        orjson.dumps(
            {
                "success": True,
                "data": data,
                "meta": {"timestamp": rfc3339_nanos(now), "request_id": request_id()},
            }
        )
    )


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", str_strip_whitespace=False)


class LoginRequest(_Body):
    username: str
    password: str


class InitializeRequest(_Body):
    username: str
    password: str
    email: str | None = None


class RegisterRequest(_Body):
    username: str
    password: str
    role: str | None = None  # accepted and ignored: registrants are always regular users


class NewUserRequest(_Body):
    username: str
    password: str
    role: str = "user"


class ChangePasswordRequest(_Body):
    old_password: str
    new_password: str


class NewApiKeyRequest(_Body):
    name: str
    permissions: list[str] = []
    expires_at: int | None = None
    """Unix seconds; or give ``expires_in_days``."""
    expires_in_days: int | None = Field(default=None, ge=1, le=3650)


class AuthSettings(_Body):
    registration_enabled: bool


def principal_info(p: Principal) -> dict[str, Any]:
    """``/auth/me``: a user, or an API key presented as ``apikey:<id>``."""
    if p.user is not None:
        return user_info(p.user)
    assert p.key is not None
    return {
        "id": f"apikey:{p.key.id}",
        "username": p.key.name,
        "role": "admin" if p.is_admin else "user",
        "created_at": p.key.created_at,
    }


def api_key_info(key: ApiKey, *, preview: bool = False) -> dict[str, Any]:
    info: dict[str, Any] = {
        "id": key.id,
        "name": key.name,
        "created_at": key.created_at,
        "permissions": list(key.permissions),
        "active": key.active,
        "expires_at": key.expires_at,
    }
    if preview:
        info["preview"] = key.preview
    return info


def user_info(user: User) -> dict[str, Any]:
    return {"id": user.id, "username": user.username, "role": user.role, "created_at": user.created_at}


def login_response(login: Login) -> dict[str, Any]:
    return {"token": login.token, "user": user_info(login.user)}


def initialize_response(login: Login) -> dict[str, Any]:
    return {
        "message": "Admin account created successfully",
        "user": user_info(login.user),
        "token": login.token,
    }


def health(version: str) -> dict[str, Any]:
    return {"status": "ok", "service": SERVICE_NAME, "version": version}


def health_status(version: str, uptime: float) -> dict[str, Any]:
    return {"status": "healthy", "service": SERVICE_NAME, "version": version, "uptime": int(uptime)}


def readiness(r: Readiness) -> dict[str, Any]:
    body: dict[str, Any] = {
        "ready": r.ready,
        "dependencies": {"llm": r.llm, "mqtt": r.mqtt, "database": r.database},
    }
    if r.notes:
        body["notes"] = list(r.notes)
    return body
