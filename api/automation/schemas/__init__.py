"""Wire shapes of the automation backend (release 0.9.24 unless stated). Only here."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from hardware.ports.types import Login, Readiness, User

SERVICE_NAME = "edge-ai-agent"


def rfc3339_nanos(unix: float) -> str:
    """``2026-08-18T11:52:25.123456789Z``: the server's chrono timestamp format."""
    whole = int(unix // 1)
    nanos = round((unix - whole) * 1e9)
    if nanos >= 1_000_000_000:
        whole, nanos = whole + 1, nanos - 1_000_000_000
    stamp = datetime.fromtimestamp(whole, UTC).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{stamp}.{nanos:09d}Z"


def ok(data: Any, now: float) -> JSONResponse:
    """The success envelope ``{success, data, meta{timestamp, request_id}}``."""
    return JSONResponse(
        {
            "success": True,
            "data": data,
            "meta": {"timestamp": rfc3339_nanos(now), "request_id": str(uuid.uuid4())},
        }
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
