"""Wire shapes of the edge gateway, one module per area (auth, media, system, apps, files). Only here.

This module holds the success envelope every area answers with.
"""

from __future__ import annotations

from typing import Any

import orjson
from fastapi.responses import JSONResponse


def ok(data: Any = None) -> JSONResponse:
    """``{"code":0,"message":"Success","data":…}``; ``data`` is omitted when None, like the device."""
    body: dict[str, Any] = {"code": 0, "message": "Success"}
    if data is not None:
        body["data"] = data
    return JSONResponse(body)


def ok_plain(data: dict[str, Any]) -> JSONResponse:
    """:func:`ok` for data without floats (strings, integers, booleans, ``None``, lists and dicts
    with string keys), which orjson renders byte for byte as the stdlib's compact form that
    ``JSONResponse`` uses (non-ASCII kept), in a fraction of the time. Floats are another matter
    (``1e+16`` against ``1e16``): data that may hold one goes through :func:`ok`."""
    body = orjson.dumps({"code": 0, "message": "Success", "data": data})
    response = JSONResponse.__new__(JSONResponse)
    response.status_code = 200
    response.background = None
    response.body = body
    length = str(len(body)).encode()
    response.raw_headers = [(b"content-length", length), (b"content-type", b"application/json")]
    return response
