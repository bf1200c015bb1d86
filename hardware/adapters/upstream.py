"""A real endpoint behind the twin: its base URL, one pooled HTTP client, and how to reach its
WebSockets. Certificates are verified unless this member was configured as insecure (a device's
self-signed certificate); the choice never spreads to any other connection.

Nothing here logs the endpoint's address: logs name the member, never where it lives.
"""

from __future__ import annotations

import logging
import ssl
from dataclasses import dataclass, field
from http.cookiejar import CookieJar, DefaultCookiePolicy
from urllib.parse import urlsplit

import httpx

log = logging.getLogger("twin.passthrough")

CONNECT_TIMEOUT_S = 10.0
PROBE_TIMEOUT_S = 5.0
MAX_CONNECTIONS = 256
"""Connections to one real endpoint at once (open event streams each hold one)."""


def _no_cookies() -> CookieJar:
    """A jar that keeps nothing: the client is shared by every caller, so a cookie one caller's
    response set must never ride along on another's request."""
    return CookieJar(DefaultCookiePolicy(allowed_domains=[]))


@dataclass
class Upstream:
    name: str
    """The member's name in the twin (``automation``, a camera id): what logs show."""
    url: str
    """Base URL, ``http://host:port`` or ``https://host:port``, no path."""
    insecure: bool = False
    """Accept any certificate from this endpoint (self-signed on the device)."""
    _client: httpx.AsyncClient | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"{self.name}: a real endpoint is an http:// or https:// URL")
        if parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"{self.name}: a real endpoint's URL has no path, query or fragment")
        self.url = f"{parts.scheme}://{parts.netloc}"

    @property
    def client(self) -> httpx.AsyncClient:
        """One pooled client per endpoint, made on first use (on the serving event loop)."""
        if self._client is None:
            self._client = httpx.AsyncClient(
                base_url=self.url,
                verify=self._tls() if self.url.startswith("https:") else True,
                timeout=httpx.Timeout(CONNECT_TIMEOUT_S, read=None, pool=None),
                limits=httpx.Limits(max_connections=MAX_CONNECTIONS, max_keepalive_connections=32),
                follow_redirects=False,
                trust_env=False,  # an environment proxy must not sit between the twin and a device
                cookies=_no_cookies(),
            )
        return self._client

    def _tls(self) -> ssl.SSLContext:
        context = ssl.create_default_context()
        if self.insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        return context

    def ws_url(self, target: str) -> str:
        """``target``: the path and query as the client sent them."""
        return ("wss" + self.url[5:] if self.url.startswith("https:") else "ws" + self.url[4:]) + target

    def ws_tls(self) -> ssl.SSLContext | None:
        return self._tls() if self.url.startswith("https:") else None

    async def probe(self, path: str, headers: dict[str, str] | None = None) -> int | None:
        """The status of one GET of the twin's own (startup check); ``None`` if unreachable."""
        try:
            response = await self.client.get(path, headers=headers, timeout=PROBE_TIMEOUT_S)
        except httpx.HTTPError as err:
            log.warning("twin: real %s is unreachable (%s)", self.name, type(err).__name__)
            return None
        return response.status_code

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None
