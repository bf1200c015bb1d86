"""Users, password hashes and JWT sessions of the automation server, kept in durable state.

Tokens are HS256 JWTs ``{sub, username, role, iat, exp}`` valid for seven days of world time with
30 s of skew allowed; a session row (SHA-256 of the token) must exist, so logout revokes.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import uuid
from typing import TYPE_CHECKING

import jwt

from hardware.ports.errors import Conflict, Forbidden, InvalidInput, NotFound, Unauthenticated
from hardware.ports.events import EventKind
from hardware.ports.types import Login, User

if TYPE_CHECKING:
    from twin.engine import Engine

SESSION_LIFETIME_S = 7 * 24 * 60 * 60
ROLES = ("admin", "user", "viewer")
MAX_VERIFIED = 10_000
CLOCK_SKEW_S = 30
SESSION_SWEEP_S = 3600
"""Sessions past their expiry (refused anyway) are deleted at a login, at most once an hour of
world time: the sessions kept are those of the last week's logins, not of every login ever."""
_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")
_SCRYPT = {"n": 2**14, "r": 8, "p": 1}


def hash_password(password: str, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, dklen=32, **_SCRYPT)
    return f"scrypt${salt.hex()}${digest.hex()}"


def verify_password(password: str, stored: str) -> bool:
    _, salt_hex, digest_hex = stored.split("$")
    digest = hashlib.scrypt(password.encode(), salt=bytes.fromhex(salt_hex), dklen=32, **_SCRYPT)
    return hmac.compare_digest(digest.hex(), digest_hex)


def _b64url(part: str) -> bytes:
    return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))


def verify_hs256(token: str, secret: bytes) -> dict:
    """The claims of an HS256 JWT whose signature is valid (expiry is checked by the caller, on the
    world clock). Raises ``Unauthenticated`` with the server's messages."""
    try:
        header, payload, signature = token.split(".")
        expected = hmac.new(secret, f"{header}.{payload}".encode(), hashlib.sha256).digest()
        signed = hmac.compare_digest(_b64url(signature), expected)
        if signed and json.loads(_b64url(header)).get("alg") == "HS256":
            claims = json.loads(_b64url(payload))
            if isinstance(claims, dict):
                return claims
    except (ValueError, UnicodeDecodeError) as err:
        raise Unauthenticated("Invalid token: malformed") from err
    raise Unauthenticated("Invalid token: Invalid signature")


