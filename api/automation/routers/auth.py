"""Auth, first-run setup, API keys and users. Auth and setup answer raw JSON (no success envelope)."""

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from api.automation import schemas
from api.automation.deps import AdminUser, Backend, CurrentUser, Token, current_user
from hardware.ports.automation import AutomationBackend
from hardware.ports.errors import AuthError, Forbidden, Unauthenticated

router = APIRouter(tags=["auth"])


@router.post("/auth/login")
async def login(body: schemas.LoginRequest, backend: Backend) -> JSONResponse:
    return JSONResponse(schemas.login_response(backend.users.login(body.username, body.password)))


@router.post("/auth/register")
async def register(request: Request, body: schemas.RegisterRequest, backend: Backend) -> JSONResponse:
    earlier = request.app.state.release == "0.9.17"
    login = backend.users.register(body.username, body.password, earlier_release=earlier)
    return JSONResponse(schemas.login_response(login), 201)


@router.post("/auth/logout")
async def logout(user: CurrentUser, token: Token, backend: Backend) -> JSONResponse:
    if user.method == "jwt" and token:
        backend.users.logout(token)
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
    backend.users.change_password(user.user, body.old_password, body.new_password)
    return JSONResponse({"message": "Password changed successfully"})


@router.get("/auth/status")
async def status(backend: Backend) -> JSONResponse:
    count, has_default = backend.api_keys.status()
    return JSONResponse({"enabled": True, "key_count": count, "has_default_key": has_default})


@router.get("/auth/verify")
async def verify(request: Request, backend: Backend) -> JSONResponse:
    """``Authorization: Bearer <JWT>`` (that spelling of the scheme only), else a key in
    ``X-API-Key``. A JWT that fails (expired, revoked, not a JWT at all, such as a key sent as
    Bearer) falls through to the key header; every failure is the same 401."""
    if token := _bearer(request):
        try:
            info = schemas.user_info(backend.users.authenticate(token))
        except AuthError:
            pass
        else:
            info.pop("created_at")
            return JSONResponse({"authenticated": True, "method": "jwt", "user": info})
    if (key := request.headers.get("x-api-key")) is not None:
        try:
            backend.api_keys.authenticate(key)
        except AuthError:
            pass
        else:
            return JSONResponse({"authenticated": True, "method": "api_key"})
    raise Unauthenticated("Authentication required")


@router.get("/auth/keys", dependencies=[Depends(current_user)])
async def list_keys(request: Request, backend: Backend) -> JSONResponse:
    _managing_key(request, backend)
    return JSONResponse({"keys": [schemas.api_key_info(k, preview=True) for k in backend.api_keys.list()]})


@router.post("/auth/keys", dependencies=[Depends(current_user)])
async def create_key(request: Request, body: schemas.NewApiKeyRequest, backend: Backend) -> JSONResponse:
    _managing_key(request, backend)
    expires_at = body.expires_at
    if body.expires_in_days is not None:
        expires_at = int(backend.clock.now()) + body.expires_in_days * 86_400
    raw, key = backend.api_keys.create(body.name, body.permissions, expires_at)
    return JSONResponse({"api_key": raw, "info": schemas.api_key_info(key)})


@router.delete("/auth/keys/{key_id}", dependencies=[Depends(current_user)])
async def delete_key(request: Request, key_id: str, backend: Backend) -> JSONResponse:
    _managing_key(request, backend)
    deleted = backend.api_keys.delete(key_id)
    return JSONResponse(
        {"message": f"API key {key_id} {'deleted' if deleted else 'not found'}", "success": deleted}
    )


@router.get("/users")
async def list_users(admin: AdminUser, backend: Backend) -> JSONResponse:
    return JSONResponse({"users": [schemas.user_info(u) for u in backend.users.list()]})


@router.post("/users")
async def add_user(body: schemas.NewUserRequest, admin: AdminUser, backend: Backend) -> JSONResponse:
    return JSONResponse(
        {"user": schemas.user_info(backend.users.add(body.username, body.password, body.role))}, 201
    )


@router.delete("/users/{username}")
async def remove_user(username: str, admin: AdminUser, backend: Backend) -> JSONResponse:
    assert admin.user is not None
    backend.users.remove(username, admin.user)
    return JSONResponse({"message": f"User '{username}' deleted successfully"})


@router.get("/settings/auth")
async def auth_settings(admin: AdminUser, backend: Backend) -> JSONResponse:
    return schemas.ok({"registration_enabled": backend.users.registration_enabled()}, backend.clock.now())


@router.put("/settings/auth")
async def update_auth_settings(
    body: schemas.AuthSettings, admin: AdminUser, backend: Backend
) -> JSONResponse:
    backend.users.set_registration(body.registration_enabled)
    return schemas.ok({"registration_enabled": body.registration_enabled}, backend.clock.now())


@router.get("/setup/status")
async def setup_status(backend: Backend) -> JSONResponse:
    required = backend.users.setup_required()
    return JSONResponse({"setup_required": required, "is_first_launch": required, "setup_version": "1.0"})


@router.post("/setup/initialize")
async def setup_initialize(body: schemas.InitializeRequest, backend: Backend) -> JSONResponse:
    login = backend.users.initialize(body.username, body.password, body.email)
    return JSONResponse(schemas.initialize_response(login))


def _bearer(request: Request) -> str | None:
    """What follows ``Bearer `` exactly as the server matches it (no other spelling of the scheme)."""
    header = request.headers.get("authorization", "")
    return header.removeprefix("Bearer ") if header.startswith("Bearer ") else None


def _managing_key(request: Request, backend: AutomationBackend) -> None:
    """The key handlers authenticate the caller again, as an API key only, whatever the hybrid
    check accepted: ``X-API-Key``, else the Bearer value (so a JWT there is an invalid key). Only a
    key with ``*`` may manage keys (the twin's scopes)."""
    raw = request.headers.get("x-api-key")
    if raw is None and (raw := _bearer(request)) is None:
        raise Unauthenticated("Missing API key")
    try:
        key = backend.api_keys.authenticate(raw)
    except AuthError:
        raise Unauthenticated("Invalid API key") from None
    if "*" not in key.permissions:
        raise Forbidden("Managing API keys requires a key with '*'", admin_required=True)
