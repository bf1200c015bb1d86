"""The fixture ``twin record`` writes and a scenario's ``replay:`` serves: what a real device or
server answered during a field session, each answer at its offset in seconds from the start.

Format (version 1): NDJSON, UTF-8, one JSON object a line. The first line is the header::

    {"format": "twin-fixture", "version": 1, "vendor": "gateway", "started": 1790000000.0}

``vendor`` is ``gateway`` (a camera's edge gateway) or ``automation`` (the automation server);
``started`` is the unix time the recording began (for people; replay never reads it). Every
other line is a record; ``t`` is its offset in seconds from the start (records need not be in
order of ``t``: an exchange is written when it ends, at the offset it began):

- ``{"t", "kind": "http", "method", "path", "query", "body_sha256", "auth", "status",
  "headers", "body" | "body_b64"}``: one request and its answer. ``query`` is the query string
  with the values of token, key, password and secret parameters masked (``***``);
  ``body_sha256`` the hex SHA-256 of the request body (``null`` without one); ``auth`` whether
  the request carried credentials; ``headers`` the answer's headers that matter (``[name,
  value]`` pairs: content type and encoding, ``Retry-After``, ``WWW-Authenticate``...);
  ``body`` the answer's bytes as text when they are UTF-8 and not compressed, else ``body_b64``.
- ``{"t", "kind": "stream", "id", "transport": "ws" | "sse", "path", "query", "auth",
  "status", "headers", "subprotocol", "body" | "body_b64"}``: an event stream opened (status 101
  for a WebSocket, the answer's status for SSE) or refused (any other status, with its body).
- ``{"t", "kind": "frame", "stream", "text" | "b64", "opening"}``: a WebSocket frame (text or
  binary) or a chunk of an SSE body, as the real side sent it. ``opening`` (default ``false``)
  marks a frame sent within :data:`OPENING_S` of the stream's opening or of the client's first
  message: a greeting, the answer to a sign-in, a codec configuration, which a replay sends as
  soon as its client connects.
- ``{"t", "kind": "close", "stream", "code"}``: the real side ended the stream (a WebSocket's
  close code; ``null`` for SSE). A stream still open when the recording ended has none.
- ``{"t", "kind": "end"}``: the recording ended here (absent if the recorder was killed).

Secrets are never written: request headers and request bodies are not recorded at all (a body is
a digest only, and a login's not even that); logins and key management are not recorded (the
replay answers them itself); credentials in queries are masked; string values of keys named like
token, password, secret or API key, and any credential seen during the session, are masked
(``***``) wherever they appear in an answer or a frame (:mod:`api.members.redact`).

:func:`load_fixture` checks a file strictly: a problem is a :class:`FixtureError` naming the
file, the line and the key path (``fixture.ndjson:3: status: ...``).
"""

from __future__ import annotations

import base64
import binascii
import bisect
import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Final, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    model_validator,
)

FORMAT: Final = "twin-fixture"
VERSION: Final = 1
VENDORS = ("gateway", "automation")
OPENING_S = 0.5
"""A frame sent within this many seconds of its stream's opening, or of the client's first message,
is an opening frame (see the format)."""


