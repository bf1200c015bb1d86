"""The public routes: login, logout, the public key and the device's API description."""

from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, JSONResponse

from api.gateway import schemas
from api.gateway.deps import Backend, request_token
from api.gateway.schemas import auth as shapes

router = APIRouter(tags=["auth"])

SWAGGER = Path(__file__).resolve().parent.parent / "swagger.yaml"
"""The device's ``docs/api/swagger.yaml``, byte for byte (stale in places; the reference says where)."""


@router.post("/api/login")
async def login(request: Request, backend: Backend) -> JSONResponse:
    username, password, timestamp = shapes.parse_login(await request.body())
    token = backend.auth.login(username, password, timestamp)
    return schemas.ok(shapes.login_response(token, username))


@router.api_route("/api/v1/logout", methods=["POST"])
async def logout(request: Request, backend: Backend) -> JSONResponse:
    backend.auth.logout(request_token(request))
    return schemas.ok()


@router.get("/api/v1/auth/public-key")
async def public_key(backend: Backend) -> JSONResponse:
    return schemas.ok(shapes.public_key(backend.auth.public_key()))


@router.get("/api/v1/swagger.yaml")
async def swagger() -> FileResponse:
    return FileResponse(SWAGGER, media_type="application/yaml")
