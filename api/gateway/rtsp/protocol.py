"""RTSP/1.0 messages as the camera daemon reads and writes them (RFC 2326).

A request is a request line, headers and a blank line (a body, if ``Content-Length`` announces one,
is read and ignored); the daemon answers ``RTSP/1.0 <code> <reason>``, ``CSeq`` first, then its
headers and, with a body, ``Content-Length``. The stream is the first path segment of the URI,
whatever follows it (``/main``, ``rtsp://host:8554/main/trackID=0``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_REQUEST = 16 * 1024
"""Past this many bytes without the end of a request's headers the connection is closed."""
REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    455: "Method Not Valid in This State",
    461: "Unsupported Transport",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    uri: str
    headers: dict[str, str] = field(default_factory=dict)
    """Keyed by lower-case name."""

    @property
    def cseq(self) -> int:
        value = self.headers.get("cseq", "").strip()
        return int(value) if value.isdigit() else 0

    def header(self, name: str) -> str | None:
        return self.headers.get(name.lower())


def parse_request(head: bytes) -> Request | None:
    """A request's line and headers (up to the blank line); None if the request line is not
    ``METHOD URI VERSION`` (the daemon ignores such a message)."""
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].strip().split(" ")
    if len(parts) < 3 or not parts[0] or not parts[1]:
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    return Request(parts[0], parts[1], headers)


def response(code: int, cseq: int, headers: list[tuple[str, str]] | None = None, body: bytes = b"") -> bytes:
    lines = [f"RTSP/1.0 {code} {REASONS.get(code, 'Error')}", f"CSeq: {cseq}"]
    lines += [f"{name}: {value}" for name, value in headers or ()]
    if body:
        lines.append(f"Content-Length: {len(body)}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def path_of(uri: str) -> str:
    """The URI's path (``/`` when it has none)."""
    scheme = uri.find("://")
    if scheme < 0:
        return uri.split("?")[0] or "/"
    slash = uri.find("/", scheme + 3)
    return uri[slash:].split("?")[0] if slash >= 0 else "/"


def stream_name(uri: str) -> str:
    """The stream a URI names: its path without the leading ``/`` and any ``/track…`` suffix."""
    path = path_of(uri).removeprefix("/")
    return path.split("/track")[0]


def track_id(uri: str) -> int:
    _, found, rest = uri.partition("trackID=")
    digits = "".join(c for c in rest[:9] if c.isdigit()) if found else ""
    return int(digits) if digits else 0


@dataclass(frozen=True, slots=True)
class Transport:
    """A SETUP's transport: RTP interleaved on the RTSP connection, or over UDP to the client's
    ``client_port`` pair."""

    tcp: bool
    channels: tuple[int, int] = (0, 1)
    client_ports: tuple[int, int] = (0, 0)


def _pair(text: str) -> tuple[int, int] | None:
    low, _, high = text.partition("-")
    if not low.strip().isdigit():
        return None
    first = int(low)
    second = int(high) if high.strip().isdigit() else first + 1
    return first, second


def parse_transport(value: str, udp: bool) -> Transport | None:
    """The transport the server takes from a ``Transport`` header, None for 461. The daemon takes
    anything but plain ``RTP/AVP`` (UDP) as TCP interleaved (channels 0-1 unless given); UDP unicast
    with a ``client_port`` pair is taken only where ``udp`` is on."""
    spec = value.split(",")[0]
    params = [p.strip() for p in spec.split(";")]
    if "RTP/AVP" in spec and "TCP" not in spec:
        ports = next((_pair(p[12:]) for p in params if p.startswith("client_port=")), None)
        if not udp or "multicast" in params or ports is None or not all(0 < p < 65536 for p in ports):
            return None
        return Transport(False, client_ports=ports)
    channels = next((_pair(p[12:]) for p in params if p.startswith("interleaved=")), None) or (0, 1)
    if not all(0 <= c < 256 for c in channels):
        return None
    return Transport(True, channels=channels)
