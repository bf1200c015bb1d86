"""Auth, first-run setup, API keys and users. Auth and setup answer raw JSON (no success envelope)."""

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.automation import schemas
from api.automation.deps import AdminUser, Backend, CurrentUser, Token
from hardware.ports.errors import Forbidden, Unauthenticated

router = APIRouter(tags=["auth"])


@router.post("/auth/login")
async def login(body: schemas.LoginRequest, backend: Backend) -> JSONResponse:
    return JSONResponse(schemas.login_response(backend.login(body.username, body.password)))


@router.post("/auth/register")
async def register(request: Request, body: schemas.RegisterRequest, backend: Backend) -> JSONResponse:
    earlier = request.app.state.release == "0.9.17"
    login = backend.register(body.username, body.password, earlier_release=earlier)
    return JSONResponse(schemas.login_response(login), 201)


@router.post("/auth/logout")
async def logout(user: CurrentUser, token: Token, backend: Backend) -> JSONResponse:
    if user.method == "jwt" and token:
        backend.logout(token)
    return JSONResponse({"message": "Logged out successfully"})


@router.get("/auth/me")
async def me(user: CurrentUser) -> JSONResponse:
    return JSONResponse(schemas.principal_info(user))


@router.post("/auth/change-password")
async def change_password(
    body: schemas.ChangePasswordRequest, user: CurrentUser, backend: Backend
) -> JSONResponse:
    if user.user is None:
        raise Forbidden("An API key has no password; log in as the user")
    backend.change_password(user.user, body.old_password, body.new_password)
    return JSONResponse({"message": "Password changed successfully"})


@router.get("/auth/status")
async def status(backend: Backend) -> JSONResponse:
    count, has_default = backend.api_key_status()
    return JSONResponse({"enabled": True, "key_count": count, "has_default_key": has_default})


@router.get("/auth/verify")
async def verify(request: Request, token: Token, backend: Backend) -> JSONResponse:
    """A JWT in ``Authorization``, or a key in ``X-API-Key`` only (a key sent as Bearer fails here)."""
    if token:
        info = schemas.user_info(backend.authenticate(token))
        info.pop("created_at")
        return JSONResponse({"authenticated": True, "method": "jwt", "user": info})
    if key := request.headers.get("x-api-key"):
        backend.authenticate_key(key)
        return JSONResponse({"authenticated": True, "method": "api_key"})
    raise Unauthenticated("Authentication required")


@router.get("/auth/keys")
async def list_keys(user: CurrentUser, backend: Backend) -> JSONResponse:
    _require_admin(user)
    return JSONResponse({"keys": [schemas.api_key_info(k, preview=True) for k in backend.list_api_keys()]})


@router.post("/auth/keys")
async def create_key(body: schemas.NewApiKeyRequest, user: CurrentUser, backend: Backend) -> JSONResponse:
    _require_admin(user)
    expires_at = body.expires_at
    if body.expires_in_days is not None:
        expires_at = int(backend.clock.now()) + body.expires_in_days * 86_400
    raw, key = backend.create_api_key(body.name, body.permissions, expires_at)
    return JSONResponse({"api_key": raw, "info": schemas.api_key_info(key)})


@router.delete("/auth/keys/{key_id}")
async def delete_key(key_id: str, user: CurrentUser, backend: Backend) -> JSONResponse:
    _require_admin(user)
    deleted = backend.delete_api_key(key_id)
    return JSONResponse(
        {"message": f"API key {key_id} {'deleted' if deleted else 'not found'}", "success": deleted}
    )


@router.get("/users")
async def list_users(admin: AdminUser, backend: Backend) -> JSONResponse:
    return JSONResponse({"users": [schemas.user_info(u) for u in backend.list_users()]})


@router.post("/users")
async def add_user(body: schemas.NewUserRequest, admin: AdminUser, backend: Backend) -> JSONResponse:
    return JSONResponse(
        {"user": schemas.user_info(backend.add_user(body.username, body.password, body.role))}, 201
    )


@router.delete("/users/{username}")
async def remove_user(username: str, admin: AdminUser, backend: Backend) -> JSONResponse:
    assert admin.user is not None
    backend.remove_user(username, admin.user)
    return JSONResponse({"message": f"User '{username}' deleted successfully"})


@router.get("/settings/auth")
async def auth_settings(admin: AdminUser, backend: Backend) -> JSONResponse:
    return schemas.ok({"registration_enabled": backend.registration_enabled()}, backend.clock.now())


@router.put("/settings/auth")
async def update_auth_settings(
    body: schemas.AuthSettings, admin: AdminUser, backend: Backend
) -> JSONResponse:
    backend.set_registration(body.registration_enabled)
    return schemas.ok({"registration_enabled": body.registration_enabled}, backend.clock.now())


@router.get("/setup/status")
async def setup_status(backend: Backend) -> JSONResponse:
    required = backend.setup_required()
    return JSONResponse({"setup_required": required, "is_first_launch": required, "setup_version": "1.0"})


@router.post("/setup/initialize")
async def setup_initialize(body: schemas.InitializeRequest, backend: Backend) -> JSONResponse:
    login = backend.initialize(body.username, body.password, body.email)
    return JSONResponse(schemas.initialize_response(login))


def _require_admin(user) -> None:
    if not user.is_admin:
        raise Forbidden("Managing API keys requires an administrator or a key with '*'", admin_required=True)
