"""Remote instances (jwt-or-api-key): backends the web app can switch to, and their health probe.
Enveloped; the same in both releases. Deleting an unknown id answers ``{"deleted": true}`` as the
server does; the local instance cannot be deleted (400)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Path
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import instances as wire
from api.automation.schemas import ok

InstanceId = Annotated[str, Path(alias="id")]


async def list_instances(backend: Backend) -> JSONResponse:
    rows = [wire.instance(i) for i in backend.instances.list_instances()]
    return ok({"instances": rows}, backend.clock.now())


async def create_instance(body: wire.CreateInstance, backend: Backend) -> JSONResponse:
    created = backend.instances.create_instance(body.name, body.url, body.api_key)
    return ok(wire.instance(created), backend.clock.now())


async def get_instance(instance_id: InstanceId, backend: Backend) -> JSONResponse:
    return ok(wire.instance(backend.instances.get_instance(instance_id)), backend.clock.now())


async def update_instance(
    instance_id: InstanceId, body: wire.UpdateInstance, backend: Backend
) -> JSONResponse:
    updated = backend.instances.update_instance(instance_id, body.name, body.url, body.api_key)
    return ok(wire.instance(updated), backend.clock.now())


async def delete_instance(instance_id: InstanceId, backend: Backend) -> JSONResponse:
    backend.instances.delete_instance(instance_id)
    return ok({"deleted": True}, backend.clock.now())


async def test_instance(instance_id: InstanceId, backend: Backend) -> JSONResponse:
    return ok(wire.probe(await backend.instances.test_instance(instance_id)), backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/instances", list_instances),
    ("POST", "/instances", create_instance),
    ("GET", "/instances/{id}", get_instance),
    ("PUT", "/instances/{id}", update_instance),
    ("DELETE", "/instances/{id}", delete_instance),
    ("POST", "/instances/{id}/test", test_instance),
]


router = catalogued_router(ROUTES, "instances")
