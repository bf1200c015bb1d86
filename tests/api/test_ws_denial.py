"""A WebSocket upgrade the twin refuses as the device does (401 without a token) leaves no error in
the log; an app that returns without answering an upgrade is still logged."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from websockets.asyncio.client import connect
from websockets.exceptions import InvalidStatus

from api import ws_denial
from tests.sockets import socket_settings
from twin.serve import build, start, stop

pytestmark = pytest.mark.socket


async def test_a_refused_upgrade_is_not_logged_as_an_error(tmp_path: Path, caplog) -> None:
    running = await start(build(socket_settings()), tmp_path)
    logger = logging.getLogger("uvicorn.error")  # uvicorn's own loggers do not reach the root one
    logger.addHandler(caplog.handler)
    try:
        base = running.url("cam-01/http").replace("http://", "ws://")
        with caplog.at_level(logging.WARNING, logger="uvicorn.error"):
            for path in ("/api/v1/events/stream", "/api/v1/terminal/ws", "/api/v1/h264/main"):
                with pytest.raises(InvalidStatus) as refused:
                    async with connect(base + path):
                        pass
                assert refused.value.response.status_code == 401
    finally:
        await stop(running)
        logger.removeHandler(caplog.handler)
    assert ws_denial.UVICORN_LINE not in caplog.text


def test_the_filter_keeps_the_line_for_an_app_that_never_answered() -> None:
    record = logging.LogRecord("uvicorn.error", logging.ERROR, __file__, 1, ws_denial.UVICORN_LINE, (), None)
    assert ws_denial.DenialFilter().filter(record)