class FixtureError(ValueError):
    """A fixture that cannot be replayed; ``problems`` are ``file:line: path: message`` lines."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


Offset = Annotated[float, Field(ge=0, allow_inf_nan=False)]
Headers = list[tuple[str, str]]


class Header(_Strict):
    format: Literal["twin-fixture"]
    version: Literal[1]
    vendor: Literal["gateway", "automation"]
    started: float | None = None


def _check_base64(value: str | None, key: str) -> None:
    if value is not None:
        try:
            base64.b64decode(value, validate=True)
        except binascii.Error as err:
            raise ValueError(f"'{key}' is not base64: {err}") from err


class _Body(_Strict):
    body: str | None = None
    body_b64: str | None = None

    @model_validator(mode="after")
    def _one_body(self) -> _Body:
        if self.body is not None and self.body_b64 is not None:
            raise ValueError("give at most one of 'body' and 'body_b64'")
        _check_base64(self.body_b64, "body_b64")
        return self

    @property
    def content(self) -> bytes:
        if self.body_b64 is not None:
            return base64.b64decode(self.body_b64)
        return (self.body or "").encode()


class Http(_Body):
    t: Offset
    kind: Literal["http"]
    method: str = Field(pattern=r"^[A-Z]+$")
    path: str = Field(pattern=r"^/")
    query: str = ""
    body_sha256: str | None = Field(default=None, pattern=r"^[0-9a-f]{64}$")
    auth: bool = False
    status: int = Field(ge=100, le=599)
    headers: Headers = Field(default_factory=list)

    @property
    def opened(self) -> Http:
        """The record itself (a :class:`Recorded` stream's is its opening), to read either alike."""
        return self


class Stream(_Body):
    t: Offset
    kind: Literal["stream"]
    id: int = Field(ge=1)
    transport: Literal["ws", "sse"]
    path: str = Field(pattern=r"^/")
    query: str = ""
    auth: bool = False
    status: int = Field(ge=100, le=599)
    headers: Headers = Field(default_factory=list)
    subprotocol: str | None = None


class Frame(_Strict):
    t: Offset
    kind: Literal["frame"]
    stream: int = Field(ge=1)
    text: str | None = None
    b64: str | None = None
    opening: bool = False

    @model_validator(mode="after")
    def _one_payload(self) -> Frame:
        if (self.text is None) == (self.b64 is None):
            raise ValueError("give exactly one of 'text' and 'b64'")
        _check_base64(self.b64, "b64")
        return self

    @property
    def payload(self) -> str | bytes:
        return self.text if self.text is not None else base64.b64decode(self.b64 or "")


class Close(_Strict):
    t: Offset
    kind: Literal["close"]
    stream: int = Field(ge=1)
    code: int | None = Field(default=None, ge=1000, le=4999)


class End(_Strict):
    t: Offset
    kind: Literal["end"]


Record = Annotated[Http | Stream | Frame | Close | End, Field(discriminator="kind")]
_RECORD: TypeAdapter[Http | Stream | Frame | Close | End] = TypeAdapter(Record)


@dataclass
class Recorded:
    """A recorded stream with its frames (in order of ``t``) and its close, if the real side closed it."""

    opened: Stream
    frames: list[Frame] = field(default_factory=list)
    close: Close | None = None


@dataclass
class Fixture:
    """A loaded fixture: answers by (method, path, query), streams by (transport, path, query)."""

    vendor: str
    answers: dict[tuple[str, str, str], list[Http | Recorded]]
    """SSE streams are answers to a GET too; each list in order of ``t``."""
    sockets: dict[tuple[str, str], list[Recorded]]
    end: float | None = None

    def answer(
        self, method: str, path: str, query: str, digest: str | None, auth: bool, t: float
    ) -> Http | Recorded | None:
        """The latest answer recorded at or before ``t`` for this request (the first one before the
        first recording), preferring answers to requests like it: with credentials or without, then
        with the same body."""
        found = self.answers.get((method, path, query))
        if not found:
            return None
        found = [a for a in found if a.opened.auth == auth] or found
        same: list[Http | Recorded] = (
            [a for a in found if isinstance(a, Http) and a.body_sha256 == digest] if digest else []
        )
        return _at(same or found, t)

    def socket(self, path: str, query: str, t: float) -> Recorded | None:
        found = self.sockets.get((path, query))
        return _at(found, t) if found else None


_T = TypeVar("_T", Http, Recorded, Http | Recorded)


def _time(item: Http | Recorded) -> float:
    return item.opened.t


def _at(items: list[_T], t: float) -> _T:
    times = [_time(i) for i in items]
    return items[max(0, bisect.bisect_right(times, t) - 1)]


def _problem(line: int, error: Mapping[str, Any], skip: int = 1, whole: str = "record") -> tuple[int, str]:
    """A validation error at its key path; ``skip``: the leading parts of the path that are no key
    (a record's kind, which picked its model)."""
    where = ".".join(str(p) for p in error["loc"][skip:])
    message = "unknown key" if error["type"] == "extra_forbidden" else error["msg"]
    return line, f"{where or whole}: {message}"


def parse_fixture(text: str, source: str = "<fixture>") -> Fixture:
    """The fixture in ``text``; raises :class:`FixtureError` with every problem, by line."""
    lines = text.splitlines()
    problems: list[tuple[int, str]] = []  # (line, what is wrong there)
    header: Header | None = None
    records: list[tuple[int, Http | Stream | Frame | Close | End]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            problems.append((number, f"not JSON: {err.msg} (column {err.colno})"))
            continue
        if not isinstance(data, dict):
            problems.append((number, "a line is a JSON object"))
            continue
        if header is None and not records and "format" in data:
            try:
                header = Header.model_validate(data)
            except ValidationError as err:
                problems += [_problem(number, e, 0, "header") for e in err.errors()]
                header = Header(format=FORMAT, version=VERSION, vendor="gateway")  # read on
            continue
        if header is None and not records:
            problems.append((number, "the first line is the header: format, version, vendor"))
        try:
            records.append((number, _RECORD.validate_python(data)))
        except ValidationError as err:
            problems += [_problem(number, e) for e in err.errors()]
    if header is None and not problems:
        problems.append((1, "empty: the first line is the header: format, version, vendor"))
    fixture = Fixture(header.vendor if header else "gateway", {}, {})
    problems += _index(fixture, records)
    if problems:
        raise FixtureError(
            [f"{source}:{line}: {what}" for line, what in sorted(problems, key=lambda p: p[0])]
        )
    return fixture


def _index(fixture: Fixture, records: Sequence[tuple[int, object]]) -> list[tuple[int, str]]:
    problems: list[tuple[int, str]] = []
    streams: dict[int, Recorded] = {}
    for number, record in records:
        if isinstance(record, Stream):
            if record.id in streams:
                problems.append((number, f"id: stream {record.id} is opened twice"))
                continue
            streams[record.id] = recorded = Recorded(record)
            if record.transport == "ws":
                fixture.sockets.setdefault((record.path, record.query), []).append(recorded)
            else:
                fixture.answers.setdefault(("GET", record.path, record.query), []).append(recorded)
        elif isinstance(record, Http):
            fixture.answers.setdefault((record.method, record.path, record.query), []).append(record)
        elif isinstance(record, End):
            fixture.end = record.t
    for number, record in records:
        if isinstance(record, Frame | Close):
            owner = streams.get(record.stream)
            if owner is None:
                problems.append((number, f"stream: stream {record.stream} is not opened in this file"))
            elif isinstance(record, Frame):
                owner.frames.append(record)
            else:
                owner.close = record
    for recorded in streams.values():
        recorded.frames.sort(key=lambda f: f.t)
    for answers in fixture.answers.values():
        answers.sort(key=_time)
    for sockets in fixture.sockets.values():
        sockets.sort(key=_time)
    return problems


@functools.lru_cache(maxsize=16)
def _cached(path: Path, _mtime: int, _size: int) -> Fixture:
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise FixtureError([f"{path}:1: not UTF-8 text ({err.reason})"]) from err
    except OSError as err:
        raise FixtureError([f"{path}: cannot read: {err.strerror}"]) from err
    return parse_fixture(text, str(path))


def load_fixture(path: Path, vendor: str | None = None) -> Fixture:
    """The fixture at ``path`` (read once while the file is unchanged); ``vendor``: the one it must be."""
    try:
        stat = path.stat()
    except OSError as err:
        raise FixtureError([f"{path}: cannot read: {err.strerror}"]) from err
    fixture = _cached(path.resolve(), stat.st_mtime_ns, stat.st_size)
    if vendor is not None and fixture.vendor != vendor:
        raise FixtureError([f"{path}:1: vendor: recorded from the {fixture.vendor}, not the {vendor}"])
    return fixture


def checked_fixture(value: str, vendor: str) -> str:
    """A scenario's ``replay:`` path, checked now (a :class:`ValueError` naming the fixture's line)."""
    try:
        load_fixture(Path(value), vendor)
    except FixtureError as err:
        raise ValueError("; ".join(err.problems)) from err
    return value


GatewayFixture = Annotated[str, AfterValidator(functools.partial(checked_fixture, vendor="gateway"))]
"""A scenario's ``replay:`` of a camera group: a path to a gateway's fixture that loads."""
AutomationFixture = Annotated[str, AfterValidator(functools.partial(checked_fixture, vendor="automation"))]
"""A scenario's ``replay:`` of the automation server."""
