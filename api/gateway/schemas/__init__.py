"""Wire shapes of the edge gateway, one module per area (auth, media, system, apps, files). Only here.

This module holds the success envelope every area answers with.
"""

from __future__ import annotations

from typing import Any

from fastapi.responses import JSONResponse


def ok(data: Any = None) -> JSONResponse:
    """``{"code":0,"message":"Success","data":…}``; ``data`` is omitted when None, like the device."""
    body: dict[str, Any] = {"code": 0, "message": "Success"}
    if data is not None:
        body["data"] = data
    return JSONResponse(body)
