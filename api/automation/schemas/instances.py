"""Wire shapes of ``/instances``: the key is never shown whole, only masked (``nmk_abc1****``) and
XOR-encrypted with the cipher the web app decrypts it with (hex)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from hardware.ports.automations import Instance, InstanceProbe

KEY_CIPHER = b"NeoMind2024!@#"
"""The server's default cipher, shared with its web app."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class CreateInstance(_Body):
    name: str
    url: str
    api_key: str | None = None


class UpdateInstance(_Body):
    name: str | None = None
    url: str | None = None
    api_key: str | None = None


def masked(key: str) -> str:
    """The first 8 bytes (cut back to a whole character) and ``****``; ``****`` for a short key."""
    raw = key.encode()
    if len(raw) <= 8:
        return "****"
    cut = 8
    while cut and raw[cut] & 0xC0 == 0x80:
        cut -= 1
    return raw[:cut].decode() + "****"


def encrypted(key: str) -> str:
    return "".join(f"{b ^ KEY_CIPHER[i % len(KEY_CIPHER)]:02x}" for i, b in enumerate(key.encode()))


def instance(i: Instance) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": i.id,
        "name": i.name,
        "url": i.url,
        "api_key": None if i.api_key is None else masked(i.api_key),
    }
    if i.api_key is not None:
        out["encrypted_key"] = encrypted(i.api_key)
    out.update(
        is_local=i.is_local,
        last_status=i.last_status,
        last_checked_at=i.last_checked_at,
        created_at=i.created_at,
    )
    return out


def probe(p: InstanceProbe) -> dict[str, Any]:
    out: dict[str, Any] = {"success": p.success, "latency_ms": p.latency_ms, "status": p.status}
    if p.error is not None:
        out["error"] = p.error
    return out
