"""Key material made once per process ("at start") and kept across world resets.

Keys are secrets, not world state: they come from the OS's randomness, never from the seed,
and never enter traces or logs.
"""

from __future__ import annotations

import secrets

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa


class KeyRing:
    def __init__(self) -> None:
        self._rsa: dict[str, rsa.RSAPrivateKey] = {}
        self._secrets: dict[str, bytes] = {}

    def rsa_key(self, owner: str) -> rsa.RSAPrivateKey:
        """The RSA-2048 key pair of ``owner`` (one per camera), generated on first use."""
        key = self._rsa.get(owner)
        if key is None:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            self._rsa[owner] = key
        return key

    def public_pem(self, owner: str) -> str:
        return (
            self.rsa_key(owner)
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
            .decode()
        )

    def secret(self, name: str, size: int = 32) -> bytes:
        value = self._secrets.get(name)
        if value is None:
            value = secrets.token_bytes(size)
            self._secrets[name] = value
        return value
