"""Requests Schemathesis generates from a served OpenAPI document, for the property-based tests:
a fixed number per operation, the same on every run, and each as httpx sends it."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, Phase, given, settings


def examples(operation: Any, count: int) -> list:
    """``count`` generated cases of ``operation`` (its explicit examples first), derandomized."""
    out: list = []

    @settings(
        max_examples=count,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @given(case=operation.as_strategy())
    def collect(case) -> None:
        out.append(case)

    collect()
    return out


def request_of(case: Any, base_url: str) -> dict[str, Any]:
    """``case`` as keyword arguments of ``httpx.AsyncClient.request``: no cookies, multipart parts
    httpx can send, a raw body as ``content``."""
    request = case.as_transport_kwargs(base_url=base_url)
    request.pop("cookies", None)
    if request.get("files") is not None:
        request["files"] = _sendable(request["files"])
    if isinstance(request.get("data"), bytes | str):  # a raw body, as httpx wants it
        request["content"] = request.pop("data")
    return request


def _bytes(value: object) -> object:
    return value if isinstance(value, bytes | str) or hasattr(value, "read") else str(value).encode()


def _sendable(files: object) -> list:
    """Multipart parts as httpx takes them: generated file contents may be numbers or None."""
    items = files.items() if isinstance(files, dict) else files
    parts = []
    for name, value in items:
        is_file = isinstance(value, tuple)  # (filename, content, ...)
        parts.append((name, (value[0], _bytes(value[1]), *value[2:]) if is_file else _bytes(value)))
    return parts
