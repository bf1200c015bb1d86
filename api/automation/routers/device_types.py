"""Device type templates and their generation from samples (jwt-or-api-key)."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, catalogued
from api.automation.schemas import device_types as schemas
from api.automation.schemas import ok
from api.automation.schemas.devices import DeviceTypeBody
from api.automation.schemas.provisioning import GenerateTypeBody

router = APIRouter(tags=["device-types"])


@router.get("/device-types")
async def list_device_types(backend: Backend) -> JSONResponse:
    return ok(schemas.device_type_list(backend.device_types.list()), backend.clock.now())


@router.post("/device-types")
async def create_device_type(body: DeviceTypeBody, backend: Backend) -> JSONResponse:
    created = backend.device_types.create(body.to_port())
    data = {"success": True, "registered": True, "device_type": created.device_type, "name": created.name}
    return ok(data, backend.clock.now())


@router.put("/device-types")
async def validate_device_type(body: DeviceTypeBody, backend: Backend) -> JSONResponse:
    return ok(schemas.validation(backend.device_types.validate(body.to_port())), backend.clock.now())


@router.get("/device-types/{device_type}")
async def get_device_type(device_type: str, backend: Backend) -> JSONResponse:
    return ok(schemas.device_type_full(backend.device_types.get(device_type)), backend.clock.now())


@router.delete("/device-types/{device_type}")
async def delete_device_type(device_type: str, backend: Backend) -> JSONResponse:
    backend.device_types.delete(device_type)
    return ok({"success": True, "device_type": device_type, "deleted": True}, backend.clock.now())


@router.post("/device-types/generate-from-samples")
async def generate_from_samples(body: GenerateTypeBody, backend: Backend) -> JSONResponse:
    samples = [s.data for s in body.samples]
    generated = backend.provisioning.generate_from_samples(
        body.device_id, body.manufacturer, samples, body.min_coverage
    )
    return ok(dict(generated), backend.clock.now())


catalogued(router)
