"""The chat's streaming client takes a request httpx cannot send (a header it cannot encode) for an
unreachable model, as the non-streaming client does, so a turn falls back at once instead of
waiting out the stream timeout."""

from __future__ import annotations

import pytest

from hardware.ports.errors import Unavailable
from twin.automation.chat_models import OpenAICompatible
from twin.automation.chat_stream import stream


async def test_unsendable_request_is_unavailable() -> None:
    model = OpenAICompatible("http://127.0.0.1:9/v1", "m", "k\u00e9y", {})  # not ASCII: no header
    with pytest.raises(Unavailable, match="model backend unreachable: UnicodeEncodeError"):
        async for _ in stream(model, [{"role": "user", "content": "hi"}], [], {}):
            pass
