"""HTTP requests the server makes for a client, where the vendor makes them (a remote instance's
health probe, the Ollama model list), behind a fence:

- the URL's host is resolved once, and every address it resolves to is checked against the fence
  before anything connects. Whatever the spelling (``127.1``, ``2130706433``, ``0x7f.1``,
  ``[::ffff:127.0.0.1]``, a name), the check is on the address it means: IPv4-mapped, -compatible
  and NAT64 IPv6 addresses are checked as the IPv4 address inside them;
- the connection goes to the checked address (the URL's host stays in ``Host`` and is the TLS server
  name, so certificates are verified for it): nothing resolves the name a second time, and no proxy
  from the environment steps in;
- redirects are followed as the vendor's HTTP client (reqwest) follows them, at most
  :data:`MAX_REDIRECTS`, each hop resolved and fenced the same way; a stored credential goes only to
  the origin it was stored for: the headers named as ``credentials`` are dropped from the first hop
  that leaves it;
- at most ``max_body`` bytes of an answer are read.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from typing import Any

import httpx

MAX_REDIRECTS = 10
"""reqwest's default redirect policy."""
MAX_BODY = 4 * 1024 * 1024
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network


def _nets(*cidrs: str) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(c) for c in cidrs)


def plain(addr: Address) -> Address:
    """The IPv4 address inside an IPv4-mapped, IPv4-compatible or NAT64 IPv6 address, else ``addr``."""
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.ipv4_mapped is not None:
            return addr.ipv4_mapped
        if addr in NAT64 or (int(addr) >> 32 == 0 and int(addr) > 1):
            return ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
    return addr


@dataclass(frozen=True)
class Fence:
    """Addresses a kind of request never goes to."""

    blocked: tuple[Network, ...]

    def blocks(self, addr: Address) -> bool:
        addr = plain(addr)
        return any(addr.version == net.version and addr in net for net in self.blocked)


INSTANCE_FENCE = Fence(
    _nets("127.0.0.0/8", "0.0.0.0/8", "169.254.169.254/32", "::1/128", "::/128", "fd00:ec2::254/128")
)
"""The vendor's instance probe refuses localhost, 127.0.0.1, [::1], 0.0.0.0 and the cloud metadata
address: here every address that means one of them (all of loopback, all of "this host")."""
METADATA_FENCE = Fence(_nets("169.254.0.0/16", "fe80::/10", "fd00:ec2::254/128"))
"""Link-local addresses, the cloud metadata service among them (for targets the vendor lets be on
this host or the LAN, such as Ollama)."""


class OutboundError(Exception):
    def __init__(self, message: str, url: str) -> None:
        super().__init__(message)
        self.url = url


class Blocked(OutboundError):
    """A hop's host resolves to a fenced address; nothing was sent to it."""

    def __init__(self, address: Address, url: str, hop: int) -> None:
        super().__init__(f"{url} resolves to a blocked address ({address})", url)
        self.address = address
        self.hop = hop


class Unreachable(OutboundError):
    """The request could not be made or answered (bad URL, no such host, refused, timed out...)."""


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes
    url: str

    def json(self) -> Any:
        import json

        return json.loads(self.body)


def status_line(code: int) -> str:
    """``404 Not Found``: a status as reqwest shows it (the canonical reason, never the far end's words)."""
    try:
        return f"{code} {HTTPStatus(code).phrase}"
    except ValueError:
        return str(code)


async def resolve(host: str, port: int) -> list[Address]:
    """Every address ``host`` resolves to (IP literals in any spelling the C library takes included)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as err:
        raise Unreachable(f"cannot resolve {host}: {err}", host) from err
    out: list[Address] = []
    for info in infos:
        addr = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if addr not in out:
            out.append(addr)
    return out


def _origin(url: httpx.URL) -> tuple[str, str, int | None]:
    return url.scheme, url.host, url.port


async def request(
    method: str,
    url: str,
    fence: Fence,
    *,
    headers: Mapping[str, str] | None = None,
    credentials: Iterable[str] = (),
    json: Any = None,
    timeout: float = 10.0,
    max_redirects: int = MAX_REDIRECTS,
    max_body: int = MAX_BODY,
) -> Answer:
    """One fenced exchange (see the module); raises :class:`Blocked` or :class:`Unreachable`."""
    try:
        current = httpx.URL(url)
    except (httpx.InvalidURL, TypeError) as err:
        raise Unreachable(f"invalid URL: {err}", url) from err
    origin, secret = _origin(current), {c.lower() for c in credentials}
    sent = dict(headers or {})
    try:
        async with asyncio.timeout(timeout):
            async with httpx.AsyncClient(timeout=timeout, follow_redirects=False, trust_env=False) as client:
                for hop in range(max_redirects + 1):
                    if current.scheme not in ("http", "https") or not current.host:
                        raise Unreachable("builder error: not an http(s) URL with a host", str(current))
                    port = current.port or (443 if current.scheme == "https" else 80)
                    addrs = await resolve(current.host, port)
                    blocked = next((a for a in addrs if fence.blocks(a)), None)
                    if blocked is not None:
                        raise Blocked(plain(blocked), str(current), hop)
                    if _origin(current) != origin:
                        sent = {k: v for k, v in sent.items() if k.lower() not in secret}
                    target = current.copy_with(host=str(addrs[0]))
                    ext = {"sni_hostname": current.host} if current.scheme == "https" else {}
                    hop_headers = {**sent, "Host": current.netloc.decode("ascii")}
                    async with client.stream(
                        method, target, headers=hop_headers, json=json, extensions=ext
                    ) as resp:
                        location = resp.headers.get("location")
                        if resp.is_redirect and location is not None and hop < max_redirects:
                            current = current.join(location)
                            if resp.status_code in (301, 302, 303) and method not in ("GET", "HEAD"):
                                method, json = "GET", None
                            continue
                        body = bytearray()
                        async for chunk in resp.aiter_bytes():
                            body += chunk
                            if len(body) > max_body:
                                raise Unreachable(f"answer larger than {max_body} bytes", str(current))
                        return Answer(resp.status_code, bytes(body), str(current))
    except TimeoutError as err:
        raise Unreachable("operation timed out", str(current)) from err
    except httpx.HTTPError as err:
        raise Unreachable(f"{type(err).__name__}", str(current)) from err
    raise Unreachable("too many redirects", str(current))
