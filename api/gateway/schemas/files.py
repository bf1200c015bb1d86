"""Wire shapes of the gateway's files, logs, SSH and upgrade areas, and an in-memory multipart reader.

Bodies are read like Gin's ``ShouldBindJSON`` (a JSON object; a field of the wrong type is a bad
request; ``binding:"required"`` means present and non-zero). Multipart bodies are parsed in memory:
an upload is never spooled to a file of the machine the twin runs on.
"""

from __future__ import annotations

import io
import tarfile
import zipfile
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

from fastapi import Request
from python_multipart.multipart import MultipartParser, parse_options_header

from api import json_input
from hardware.ports.errors import InvalidInput
from hardware.ports.gateway_files import BatchDeleteResult, FileData, FileEntry, FirmwareInfo, LogFile

MAX_BODY = 1024 * 1024 * 1024
"""The device's nginx request body limit."""


# JSON bodies ------------------------------------------------------------------------------------
def json_object(raw: bytes, detail: str = "Invalid request body") -> dict[str, Any]:
    try:
        body = json_input.loads(raw, json_input.GO) if raw.strip() else None
    except ValueError as err:
        raise InvalidInput(detail) from err
    if not isinstance(body, dict):
        raise InvalidInput(detail)
    return body


def field(body: dict[str, Any], name: str, kind: type, *, required: bool = False, detail: str = "") -> Any:
    value = body.get(name)
    default: Any = {str: "", bool: False, int: 0, list: []}[kind]
    if value is None:
        value = default
    elif not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidInput(detail or f"Invalid request body: {name} must be a {kind.__name__}")
    if required and not value:
        raise InvalidInput(detail or f"Invalid request body: {name} is required")
    return value


def string_list(body: dict[str, Any], name: str, *, required: bool = False) -> list[str]:
    values = field(body, name, list, required=required)
    if not all(isinstance(v, str) for v in values):
        raise InvalidInput(f"Invalid request body: {name} must be a list of strings")
    return values


# Multipart --------------------------------------------------------------------------------------
class Form:
    def __init__(self) -> None:
        self.fields: dict[str, str] = {}
        self.files: dict[str, tuple[str, bytes]] = {}
        self.content_types: dict[str, str] = {}
        """Each file field's ``Content-Type``, when its part had one."""

    def file(self, *names: str) -> tuple[str, bytes]:
        for name in names:
            if name in self.files:
                return self.files[name]
        raise InvalidInput(f"no file in form field {' or '.join(repr(n) for n in names)}")


async def read_form(request: Request) -> Form:
    """A ``multipart/form-data`` body parsed in memory; ``InvalidInput`` for anything else."""
    ctype, params = parse_options_header(request.headers.get("content-type", ""))
    boundary = params.get(b"boundary")
    if ctype != b"multipart/form-data" or not boundary:
        raise InvalidInput("request Content-Type isn't multipart/form-data")
    form = Form()
    part: dict[str, Any] = {}
    header = [b"", b""]

    def on_part_begin() -> None:
        part.clear()
        part.update(headers={}, data=bytearray())

    def on_header_field(data: bytes, start: int, end: int) -> None:
        header[0] += data[start:end]

    def on_header_value(data: bytes, start: int, end: int) -> None:
        header[1] += data[start:end]

    def on_header_end() -> None:
        part["headers"][header[0].decode("latin-1").lower()] = header[1]
        header[0], header[1] = b"", b""

    def on_part_data(data: bytes, start: int, end: int) -> None:
        part["data"] += data[start:end]

    def on_part_end() -> None:
        _, disp = parse_options_header(part["headers"].get("content-disposition", b""))
        name = disp.get(b"name", b"").decode(errors="replace")
        if b"filename" in disp:
            form.files[name] = (disp[b"filename"].decode(errors="replace"), bytes(part["data"]))
            if ctype := part["headers"].get("content-type"):
                form.content_types[name] = ctype.decode("latin-1").strip()
        else:
            form.fields[name] = part["data"].decode(errors="replace")

    callbacks = {
        "on_part_begin": on_part_begin,
        "on_header_field": on_header_field,
        "on_header_value": on_header_value,
        "on_header_end": on_header_end,
        "on_part_data": on_part_data,
        "on_part_end": on_part_end,
    }
    parser = MultipartParser(boundary, callbacks)  # type: ignore[arg-type]
    try:
        async for chunk in request.stream():  # at most MAX_BODY: the body limit refuses more
            parser.write(chunk)
        parser.finalize()
    except ValueError as err:
        raise InvalidInput(f"malformed multipart body: {err}") from err
    return form


