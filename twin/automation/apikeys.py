"""API keys of the automation server: ``nmk_`` + 32 hex, stored only as SHA-256, scoped by
permission strings and optionally expiring on the world clock."""

from __future__ import annotations

import builtins
import hashlib
import secrets
import uuid
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, Unauthenticated
from hardware.ports.types import ApiKey

if TYPE_CHECKING:
    from twin.engine import Engine

DEFAULT_KEY_NAME = "Default API Key"
_AREA_CHARS = set("abcdefghijklmnopqrstuvwxyz0123456789-_")


def _digest(raw: str) -> str:
    return hashlib.sha256(raw.encode()).hexdigest()


def _key(doc: dict) -> ApiKey:
    return ApiKey(
        id=doc["id"],
        name=doc["name"],
        created_at=doc["created_at"],
        permissions=tuple(doc["permissions"]),
        active=doc["active"],
        expires_at=doc.get("expires_at"),
        preview=doc["hash"][:12] + "…",
    )


def _readable(doc: dict) -> dict:
    _key(doc)
    if not isinstance(doc["hash"], str) or not doc["hash"].isascii():
        raise TypeError("hash must be hex digits")
    return doc


def check_permission(value: str) -> str:
    area, _, mode = value.partition(":")
    if value == "*" or (area and set(area) <= _AREA_CHARS and mode in ("", "read", "write")):
        return value
    raise InvalidInput(
        f"invalid permission {value!r}: use '*', '<area>', '<area>:read' or '<area>:write'",
        field="permissions",
    )


class ApiKeyRing:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.keys = world.store.collection("api_keys")

    def create(
        self,
        name: str,
        permissions: list[str] | None = None,
        expires_at: int | None = None,
        raw: str | None = None,
    ) -> tuple[str, ApiKey]:
        if not name.strip():
            raise InvalidInput("API key name must not be empty", field="name")
        perms = [check_permission(p) for p in permissions or []] or ["*"]
        now = int(self.world.now())
        if expires_at is not None and expires_at <= now:
            raise InvalidInput("expires_at must be in the future", field="expires_at")
        raw = raw or "nmk_" + secrets.token_hex(16)
        doc: dict[str, Any] = {
            "id": str(uuid.UUID(bytes=secrets.token_bytes(16), version=4)),
            "name": name.strip(),
            "created_at": now,
            "permissions": perms,
            "active": True,
            "expires_at": expires_at,
            "hash": _digest(raw),
        }
        self.keys.put(doc["id"], doc)
        return raw, _key(doc)

    def ensure_default(self, raw: str) -> None:
        """Seed the operator-provided default key (``NEOMIND_API_KEY``) once."""
        if not any(doc["hash"] == _digest(raw) for doc in self._docs()):
            self.create(DEFAULT_KEY_NAME, ["*"], raw=raw)

    def authenticate(self, raw: str) -> ApiKey:
        digest = _digest(raw)
        for doc in self._docs():
            if secrets.compare_digest(doc["hash"], digest):
                if not doc["active"]:
                    raise Unauthenticated("API key is inactive")
                if doc.get("expires_at") is not None and doc["expires_at"] <= self.world.now():
                    raise Unauthenticated("API key has expired")
                return _key(doc)
        raise Unauthenticated("Invalid API key")

    def list(self) -> builtins.list[ApiKey]:
        return self.keys.values_as(_key)

    def delete(self, key_id: str) -> bool:
        return self.keys.delete(key_id)

    def status(self) -> tuple[int, bool]:
        docs = self._docs()
        return len(docs), any(doc["name"] == DEFAULT_KEY_NAME for doc in docs)

    def _docs(self) -> builtins.list[dict[str, Any]]:
        """The stored keys that can be read (a damaged one is skipped and counted by the store)."""
        return self.keys.values_as(_readable)
