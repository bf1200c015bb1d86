"""Wire shapes of the gateway's public auth routes: login and the public key."""

from __future__ import annotations

from typing import Any

from api import json_input
from hardware.ports.errors import InvalidInput
from hardware.ports.types import PublicKey


def parse_login(raw: bytes) -> tuple[str, str, int]:
    """``{username, password, timestamp?}``; anything else is the device's "Invalid input format"."""
    try:
        body = json_input.loads(raw, json_input.GO)
    except ValueError as err:
        raise InvalidInput("Invalid input format") from err
    if not isinstance(body, dict):
        raise InvalidInput("Invalid input format")
    username, password = body.get("username"), body.get("password")
    timestamp = body.get("timestamp", 0)
    if timestamp is None:
        timestamp = 0
    if (
        not isinstance(username, str)
        or not username
        or not isinstance(password, str)
        or not password
        or isinstance(timestamp, bool)
        or not isinstance(timestamp, int)
    ):
        raise InvalidInput("Invalid input format")
    return username, password, timestamp


def login_response(token: str, username: str) -> dict[str, Any]:
    return {"token": f"Bearer {token}", "username": username}


def public_key(key: PublicKey) -> dict[str, Any]:
    return {"public_key": key.pem, "algorithm": key.algorithm, "unix_timestamp": key.unix_timestamp}
