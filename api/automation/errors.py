"""The automation backend's one error table: domain code (+ resource) → HTTP status and error.code.

Release 0.9.24 (the spec) wraps every error path in ``{"success": false, "error": {...}}``. The
body for the earlier release is chosen here too, so routes never build error bodies themselves.
"""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from hardware.ports.errors import AuthError, DomainError, ErrorCode, RateLimited

# (domain code, resource or None) -> (HTTP status, vendor error.code). Resource-specific rows win.
ERROR_TABLE: dict[tuple[ErrorCode, str | None], tuple[int, str]] = {
    (ErrorCode.INVALID_INPUT, None): (400, "BAD_REQUEST"),
    (ErrorCode.NOT_FOUND, None): (404, "NOT_FOUND"),
    (ErrorCode.NOT_FOUND, "device"): (404, "DEVICE_NOT_FOUND"),
    (ErrorCode.CONFLICT, None): (409, "CONFLICT"),
    (ErrorCode.CONFLICT, "setup"): (403, "SETUP_ALREADY_COMPLETED"),
    (ErrorCode.INVALID_INPUT, "setup_incomplete"): (400, "SETUP_INCOMPLETE"),
    (ErrorCode.INVALID_INPUT, "provider"): (400, "INVALID_PROVIDER"),
    (ErrorCode.INVALID_INPUT, "model"): (400, "INVALID_MODEL"),
    (ErrorCode.UNAUTHENTICATED, None): (401, "UNAUTHORIZED"),
    (ErrorCode.FORBIDDEN, None): (403, "FORBIDDEN"),
    (ErrorCode.TIMESTAMP_SKEW, None): (401, "UNAUTHORIZED"),
    (ErrorCode.RATE_LIMITED, None): (429, "RATE_LIMITED"),
    (ErrorCode.UNAVAILABLE, None): (503, "SERVICE_UNAVAILABLE"),
    (ErrorCode.TIMEOUT, None): (504, "AGENT_EXECUTION_TIMEOUT"),
    (ErrorCode.STORAGE_FULL, None): (507, "INTERNAL_ERROR"),
    (ErrorCode.INTERNAL, None): (500, "INTERNAL_ERROR"),
    (ErrorCode.INVALID_INPUT, "media_type"): (415, "UNSUPPORTED_MEDIA_TYPE"),
    (ErrorCode.INVALID_INPUT, "validation"): (422, "VALIDATION_ERROR"),
    (ErrorCode.INVALID_INPUT, "method"): (405, "METHOD_NOT_ALLOWED"),
    (ErrorCode.NOT_FOUND, "expired_share"): (410, "GONE"),
    (ErrorCode.INTERNAL, "agent_execution"): (500, "AGENT_EXECUTION_FAILED"),
}

RAW_ERROR_AREAS = ("/api/memory", "/api/skills")
"""Handlers that answer their own failures as a bare ``{"error": message}`` (reference §1, errors (c))."""

# Setup validation failures name the offending field (reference: setup handler codes).
FIELD_CODES: dict[str, str] = {
    "username": "INVALID_USERNAME",
    "email": "INVALID_EMAIL",
    "password": "WEAK_PASSWORD",
}


def lookup(error: DomainError, *, setup: bool = False) -> tuple[int, str]:
    status, code = ERROR_TABLE.get((error.code, error.resource)) or ERROR_TABLE[(error.code, None)]
    if setup and error.code is ErrorCode.INVALID_INPUT:
        code = FIELD_CODES.get(error.details.get("field", ""), code)
    return status, code


def raw_error_area(path: str) -> bool:
    return any(path == area or path.startswith(area + "/") for area in RAW_ERROR_AREAS)


def error_body(code: str, message: str, **extra: object) -> dict:
    return {"success": False, "error": {"code": code, "message": message, "request_id": None, **extra}}


def error_response(
    status: int, code: str, message: str, headers: dict[str, str] | None = None
) -> JSONResponse:
    return JSONResponse(error_body(code, message), status_code=status, headers=headers)


def legacy_response(exc: DomainError, status: int, headers: dict[str, str] | None) -> JSONResponse | None:
    """Release 0.9.17: auth failures were ``{"error", "status"}`` (a non-admin got 400) and rate
    limiting ``{"error", "retry_after"}``; everything else already used the envelope."""
    if isinstance(exc, RateLimited):
        return JSONResponse(
            {"error": "Rate limit exceeded", "retry_after": exc.retry_after}, 429, headers=headers
        )
    if isinstance(exc, AuthError):
        status = 400 if exc.details.get("admin_required") else status
        return JSONResponse({"error": exc.message, "status": status}, status, headers=headers)
    return None


def install(app: FastAPI, release: str = "0.9.24") -> None:
    """Exception handlers: the only place errors become HTTP responses."""
    legacy = release == "0.9.17"

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        status, code = lookup(exc, setup=request.url.path.startswith("/api/setup/"))
        headers = {"Retry-After": str(exc.details["retry_after"])} if "retry_after" in exc.details else None
        if not isinstance(exc, AuthError | RateLimited) and raw_error_area(request.url.path):
            return JSONResponse({"error": exc.message}, status)
        if legacy and (response := legacy_response(exc, status, headers)) is not None:
            return response
        if exc.details.get("admin_required") and request.url.path.startswith("/api/users"):
            status, code = 400, "BAD_REQUEST"  # the real /users handlers' role check, in both releases
        if "hint" in exc.details:  # the vendor's optional hint next to the message (rule errors)
            body = error_body(code, exc.message, hint=exc.details["hint"])
            return JSONResponse(body, status, headers=headers)
        return error_response(status, code, exc.message, headers)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errors):
            return error_response(400, "BAD_REQUEST", "Failed to parse the request body as JSON")
        first = errors[0] if errors else {}
        where = ".".join(str(p) for p in first.get("loc", ()) if p != "body")
        return error_response(422, "VALIDATION_ERROR", f"{where}: {first.get('msg', 'invalid value')}")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        codes = {404: "NOT_FOUND", 405: "METHOD_NOT_ALLOWED", 413: "PAYLOAD_TOO_LARGE"}
        message = {404: "Not found", 405: "Method not allowed"}.get(exc.status_code, str(exc.detail))
        return error_response(exc.status_code, codes.get(exc.status_code, "BAD_REQUEST"), message)

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return error_response(500, "INTERNAL_ERROR", "Internal server error")
