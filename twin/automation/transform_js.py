"""A transform's JavaScript, run as the server runs it, and its result turned into metrics.

The server runs the code in a fresh Boa context; the twin in a fresh QuickJS context (no module
loader, no file or network access), bounded in CPU time and memory. The code is the body of a
function whose ``return`` is the result. It sees ``input`` (the device data; a one-key object is
unwrapped to its value), ``input_raw`` (never unwrapped), ``__imageData`` (the first image-like
string of the data, base64), ``imageMeta`` (``{width, height}`` read off a PNG or JPEG header, else
``null``) and ``extensions.invoke(id, command, params)``, whose results are computed before the
script runs, as the server does (params written as JSON, or as an expression of the inputs).
``Date`` and ``Math.random`` are the world's: the clock is the world clock, the random numbers come
from a seeded stream, so a run is repeatable.

The result becomes metrics as the server's ``json_to_metrics`` makes them: an object gives
``<prefix>.<key>`` per key, an array ``<prefix>.<index>``, a scalar ``<prefix>``; numbers are
floats, ``null`` is 0, nested values are kept as JSON, and nothing at all is ``<prefix>`` = 0 with
quality 0.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import struct
from collections.abc import Callable
from typing import Any

import orjson
import quickjs

from hardware.ports.automations import TransformedMetric

TIME_LIMIT_S = 1.0
"""CPU time a run may take (the server stops a script after 10 million loop iterations)."""
MEMORY_LIMIT = 64 * 1024 * 1024
MOCK_EXTENSIONS = """
// Mock extensions.invoke for testing
const extensions = {
  invoke: (extId, command, args) => ({
    _mock: true,
    _extension_id: extId,
    _command: command,
    _args: args,
    result: 'mock_result_from_' + extId,
    input: args?.data || input,
    status: 'success'
  })
};
"""
_WORLD = """
(function () {
  const Real = Date, now = %(now_ms)d;
  function WorldDate(...args) {
    if (!new.target) return new Real(now).toString();
    return args.length ? new Real(...args) : new Real(now);
  }
  WorldDate.prototype = Real.prototype;
  WorldDate.now = () => now;
  WorldDate.UTC = Real.UTC;
  WorldDate.parse = Real.parse;
  globalThis.Date = WorldDate;
  let s = %(seed)d >>> 0;
  Math.random = function () {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
})();
"""
_LOOKUP = """
const extensions = { invoke: (extId, command) => __extension_results__[extId + '::' + command] };
"""
_CALL = re.compile(r"""extensions\.invoke\s*\(\s*(['"])(.*?)\1\s*,\s*(['"])(.*?)\3\s*,?\s*""")

Invoke = Callable[[str, str, Any], Any]
"""An extension command as a transform calls it: (extension id, command, params) -> its output.
Called before the script runs, once per call written in it (the server's pre-execution)."""


class TransformFailure(Exception):
    """The server's ``TransformError``: ``Transform error in <operation>: <message>``."""

    def __init__(self, operation: str, message: str) -> None:
        super().__init__(f"Transform error in {operation}: {message}")


def _first_line(err: Exception) -> str:
    return str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__


def run(
    code: str,
    data: Any,
    prefix: str,
    device_id: str,
    timestamp: int,
    *,
    now_ms: int,
    seed: int,
    invoke: Invoke | None = None,
    mock_extensions: bool = False,
) -> list[TransformedMetric]:
    """Run ``code`` on ``data``; ``TransformFailure`` when it cannot run or throws."""
    ctx = quickjs.Context()
    ctx.set_time_limit(TIME_LIMIT_S)
    ctx.set_memory_limit(MEMORY_LIMIT)
    text = json.dumps(data, ensure_ascii=False)
    unwrapped = text
    if isinstance(data, dict) and len(data) == 1:
        unwrapped = f"({text})[{json.dumps(next(iter(data)))}]"
    image = find_image_data(data)
    if image.startswith("data:") and 0 <= image.find(",") < 50:
        image = image[image.find(",") + 1 :]
    size = image_dimensions(image)
    meta = "null" if size is None else json.dumps({"width": size[0], "height": size[1]})
    try:
        ctx.eval(_WORLD % {"now_ms": now_ms, "seed": seed})
        ctx.eval(f"var input = {unwrapped}; var input_raw = {text};")
        ctx.eval(f"var __imageData = {json.dumps(image)}; var imageMeta = {meta};")
        if invoke is not None:
            results = {
                f"{ext}::{cmd}": _call(invoke, ext, cmd, params) for ext, cmd, params in _calls(ctx, code)
            }
            ctx.eval(f"const __extension_results__ = {json.dumps(results)};{_LOOKUP}")
    except quickjs.JSException as err:
        raise TransformFailure("JsTransform", f"Failed to set input: {_first_line(err)}") from err
    source = f"{MOCK_EXTENSIONS}\n{code}" if mock_extensions and "extensions.invoke" in code else code
    try:
        result = ctx.eval(f"JSON.stringify((function() {{\n{source}\n}})())")
    except quickjs.JSException as err:
        raise TransformFailure("JsTransform", f"JavaScript execution error: {_first_line(err)}") from err
    value = None if result is None else json.loads(result)
    if result is not None and re.search(r"\\u[dD][89a-fA-F]", result):
        value = _well_formed(value)
    try:
        orjson.dumps(value)  # what every response and event will have to encode
    except orjson.JSONEncodeError as err:
        raise TransformFailure("JsTransform", f"Failed to convert JS value to JSON: {err}") from err
    return to_metrics(value, prefix, device_id, timestamp)


def _well_formed(value: Any) -> Any:
    """Text as Rust holds it: a lone UTF-16 surrogate (which a script can make) becomes U+FFFD."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [_well_formed(v) for v in value]
    if isinstance(value, dict):
        return {_well_formed(k): _well_formed(v) for k, v in value.items()}
    return value


def _calls(ctx: quickjs.Context, code: str) -> list[tuple[str, str, Any]]:
    """The ``extensions.invoke(id, command, params)`` calls written in ``code``, as the server finds
    them before a run: literal ids and commands; params as JSON, else evaluated with the script's
    inputs (``{}`` when neither works)."""
    found = []
    for match in _CALL.finditer(code):
        params: Any = {}
        rest = code[match.end() :]
        if rest.startswith("{"):
            depth, end = 0, len(rest)
            for i, ch in enumerate(rest):
                depth += {"{": 1, "}": -1}.get(ch, 0)
                if depth == 0:
                    end = i + 1
                    break
            text = rest[:end]
            try:
                params = json.loads(text)
            except ValueError:
                try:
                    params = json.loads(ctx.eval(f"JSON.stringify({text})"))
                except (quickjs.JSException, TypeError, ValueError):
                    params = {}
        found.append((match.group(2), match.group(4), params))
    return found


def _call(invoke: Invoke, extension_id: str, command: str, params: Any) -> Any:
    try:
        return invoke(extension_id, command, params)
    except Exception as err:  # the extension's failure is the script's value, as on the server
        return {"error": getattr(err, "message", str(err))}


def _metric_value(value: Any) -> Any:
    if isinstance(value, bool) or value is None:
        return 0 if value is None else value
    if isinstance(value, int | float):
        return float(value)
    return value


def to_metrics(value: Any, prefix: str, device_id: str, timestamp: int) -> list[TransformedMetric]:
    def metric(name: str, v: Any, quality: float = 1.0) -> TransformedMetric:
        return TransformedMetric(device_id, name, v, timestamp, quality)

    if isinstance(value, dict):
        out = [metric(f"{prefix}.{k}", _metric_value(v)) for k, v in value.items()]
    elif isinstance(value, list):
        out = [metric(f"{prefix}.{i}", _metric_value(v)) for i, v in enumerate(value)]
    elif value is None:
        out = [metric(prefix, 0, 0.0)]
    else:
        out = [metric(prefix, _metric_value(value))]
    return out or [metric(prefix, 0.0, 0.0)]


# Image data ---------------------------------------------------------------------------------
def _image_like(s: str) -> bool:
    return len(s) > 200 and (s.startswith("data:image") or (" " not in s and "\n" not in s))


def find_image_data(value: Any) -> str:
    """The first string over 200 characters that looks like image data (keys naming an image,
    photo or picture first), searching nested objects; ``""`` when there is none."""
    if isinstance(value, str):
        return value if _image_like(value) else ""
    if not isinstance(value, dict):
        return ""
    for key, v in value.items():
        if (
            any(w in key.lower() for w in ("image", "photo", "picture"))
            and isinstance(v, str)
            and len(v) > 200
        ):
            return v
    for v in value.values():
        found = find_image_data(v)
        if found:
            return found
    return ""


def image_dimensions(b64: str) -> tuple[int, int] | None:
    """(width, height) from the PNG or JPEG header at the start of base64 image data."""
    if len(b64) < 40:
        return None
    try:
        data = base64.b64decode(b64[: (min(len(b64), 5600) // 4) * 4], validate=True)
    except (binascii.Error, ValueError):
        return None
    if len(data) < 24:
        return None
    if data[:8] == b"\x89PNG\r\n\x1a\n":
        width, height = struct.unpack(">II", data[16:24])
        return (width, height) if width and height else None
    if data[:2] != b"\xff\xd8":
        return None
    pos = 2
    while pos + 9 <= len(data) and data[pos] == 0xFF:
        if data[pos + 1] in (0xC0, 0xC1, 0xC2):
            height, width = struct.unpack(">HH", data[pos + 5 : pos + 9])
            if width and height:
                return width, height
        seg = struct.unpack(">H", data[pos + 2 : pos + 4])[0]
        if seg < 2:
            return None
        pos += 2 + seg
    return None
