from __future__ import annotations

import base64
import json

import jwt
import pytest

from hardware.ports.errors import Unauthenticated
from twin.automation.users import verify_hs256

SECRET = b"s" * 32


def b64(obj: dict) -> str:
    return base64.urlsafe_b64encode(json.dumps(obj).encode()).rstrip(b"=").decode()


def test_valid_token_round_trips_with_pyjwt() -> None:
    token = jwt.encode({"sub": "u1", "exp": 5}, SECRET, algorithm="HS256")
    assert verify_hs256(token, SECRET) == {"sub": "u1", "exp": 5}


@pytest.mark.parametrize(
    "token",
    [
        jwt.encode({"sub": "u1"}, b"other-secret-other-secret-other!", algorithm="HS256"),
        f"{b64({'alg': 'none', 'typ': 'JWT'})}.{b64({'sub': 'admin'})}.",
        # A valid signature over one payload, presented with another.
        ".".join(
            [
                *jwt.encode({"sub": "u1"}, SECRET, algorithm="HS256").split(".")[:1],
                b64({"sub": "admin"}),
                jwt.encode({"sub": "u1"}, SECRET, algorithm="HS256").split(".")[2],
            ]
        ),
    ],
    ids=["wrong-secret", "alg-none", "tampered-payload"],
)
def test_forgeries_are_refused(token: str) -> None:
    with pytest.raises(Unauthenticated, match="Invalid signature"):
        verify_hs256(token, SECRET)


@pytest.mark.parametrize("token", ["", "abc", "a.b", "a.b.c.d", "!!.??.**"])
def test_malformed_tokens(token: str) -> None:
    with pytest.raises(Unauthenticated):
        verify_hs256(token, SECRET)
