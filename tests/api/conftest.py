"""Fixtures shared by the API tests."""

from __future__ import annotations

import httpx
import pytest

from tests.conftest import admin_token


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    """The automation API's admin, signed in: its ``Authorization`` header."""
    return {"Authorization": f"Bearer {await admin_token(automation)}"}