def _token_key(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _user(doc: dict) -> User:
    return User(id=doc["id"], username=doc["username"], role=doc["role"], created_at=doc["created_at"])


class UserDirectory:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.users = world.store.collection("users")
        self.sessions = world.store.collection("sessions")
        self.settings = world.store.collection("settings")
        self._secret_value: bytes | None = None
        self._verified: dict[str, tuple[User, int, str]] = {}
        """Tokens already verified, by token: the user, the expiry and the session key."""
        self._next_sweep = 0.0

    def _secret(self) -> bytes:
        """The signing secret: durable (tokens survive restarts), read from the store once."""
        if self._secret_value is None:
            doc = self.settings.get("jwt_secret")
            if doc is None:
                doc = {"value": secrets.token_hex(32)}
                self.settings.put("jwt_secret", doc)
            self._secret_value = bytes.fromhex(doc["value"])
        return self._secret_value

    def setup_required(self) -> bool:
        return len(self.users) == 0

    def create(self, username: str, password: str, role: str) -> User:
        if username in self.users:
            raise Conflict("User already exists", resource="user")
        doc = {
            "id": str(uuid.UUID(bytes=secrets.token_bytes(16), version=4)),
            "username": username,
            "role": role,
            "created_at": int(self.world.now()),
            "password": hash_password(password),
        }
        self.users.put(username, doc)
        self.world.emit(EventKind.USER_CREATED, "automation", username=username, role=role)
        return _user(doc)

    def initialize(self, username: str, password: str, email: str | None) -> Login:
        if not self.setup_required():
            raise Conflict("Setup has already been completed", resource="setup")
        if len(username.strip()) < 3:
            raise InvalidInput("Username must be at least 3 characters", field="username")
        if email is not None and email != "" and not _EMAIL.match(email):
            raise InvalidInput("Invalid email address", field="email")
        if len(password) < 8 or not (re.search(r"[A-Za-z]", password) and re.search(r"\d", password)):
            raise InvalidInput(
                "Password must be at least 8 characters and contain letters and digits", field="password"
            )
        user = self.create(username.strip(), password, "admin")
        return Login(token=self._issue(user), user=user)

    def login(self, username: str, password: str) -> Login:
        doc = self.users.get(username)
        if doc is None or not verify_password(password, doc["password"]):
            raise Unauthenticated("Invalid username or password")
        user = _user(doc)
        return Login(token=self._issue(user), user=user)

    def _issue(self, user: User) -> str:
        iat = int(self.world.now())
        exp = iat + SESSION_LIFETIME_S
        claims = {
            "sub": user.id,
            "username": user.username,
            "role": user.role,
            "iat": iat,
            "exp": exp,
            "jti": secrets.token_hex(8),
        }
        token = jwt.encode(claims, self._secret(), algorithm="HS256")
        self._sweep_sessions(iat)
        self.sessions.put(_token_key(token), {"username": user.username, "exp": exp})
        return token

    def _sweep_sessions(self, now: float) -> None:
        if now < self._next_sweep:
            return
        self._next_sweep = now + SESSION_SWEEP_S
        for key, doc in self.sessions.items():
            if doc.get("exp", 0) + CLOCK_SKEW_S < now:
                self._forget(key)
                self.sessions.delete(key)

    def _forget(self, key: str) -> None:
        """Forget the verified token of session ``key`` (a logout, a removed user, an expired session)."""
        for token in [t for t, (_, _, k) in self._verified.items() if k == key]:
            del self._verified[token]

    def authenticate(self, token: str) -> User:
        """Signature, expiry (world clock), then the session and its user. A token already
        verified is remembered in memory by the token itself (logout and user removal forget it),
        so the common case is one dictionary lookup and the expiry check, no hash at all."""
        known = self._verified.get(token)
        if known is None:
            key = _token_key(token)
            claims = verify_hs256(token, self._secret())
            exp = claims.get("exp", 0)
            if exp + CLOCK_SKEW_S < self.world.now():
                raise Unauthenticated("Token has expired")
            if key not in self.sessions:
                raise Unauthenticated("Session has been revoked")
            doc = self.users.get(claims.get("username", ""))
            if doc is None:
                raise Unauthenticated("Session has been revoked")
            if len(self._verified) >= MAX_VERIFIED:
                self._verified.clear()
            known = self._verified[token] = (_user(doc), exp, key)
        user, exp, _ = known
        if exp + CLOCK_SKEW_S < self.world.now():
            raise Unauthenticated("Token has expired")
        return user

    def logout(self, token: str) -> None:
        key = _token_key(token)
        self._verified.pop(token, None)
        self._forget(key)
        self.sessions.delete(key)

    # Self-service registration, administration, passwords -------------------------------------
    def registration_enabled(self) -> bool:
        return bool((self.settings.get("auth") or {}).get("registration_enabled", False))

    def set_registration(self, enabled: bool) -> None:
        self.settings.put("auth", {"registration_enabled": enabled})

    def register(self, username: str, password: str, *, earlier_release: bool = False) -> Login:
        """Registrants get the regular role, whatever they ask for. The earlier release had open
        registration in which the first registered user became the administrator."""
        if not earlier_release and not self.registration_enabled():
            raise Forbidden("Registration is disabled; an administrator can enable it")
        self._check_new(username, password)
        role = "admin" if earlier_release and self.setup_required() else "user"
        user = self.create(username, password, role)
        return Login(token=self._issue(user), user=user)

    def add(self, username: str, password: str, role: str) -> User:
        if role not in ROLES:
            raise InvalidInput(f"role must be one of {', '.join(ROLES)}", field="role")
        self._check_new(username, password)
        return self.create(username, password, role)

    def list(self) -> list[User]:
        return [_user(doc) for doc in self.users.values()]

    def remove(self, username: str, actor: User) -> None:
        if username == actor.username:
            raise InvalidInput("Cannot delete your own account", field="username")
        if not self.users.delete(username):
            raise NotFound(f"User '{username}' not found", resource="user")
        for key, doc in self.sessions.items():
            if doc["username"] == username:
                self._forget(key)
                self.sessions.delete(key)

    def change_password(self, user: User, old: str, new: str) -> None:
        doc = self.users.get(user.username)
        if doc is None or not verify_password(old, doc["password"]):
            raise InvalidInput("Current password is incorrect", field="old_password")
        if len(new) < 6:
            raise InvalidInput("New password must be at least 6 characters", field="new_password")
        doc["password"] = hash_password(new)
        self.users.put(user.username, doc)

    @staticmethod
    def _check_new(username: str, password: str) -> None:
        if len(username.strip()) < 3:
            raise InvalidInput("Username must be at least 3 characters", field="username")
        if len(password) < 6:
            raise InvalidInput("Password must be at least 6 characters", field="password")
