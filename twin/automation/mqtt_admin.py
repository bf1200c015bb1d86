"""The embedded broker's administration: its stored configuration, the user credentials it accepts once
authentication is on, its certificates, and the server's own (system) login.

Like the real server, nothing is stored until a change is made: until then the configuration is the
broker's actual bind. A change of listen address, port or TLS restarts the broker on the new bind
(through the :class:`~hardware.ports.mqtt.MqttLink` the composition root hands in); turning
authentication on or off takes effect on the next connection without a restart. The stored
configuration is the one the broker starts with next time.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import secrets
import string
from typing import TYPE_CHECKING, Any

from hardware.ports.errors import InvalidInput, NotFound
from hardware.ports.mqtt import SYSTEM_USER, BrokerConfig, TlsFiles, TlsPems
from twin.automation import mqtt_tls
from twin.automation.users import hash_password, verify_password

if TYPE_CHECKING:
    from twin.engine import Engine

MAX_CREDENTIALS = 100
RESERVED_PREFIX = "__neomind"
_ALPHANUMERIC = string.ascii_letters + string.digits


class BrokerSettings:
    """Durable: the ``mqtt_broker`` collection (``config``, ``tls``, ``system``) and ``mqtt_credentials``."""

    def __init__(self, world: Engine) -> None:
        self.world = world
        self.docs = world.store.collection("mqtt_broker")
        self.credentials = world.store.collection("mqtt_credentials")

    # Configuration -------------------------------------------------------------------------------
    def stored(self) -> BrokerConfig | None:
        doc = self.docs.get("config")
        return BrokerConfig(**doc["config"]) if doc else None

    def config(self, default: tuple[str, int]) -> BrokerConfig:
        """The stored configuration, else the broker's actual bind ``default`` with the defaults."""
        return self.stored() or BrokerConfig(*default)

    def save(self, config: BrokerConfig) -> None:
        self.docs.put("config", {"config": dataclasses.asdict(config)})

    def update(
        self,
        current: BrokerConfig,
        listen: str | None,
        port: int | None,
        auth_enabled: bool | None,
        tls_enabled: bool | None,
    ) -> BrokerConfig:
        if self.stored() is None:  # the first change keeps the configuration in force
            self.save(current)
        changes: dict[str, Any] = {}
        if listen is not None:
            try:
                ipaddress.ip_address(listen)
            except ValueError:
                raise InvalidInput(
                    f"Invalid listen address: '{listen}'. Must be a valid IP address (e.g. 0.0.0.0, "
                    "127.0.0.1, ::)",
                    field="listen",
                ) from None
            changes["listen"] = listen
        if port is not None:
            if not 1024 <= port <= 65535:
                raise InvalidInput("Port must be between 1024 and 65535", field="port")
            changes["port"] = port
        if auth_enabled is not None:
            changes["auth_enabled"] = auth_enabled
        if tls_enabled is not None:
            if tls_enabled and current.tls_cert_path is None:
                raise InvalidInput(
                    "Cannot enable TLS: no certificates configured. Upload or generate certificates first.",
                    field="tls_enabled",
                )
            changes["tls_enabled"] = tls_enabled
        config = dataclasses.replace(current, **changes)
        if config.auth_enabled:
            self.system_password()
        self.save(config)
        return config

    # The server's own login ---------------------------------------------------------------------
    def system_password(self) -> str:
        """Made the first time authentication is turned on (16 letters and digits)."""
        doc = self.docs.get("system")
        if doc is None:
            doc = {"password": "".join(secrets.choice(_ALPHANUMERIC) for _ in range(16))}
            self.docs.put("system", doc)
        return doc["password"]

    def system_login(self) -> tuple[str, str] | None:
        config, doc = self.stored(), self.docs.get("system")
        if config is None or not config.auth_enabled or doc is None:
            return None
        return SYSTEM_USER, doc["password"]

    # Authentication (asked by the broker on every connection) -----------------------------------
    def required(self) -> bool:
        config = self.stored()
        return config is not None and config.auth_enabled

    def check(self, username: str | None, password: str | None) -> bool:
        if not username or password is None:
            return False
        if username == SYSTEM_USER:
            doc = self.docs.get("system")
            return doc is not None and secrets.compare_digest(doc["password"], password)
        cred = self.credentials.get(username)
        return cred is not None and verify_password(password, cred["hash"])

    # Credentials ---------------------------------------------------------------------------------
    def usernames(self) -> list[str]:
        return sorted(u for u, _ in self.credentials.items() if not u.startswith(RESERVED_PREFIX))

    def add_credential(self, username: str, password: str) -> None:
        if not username or len(username) > 64:
            raise InvalidInput("Username must be 1-64 characters", field="username")
        if username.startswith(RESERVED_PREFIX):
            raise InvalidInput(
                "Username cannot start with '__neomind' (reserved for system use)", field="username"
            )
        if len(password) < 4:
            raise InvalidInput("Password must be at least 4 characters", field="password")
        if username in self.credentials:
            raise InvalidInput(f"Username '{username}' already exists", field="username")
        if len(self.credentials) >= MAX_CREDENTIALS:
            raise InvalidInput(f"Maximum credential limit ({MAX_CREDENTIALS}) reached", field="username")
        self.credentials.put(username, {"username": username, "hash": hash_password(password)})

    def delete_credential(self, username: str) -> None:
        if username.startswith(RESERVED_PREFIX):
            raise InvalidInput(
                "Cannot delete system credentials (starting with '__neomind')", field="username"
            )
        if not self.credentials.delete(username):
            raise NotFound(f"Credential not found: {username} not found", resource="credential")

    # Certificates --------------------------------------------------------------------------------
    def upload_tls(self, current: BrokerConfig, cert_pem: str, key_pem: str, ca_pem: str | None) -> TlsFiles:
        mqtt_tls.check_pem(cert_pem, "certificate")
        mqtt_tls.check_pem(key_pem, "private key")
        if ca_pem is not None:
            mqtt_tls.check_pem(ca_pem, "CA certificate")
        self.docs.put("tls", {"cert": cert_pem, "key": key_pem, "ca": ca_pem})
        return self._use_files(current, ca_pem is not None)

    def generate_tls(self, current: BrokerConfig) -> TlsFiles:
        pems, ca_key = mqtt_tls.generate(self.world.now())
        self.docs.put("tls", {"cert": pems.cert, "key": pems.key, "ca": pems.ca, "ca_key": ca_key})
        return self._use_files(current, True)

    def _use_files(self, current: BrokerConfig, with_ca: bool) -> TlsFiles:
        files = TlsFiles(mqtt_tls.CERT_PATH, mqtt_tls.KEY_PATH, mqtt_tls.CA_PATH if with_ca else None)
        config = dataclasses.replace(
            current, tls_cert_path=files.cert_path, tls_key_path=files.key_path, tls_ca_path=files.ca_path
        )
        self.save(config)
        return files

    def pems(self) -> TlsPems | None:
        doc = self.docs.get("tls")
        return TlsPems(doc["cert"], doc["key"], doc.get("ca")) if doc else None

    def ca_cert(self, current: BrokerConfig) -> str:
        if current.tls_ca_path is None:
            raise NotFound("No CA certificate configured not found", resource="ca_cert")
        pems = self.pems()
        if pems is None or pems.ca is None:
            raise NotFound(
                "CA certificate file not found: No such file or directory (os error 2) not found",
                resource="ca_cert",
            )
        return pems.ca