# Files ------------------------------------------------------------------------------------------
def mod_time(unix: float, offset_s: int = 0) -> str:
    """``YYYY-MM-DD HH:MM:SS`` in the device's local time (Go formats in the process's zone)."""
    return datetime.fromtimestamp(int(unix) + offset_s, UTC).strftime("%Y-%m-%d %H:%M:%S")


def listing(path: str, entries: list[FileEntry], offset_s: int = 0) -> dict[str, Any]:
    return {
        "path": path,
        "files": [
            {
                "name": e.name,
                "path": e.path,
                "is_dir": e.is_dir,
                "size": e.size,
                "mod_time": mod_time(e.mod_time, offset_s),
                "mode": e.mode,
            }
            for e in entries
        ],
    }


def content(data: FileData) -> dict[str, Any]:
    return {"path": data.path, "size": len(data.data), "content": data.data.decode(errors="replace")}


def batch_deleted(result: BatchDeleteResult) -> dict[str, Any]:
    body: dict[str, Any] = {"deleted": list(result.deleted), "count": len(result.deleted)}
    if result.failed:
        body["failed"] = [{"path": p, "error": e} for p, e in result.failed]
        body["failed_count"] = len(result.failed)
    return body


def zip_of(files: list[FileData], mtime: float) -> bytes:
    """A zip of ``files``, every entry stamped with ``mtime`` (device time), never the host's clock."""
    stamp = datetime.fromtimestamp(max(int(mtime), 315532800), UTC).timetuple()[:6]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
        for f in files:
            info = zipfile.ZipInfo(f.name, date_time=stamp)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, f.data)
    return buf.getvalue()


def tar_gz_of(files: list[FileData], mtime: float) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as archive:
        for f in files:
            info = tarfile.TarInfo(f.name)
            info.size, info.mtime, info.mode = len(f.data), int(mtime), 0o644
            archive.addfile(info, io.BytesIO(f.data))
    return buf.getvalue()


def attachment(name: str) -> dict[str, str]:
    """``Content-Disposition`` like Go's ``FileAttachment``: a quoted ASCII name, or RFC 5987
    ``filename*=UTF-8''…`` for any other name."""
    safe = name.replace('"', "").replace("\r", "").replace("\n", "")
    if safe.isascii():
        return {"Content-Disposition": f'attachment; filename="{safe}"'}
    return {"Content-Disposition": f"attachment; filename*=UTF-8''{quote(name, safe='')}"}


# Logs -------------------------------------------------------------------------------------------
def log_files(files: list[LogFile], offset_s: int = 0) -> dict[str, Any]:
    rows = []
    for f in files:
        row: dict[str, Any] = {
            "path": f.path,
            "name": f.name,
            "size": f.size,
            "modified_time": mod_time(f.modified_time, offset_s),
        }
        if f.service:
            row["service"] = f.service
        rows.append(row)
    return {"files": rows or None}


def debug_files(files: list[LogFile], offset_s: int = 0) -> list[dict[str, Any]]:
    return [
        {"path": f.path, "name": f.name, "size": f.size, "modified_time": mod_time(f.modified_time, offset_s)}
        for f in files
    ]


def lines_param(value: str | None) -> int:
    if value in (None, ""):
        return 0
    try:
        return int(value)
    except ValueError as err:
        raise InvalidInput("lines must be an integer") from err


# Upgrades ---------------------------------------------------------------------------------------
def firmware(info: FirmwareInfo) -> dict[str, Any]:
    return {
        "current_version": info.current_version,
        "target_version": info.target_version,
        "build_date": info.build_date,
        "git_commit": info.git_commit,
        "firmware_path": info.firmware_path,
        "firmware_size": info.firmware_size,
    }


def os_job_request(raw: bytes) -> dict[str, Any]:
    """``{job_id?, sha256?, allow_downgrade?, upgrade_strategy?, update_mode?}``; an empty body is ``{}``."""
    return json_object(raw) if raw.strip() else {}


# SSH --------------------------------------------------------------------------------------------
SSH_FIELDS = {
    "port": "Port",
    "permit_root_login": "PermitRootLogin",
    "password_authentication": "PasswordAuthentication",
    "pubkey_authentication": "PubkeyAuthentication",
    "max_auth_tries": "MaxAuthTries",
}


def ssh_changes(raw: bytes) -> tuple[dict[str, str], bool]:
    """The strict body of ``POST ssh/config``: unknown fields are refused (``DisallowUnknownFields``)."""
    body = json_object(raw)
    unknown = set(body) - set(SSH_FIELDS) - {"restart_service"}
    if unknown:
        raise InvalidInput(f'json: unknown field "{sorted(unknown)[0]}"')
    changes = {SSH_FIELDS[k]: field(body, k, str) for k in SSH_FIELDS if body.get(k) not in (None, "")}
    return changes, field(body, "restart_service", bool)
