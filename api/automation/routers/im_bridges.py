"""Instant-messaging bridges (jwt-or-api-key): Telegram and Feishu bots wired to the agent, their invite
tokens, the chats bound with them and those chats' sessions. ``:id`` is the platform. Enveloped."""

from fastapi import APIRouter, Depends
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, current_user
from api.automation.schemas import im_bridges as wire
from api.automation.schemas import ok

router = APIRouter(tags=["im-bridges"], dependencies=[Depends(current_user)])


@router.get("/im-bridges")
async def list_bridges(backend: Backend) -> JSONResponse:
    bridges = [wire.bridge(p) for p in backend.im_bridges.list_bridges()]
    return ok({"bridges": bridges, "count": len(bridges)}, backend.clock.now())


@router.post("/im-bridges")
async def create_bridge(body: wire.BridgeRequest, backend: Backend) -> JSONResponse:
    return ok(wire.bridge(backend.im_bridges.create_bridge(body.spec())), backend.clock.now())


@router.delete("/im-bridges/{platform}")
async def delete_bridge(platform: str, backend: Backend) -> JSONResponse:
    return ok(wire.bridge(backend.im_bridges.delete_bridge(platform), "stopped"), backend.clock.now())


@router.post("/im-bridges/{platform}/invites")
async def create_invite(platform: str, backend: Backend) -> JSONResponse:
    token, deep_link = backend.im_bridges.create_invite(platform)
    return ok({"token": token, "deep_link": deep_link}, backend.clock.now())


@router.get("/im-bridges/{platform}/invites")
async def list_invites(platform: str, backend: Backend) -> JSONResponse:
    return ok(wire.invites(backend.im_bridges.list_invites(platform)), backend.clock.now())


@router.delete("/im-bridges/{platform}/invites/{token}")
async def revoke_invite(platform: str, token: str, backend: Backend) -> JSONResponse:
    backend.im_bridges.revoke_invite(platform, token)
    return ok({"token": token, "revoked": True}, backend.clock.now())


@router.get("/im-bridges/{platform}/allowlist")
async def list_allowlist(platform: str, backend: Backend) -> JSONResponse:
    return ok({"allowlist": backend.im_bridges.allowlist(platform)}, backend.clock.now())


@router.delete("/im-bridges/{platform}/allowlist/{chat_id}")
async def remove_allowed(platform: str, chat_id: str, backend: Backend) -> JSONResponse:
    backend.im_bridges.remove_allowed(platform, chat_id)
    return ok({"chat_id": chat_id, "removed": True}, backend.clock.now())


@router.get("/im-bridges/{platform}/sessions")
async def list_sessions(platform: str, backend: Backend) -> JSONResponse:
    return ok(wire.sessions(backend.im_bridges.sessions(platform)), backend.clock.now())


@router.post("/im-bridges/{platform}/sessions/{chat_id}/reset")
async def reset_session(platform: str, chat_id: str, backend: Backend) -> JSONResponse:
    backend.im_bridges.reset_session(platform, chat_id)
    return ok({"chat_id": chat_id, "reset": True}, backend.clock.now())
