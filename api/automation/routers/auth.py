"""Auth and first-run setup. These endpoints answer raw JSON (no success envelope)."""

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from api.automation import schemas
from api.automation.deps import Backend, CurrentUser, Token
from hardware.ports.errors import Unauthenticated

router = APIRouter(tags=["auth"])


@router.post("/auth/login")
async def login(body: schemas.LoginRequest, backend: Backend) -> JSONResponse:
    return JSONResponse(schemas.login_response(backend.login(body.username, body.password)))


@router.post("/auth/logout")
async def logout(user: CurrentUser, token: Token, backend: Backend) -> JSONResponse:
    if token:
        backend.logout(token)
    return JSONResponse({"message": "Logged out successfully"})


@router.get("/auth/me")
async def me(user: CurrentUser) -> JSONResponse:
    return JSONResponse(schemas.user_info(user))


@router.get("/auth/verify")
async def verify(token: Token, backend: Backend) -> JSONResponse:
    if token is None:
        raise Unauthenticated("Authentication required")
    user = backend.authenticate(token)
    info = schemas.user_info(user)
    info.pop("created_at")
    return JSONResponse({"authenticated": True, "method": "jwt", "user": info})


@router.get("/setup/status")
async def setup_status(backend: Backend) -> JSONResponse:
    required = backend.setup_required()
    return JSONResponse({"setup_required": required, "is_first_launch": required, "setup_version": "1.0"})


@router.post("/setup/initialize")
async def setup_initialize(body: schemas.InitializeRequest, backend: Backend) -> JSONResponse:
    login = backend.initialize(body.username, body.password, body.email)
    return JSONResponse(schemas.initialize_response(login))
