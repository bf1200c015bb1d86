"""The edge gateway's one error table: business codes, their fixed messages and HTTP statuses,
and the mapping from domain codes to business codes. Mirrors the device's ``handlers/response.go``."""

from __future__ import annotations

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException

from api.body_limit import Limit
from api.gateway.schemas.files import MAX_BODY
from hardware.ports.errors import DomainError, ErrorCode

# code -> (HTTP status, fixed message)
CODES: dict[int, tuple[int, str]] = {
    0: (200, "Success"),
    1000: (500, "Unknown error"),
    1001: (400, "Invalid request"),
    1002: (400, "Invalid JSON format"),
    1003: (400, "Missing required parameter"),
    1004: (400, "Invalid parameter value"),
    1005: (400, "Request timestamp out of allowed window"),
    2000: (401, "Unauthorized"),
    2001: (403, "Forbidden"),
    2002: (401, "Token expired"),
    2003: (401, "Invalid token"),
    3000: (503, "Service unavailable"),
    3001: (504, "Service timeout"),
    3002: (500, "Internal service error"),
    3003: (502, "gRPC communication error"),
    3004: (500, "Database error"),
    4000: (404, "Resource not found"),
    4001: (409, "Resource already exists"),
    4002: (429, "Resource exhausted"),
    4003: (500, "Operation failed"),
    5000: (404, "Model not found"),
    5001: (500, "Failed to load model"),
    5002: (500, "Model inference error"),
    5003: (400, "Invalid model format"),
    6000: (404, "Application not found"),
    6001: (500, "Failed to install application"),
    6002: (500, "Failed to start application"),
    6003: (500, "Failed to stop application"),
    6004: (409, "Application is already running"),
    6005: (400, "Application is not running"),
    7000: (500, "Device error"),
    7001: (500, "PTZ control error"),
    7002: (500, "Camera error"),
    7003: (500, "GPIO error"),
    8000: (404, "File not found"),
    8001: (500, "Failed to upload file"),
    8002: (500, "Failed to delete file"),
    8003: (507, "Storage is full"),
    8004: (403, "Access denied"),
    9000: (500, "SSH configuration error"),
    9001: (500, "SSH service error"),
    10000: (404, "Process not found"),
    10001: (500, "Failed to send signal to process"),
}

# (domain code, resource or None) -> business code. Resource-specific rows win.
DOMAIN_CODES: dict[tuple[ErrorCode, str | None], int] = {
    (ErrorCode.INVALID_INPUT, None): 1001,
    (ErrorCode.INVALID_INPUT, "parameter"): 1004,
    (ErrorCode.NOT_FOUND, None): 4000,
    (ErrorCode.NOT_FOUND, "model"): 5000,
    (ErrorCode.NOT_FOUND, "app"): 6000,
    (ErrorCode.NOT_FOUND, "file"): 8000,
    (ErrorCode.NOT_FOUND, "process"): 10000,
    (ErrorCode.CONFLICT, None): 4001,
    (ErrorCode.CONFLICT, "upgrade"): 4003,
    (ErrorCode.FORBIDDEN, "path"): 8004,
    (ErrorCode.UNAUTHENTICATED, None): 2000,
    (ErrorCode.FORBIDDEN, None): 2001,
    (ErrorCode.INVALID_INPUT, "json"): 1002,
    (ErrorCode.INVALID_INPUT, "model_format"): 5003,
    (ErrorCode.INTERNAL, "model_load"): 5001,
    (ErrorCode.INTERNAL, "operation"): 4003,
    (ErrorCode.CONFLICT, "app_running"): 6004,
    (ErrorCode.INVALID_INPUT, "app_not_running"): 6005,
    (ErrorCode.TIMESTAMP_SKEW, None): 1005,
    (ErrorCode.RATE_LIMITED, None): 4002,
    (ErrorCode.UNAVAILABLE, None): 3000,
    (ErrorCode.TIMEOUT, None): 3001,
    (ErrorCode.STORAGE_FULL, None): 8003,
    (ErrorCode.INTERNAL, None): 3002,
    (ErrorCode.INTERNAL, "device"): 7000,
    (ErrorCode.INTERNAL, "ptz"): 7001,
    (ErrorCode.INTERNAL, "camera"): 7002,
    (ErrorCode.INTERNAL, "gpio"): 7003,
}

# Error "type" the device attaches for some codes.
ERROR_TYPES: dict[int, str] = {2000: "auth"}


def status_of(code: int) -> int:
    return CODES.get(code, (500, ""))[0]


def message_of(code: int) -> str:
    return CODES.get(code, (500, "Unknown error"))[1]


def fail(
    code: int, detail: str | None = None, *, type_: str | None = None, headers: dict[str, str] | None = None
) -> JSONResponse:
    """``{"code", "message", "error": {"type"?, "detail"?}}`` with the code's HTTP status."""
    error: dict[str, str] = {}
    if type_:
        error["type"] = type_
    if detail:
        error["detail"] = detail
    body = {"code": code, "message": message_of(code), "error": error}
    return JSONResponse(body, status_code=status_of(code), headers=headers)


def not_simulated_response(detail: str) -> JSONResponse:
    """A device route the twin does not simulate yet: HTTP 501 with the device's error shape."""
    body = {"code": 1000, "message": message_of(1000), "error": {"type": "system", "detail": detail}}
    return JSONResponse(body, status_code=501)


def not_found() -> JSONResponse:
    """The device's SPA NoRoute answer for an unknown path or a wrong method."""
    return JSONResponse({"code": 404, "message": "Not found"}, status_code=404)


def unauthorized(detail: str = "Invalid or missing authentication token") -> JSONResponse:
    return fail(2000, detail, type_="auth", headers={"WWW-Authenticate": "Bearer"})


def install(app: FastAPI) -> None:
    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        code = DOMAIN_CODES.get((exc.code, exc.resource)) or DOMAIN_CODES[(exc.code, None)]
        if code == 2000:
            return unauthorized(exc.message)
        return fail(code, exc.message, type_=ERROR_TYPES.get(code))

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        return fail(1001, "Invalid input format")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        if exc.status_code in (404, 405):
            return not_found()
        return fail(1001, str(exc.detail))

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        return fail(1000, "internal error")


def unsupported_media() -> JSONResponse:
    """The device's 415 for a body that is not JSON: code 1001, ``error.type`` "validation"."""
    response = fail(1001, "Content-Type must be application/json", type_="validation")
    response.status_code = 415
    return response


NGINX_413 = (
    "<html>\r\n<head><title>413 Request Entity Too Large</title></head>\r\n<body>\r\n"
    "<center><h1>413 Request Entity Too Large</h1></center>\r\n"
    "<hr><center>nginx/1.22.1</center>\r\n</body>\r\n</html>\r\n"
)
"""nginx's own page for a body over ``client_max_body_size`` (the device's nginx 1.22.1)."""


def too_large() -> Response:
    return Response(NGINX_413, status_code=413, headers={"content-type": "text/html", "connection": "close"})


NGINX_LIMIT = Limit(MAX_BODY, on_read=too_large, on_declared=too_large)
"""The device's nginx: ``client_max_body_size 1024m`` in front of every route; a declared length over
it is refused before the request is proxied, a chunked body once it passes the limit."""
