"""A property-based run against the gateway's served OpenAPI document (``GET /api/v1/swagger.yaml``).

Schemathesis generates requests for every operation the document describes (valid and invalid
bodies, parameters and ids, seeded so the run repeats); they are sent, with a valid session, to
one camera's app. The property: every answer is the device's own envelope, and a 5xx is one of the
device's documented server-side errors (reference §2: backend failures as 3002, "Operation
failed" 4003, storage full 507, ...), never a crash (1000) and never a route left unsimulated (501).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import schemathesis
import schemathesis.specs.openapi.checks as checks
from schemathesis.openapi.checks import JsonSchemaError, UndefinedStatusCode

from api.gateway.catalogue import device_routes
from api.gateway.errors import CODES
from api.routing import shape_of
from tests.api.generated import examples, request_of
from twin.serve import Twin, build
from twin.settings import Settings

SCENARIO = Path(__file__).resolve().parents[3] / "scenarios" / "test.yaml"
EXAMPLES = 3  # per operation
STREAMS = {shape_of(r.path) for r in device_routes() if r.kind == "SSE"}  # they never end
DOCUMENTED_5XX = {code for code, (status, _) in CODES.items() if status >= 500} - {1000}
TABLE = Path(__file__).resolve().parents[3] / "api" / "gateway" / "SWAGGER_VS_HANDLERS.md"
CHECKS = [
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_schema_conformance,
    checks.response_headers_conformance,
]


def _cases(twin: Twin) -> list:
    schema = schemathesis.openapi.from_asgi("/api/v1/swagger.yaml", twin.gateway_apps["cam-01"])
    cases: list = []
    for result in schema.get_all_operations():
        operation = result.ok()
        if shape_of("/api/v1" + operation.path) not in STREAMS:
            cases += examples(operation, EXAMPLES)
    return cases


async def _exchanges(twin: Twin) -> AsyncIterator[tuple[Any, httpx.Response]]:
    """Each generated case with the twin's answer, sent with a valid session."""
    transport = httpx.ASGITransport(app=twin.gateway_apps["cam-01"])
    async with httpx.AsyncClient(transport=transport, base_url="http://gateway") as http:
        token = ""
        for case in _cases(twin):
            request = request_of(case, "http://gateway/api/v1")
            for _ in range(2):  # a case that ended the session (restart, password...) logs in again
                request["headers"]["Authorization"] = token
                response = await asyncio.wait_for(http.request(**request), 10)
                if response.status_code != 401:
                    break
                login = await http.post("/api/login", json={"username": "admin", "password": "password"})
                token = login.json()["data"]["token"] if login.status_code == 200 else ""
            twin.clock.advance(60)  # let timed work (restarts, installs) settle between cases
            yield case, response


@pytest.mark.timeout(600)
async def test_no_5xx_but_the_devices_documented_errors() -> None:
    twin = build(Settings(scenario=SCENARIO, step=True))
    assert len(_cases(twin)) > 300
    failures: list[str] = []
    async for case, response in _exchanges(twin):
        label = f"{case.operation.label}: {response.status_code}"
        if response.status_code < 500:
            continue
        try:
            code = response.json()["code"]
        except (ValueError, KeyError, TypeError):
            failures.append(f"{label} not in the device's envelope: {response.text[:200]}")
            continue
        if code not in DOCUMENTED_5XX:
            failures.append(f"{label} code {code}: {response.text[:200]}")
    assert not failures, f"{len(failures)} unexpected server errors:\n" + "\n".join(sorted(set(failures)))


def _readable(request: httpx.Request) -> None:
    """The checks read the request body; a streamed (multipart) one was sent and is gone."""
    try:
        request.read()
    except (httpx.StreamConsumed, httpx.RequestNotRead, RuntimeError):
        request._content = b""


def _error_answer(response: httpx.Response) -> str | None:
    """What an answer with an undocumented status is: one of the device's error answers (its
    envelope with the code's own HTTP status, or gorilla/websocket's refusal on a WebSocket route),
    "no route" (Gin's NoRoute 404), or None (nothing the device answers)."""
    if response.text == "Bad Request\n":
        return "upgrade refused"
    try:
        body = response.json()
    except ValueError:
        return None
    if body == {"code": 404, "message": "Not found"}:
        return "no route"
    code = body.get("code") if isinstance(body, dict) else None
    return "device error" if code in CODES and CODES[code][0] == response.status_code else None


def _explained() -> set[tuple[str, str]]:
    """(operation, finding) pairs api/gateway/SWAGGER_VS_HANDLERS.md lists as swagger errors."""
    rows = re.findall(r"^\| `(\w+ /[^`]*)` \| (schema|content type|no route) \|", TABLE.read_text(), re.M)
    return set(rows)


@pytest.mark.timeout(600)
async def test_swagger_conformance_findings_are_all_explained() -> None:
    """Schemathesis's response checks (status code, content type, schema, headers) against the
    swagger: an undocumented status must be one of the device's own error answers (its envelope,
    its code for that HTTP status), every other finding a row of SWAGGER_VS_HANDLERS.md."""
    twin = build(Settings(scenario=SCENARIO, step=True))
    explained, seen, unexplained = _explained(), set(), []
    async for case, response in _exchanges(twin):
        _readable(response.request)
        try:
            case.validate_response(response, checks=CHECKS)
            continue
        except BaseException as group:  # schemathesis raises a FailureGroup
            failures = getattr(group, "exceptions", None) or [group]
        for failure in failures:
            label = case.operation.label
            if isinstance(failure, UndefinedStatusCode):
                kind = _error_answer(response)
                if kind == "no route":  # Gin's NoRoute: the swagger names a path the device lacks
                    seen.add((label, kind))
                    if (label, kind) not in explained:
                        unexplained.append(f"{label}: {kind}")
                elif kind is None:
                    unexplained.append(f"{label}: {response.status_code} {response.text[:120]}")
                continue
            kind = "schema" if isinstance(failure, JsonSchemaError) else "content type"
            seen.add((label, kind))
            if (label, kind) not in explained:
                unexplained.append(f"{label}: {kind}: {str(failure).splitlines()[0]}")
    assert not unexplained, "\n".join(sorted(set(unexplained)))
    assert explained <= seen, f"rows no longer found (remove them): {sorted(explained - seen)}"
