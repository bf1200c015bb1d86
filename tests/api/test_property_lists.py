"""A property-based run of both APIs' served OpenAPI documents (the automation server's
``/api/docs/openapi.json``, the gateway's ``/api/v1/swagger.yaml``), then the lists.

Schemathesis generates requests for every operation (valid and invalid bodies, parameters and
ids, seeded so the run repeats; a fixed number per operation keeps the whole run around a minute)
and they are sent, signed in, to one twin on a state directory. Afterwards every list endpoint of
both APIs answers 200, and so does a twin built again on the same state directory: nothing a
generated request stored can take a list down, nor the start-up. The run's answers are checked
for crashes too: no 500 from the automation API (its handlers never mean one) and no gateway 5xx
but the device's documented server-side errors.
"""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
import schemathesis

from api.routing import shape_of
from tests.api.gateway.test_property import DOCUMENTED_5XX
from tests.api.generated import examples, request_of
from tests.api.lists import (
    CORE_LISTS,
    STREAMS,
    Api,
    answering_lists,
    apis,
    build_twin,
    failing_after_restart,
    failing_lists,
)
from twin.serve import Twin

DOCUMENTS = {"automation": ("/api/docs/openapi.json", ""), "gateway": ("/api/v1/swagger.yaml", "/api/v1")}
"""Each API's served document and the prefix its paths are relative to."""
EXAMPLES = {"automation": 12, "gateway": 10}
"""Generated requests per operation: about 60 s for both APIs together."""
CREDENTIALS = ("authorization", "x-api-key")
"""Generated credentials are replaced by the test's own."""
KEEP_CREDENTIALS = {("POST", "/api/v1/system/password"), ("POST", "/api/auth/change-password")}
"""Left out of the run: a changed password would lock the rest of the run and the checks out; so
are the routes the twin does not simulate (they answer 501 whatever is sent)."""


def cases(api: Api) -> list:
    location, prefix = DOCUMENTS[api.name]
    schema = schemathesis.openapi.from_asgi(location, api.app)
    out: list = []
    for result in schema.get_all_operations():
        operation = result.ok()
        path = shape_of(prefix + operation.path)
        if path in STREAMS or (operation.method.upper(), path) in KEEP_CREDENTIALS:
            continue
        if "not simulated" in (operation.tags or ()):
            continue
        out += [(prefix, case) for case in examples(operation, EXAMPLES[api.name])]
    return out


async def send(api: Api, prefix: str, case) -> httpx.Response:
    request = request_of(case, f"http://{api.name}{prefix}")
    headers = {k: v for k, v in request.pop("headers", {}).items() if k.lower() not in CREDENTIALS}
    url = request.pop("url")
    return await api.request(request.pop("method"), url, headers=headers, **request)


def crash(api: Api, response: httpx.Response) -> bool:
    if response.status_code < 500:
        return False
    if api.name == "automation":  # the handler of exceptions nothing expected (a vendor 500 says more)
        error = response.json().get("error")
        return isinstance(error, dict) and error.get("message") == "Internal server error"
    try:
        return response.json()["code"] not in DOCUMENTED_5XX
    except (ValueError, KeyError, TypeError):
        return True


async def run(twin: Twin, both: list[Api]) -> list[str]:
    crashes = []
    for api in both:
        for prefix, case in cases(api):
            response = await send(api, prefix, case)
            twin.clock.advance(60)  # let timed work (restarts, installs) settle between cases
            if crash(api, response):
                label = f"{api.name} {case.operation.label}: {response.status_code}"
                crashes.append(f"{label} {response.text[:200]}")
    twin.clock.advance(600)  # a reboot or a restart the run asked for is over
    return crashes


@pytest.mark.timeout(600)
async def test_lists_survive_a_property_based_run_and_a_restart(tmp_path: Path) -> None:
    twin = build_twin(tmp_path)
    async with apis(twin) as both:
        lists = {api.name: await answering_lists(api) for api in both}
        for api in both:
            assert CORE_LISTS[api.name] <= lists[api.name], lists[api.name]
        crashes = await run(twin, both)
        failures = [f for api in both for f in await failing_lists(api, lists[api.name])]
    assert not failures, "after the property-based run:\n" + "\n".join(failures)
    assert not crashes, f"{len(crashes)} server errors:\n" + "\n".join(sorted(set(crashes)))
    assert not twin.world.store.unreadable

    failures, again = await failing_after_restart(twin, tmp_path, lists)
    assert not failures, "after a restart on the same state directory:\n" + "\n".join(failures)
    assert not again.world.store.unreadable
