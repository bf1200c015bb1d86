"""The console: one page (``GET /console``; ``GET /`` leads there) of plain JavaScript modules and
CSS under ``/static``, no build step and nothing from the network. It drives the twin through the
control plane's own routes only, so everything it does can be scripted."""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse, RedirectResponse

router = APIRouter(tags=["console"])

STATIC = Path(__file__).with_name("static")


@router.get("/", include_in_schema=False)
async def root() -> RedirectResponse:
    return RedirectResponse("/console")


@router.get("/console", response_class=HTMLResponse)
async def console_page() -> HTMLResponse:
    return HTMLResponse(STATIC.joinpath("console.html").read_text(encoding="utf-8"))
