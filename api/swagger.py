"""An API console served with no network: Swagger UI's files from the ``swagger-ui-bundle`` package
and an app's OpenAPI document in version 3.0, which that Swagger UI renders (FastAPI writes 3.1).
The automation API (``/api/docs``) and the control plane (``/docs``) both serve theirs from here."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.openapi.utils import get_openapi
from fastapi.responses import FileResponse, HTMLResponse
from starlette.routing import BaseRoute
from swagger_ui_bundle import swagger_ui_path

from hardware.ports.errors import NotFound

ASSETS = Path(str(swagger_ui_path)).resolve()


def to_openapi_30(node: Any) -> Any:
    """FastAPI writes 3.1 schemas; 3.0 spells ``anyOf: [X, null]`` as ``X`` + ``nullable``."""
    if isinstance(node, list):
        return [to_openapi_30(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = {k: to_openapi_30(v) for k, v in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list) and {"type": "null"} in options:
        rest = [o for o in options if o != {"type": "null"}]
        node.pop("anyOf")
        node.update(rest[0] if len(rest) == 1 else {"anyOf": rest})
        node["nullable"] = True
    node.pop("examples", None)
    return node


def openapi_30(app: FastAPI, routes: Sequence[BaseRoute], description: str | None = None) -> dict[str, Any]:
    """``app``'s OpenAPI 3.0 document over ``routes``, made once and kept on the app."""
    cached = getattr(app.state, "openapi_30", None)
    if cached is None:
        doc = get_openapi(
            title=app.title,
            version=app.version,
            openapi_version="3.0.3",
            routes=routes,
            description=description,
        )
        cached = app.state.openapi_30 = to_openapi_30(doc)
    return cached


def console(prefix: str, title: str, **parameters: Any) -> HTMLResponse:
    """The Swagger UI page reading ``{prefix}/openapi.json``, its files under ``{prefix}/``."""
    return get_swagger_ui_html(
        openapi_url=f"{prefix}/openapi.json",
        title=title,
        swagger_js_url=f"{prefix}/swagger-ui-bundle.js",
        swagger_css_url=f"{prefix}/swagger-ui.css",
        swagger_favicon_url=f"{prefix}/favicon-32x32.png",
        swagger_ui_parameters=parameters or None,
    )


def asset(rest: str, resource: str | None = None) -> FileResponse:
    """One of Swagger UI's files; ``NotFound`` for anything else (a path out of the package included)."""
    path = (ASSETS / rest).resolve()
    if not path.is_relative_to(ASSETS) or not path.is_file():
        raise NotFound(f"no console asset {rest!r}", resource=resource)
    return FileResponse(path)
