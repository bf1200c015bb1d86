"""The automation server's own addresses, worked out once at the composition root from the settings.

``ip`` is ``NEOMIND_PUBLIC_HOST`` when set, else the bind address when it names one interface, else this
host's LAN address (the source address of a route to the outside; no packet is sent).
"""

from __future__ import annotations

import contextlib
import socket

from hardware.ports.system import NetworkInfo
from twin.settings import Settings

WILDCARDS = frozenset({"", "0.0.0.0", "::"})
LOOPBACK = "127.0.0.1"


def lan_ip() -> str:
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.1", 9))  # TEST-NET-1: only selects a route, nothing is sent
        return sock.getsockname()[0]
    return LOOPBACK


def network_info(settings: Settings) -> NetworkInfo:
    ip = settings.public_host or (settings.host if settings.host not in WILDCARDS else lan_ip())
    return NetworkInfo(
        ip=ip,
        port=settings.port,
        server_url=settings.server_url,
        mqtt_url=settings.mqtt_url,
        mqtt_port=settings.mqtt_port,
    )
