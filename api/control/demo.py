"""``GET /demo/video``: a page that plays a camera's live stream in the browser through Media Source
Extensions, remuxing the gateway's framing the way the device's web console does.

Everything the page needs comes after ``#`` so it never reaches a server or a log:
``/demo/video#gateway=http://127.0.0.1:8081&stream=main&username=admin&password=...``. The page logs
in to that gateway (its CORS allows any origin), reads the stream's size and rate from
``/api/v1/streams/{stream}``, opens ``/api/v1/h264/{stream}`` and turns each message (18-byte header,
AVCC payload) into a fragmented-MP4 ``moof``/``mdat`` pair after an init segment (``ftyp``/``moov``
with the ``avcC`` built from the SPS/PPS frame the gateway sends first).
"""

from __future__ import annotations

from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

router = APIRouter(tags=["demo"])

PAGE = Path(__file__).with_name("static").joinpath("demo_video.html")


@router.get("/demo/video", response_class=HTMLResponse)
async def demo_video() -> HTMLResponse:
    return HTMLResponse(PAGE.read_text(encoding="utf-8"))
