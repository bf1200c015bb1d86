"""``LeanRoute`` calls simple operations directly and behaves like FastAPI's handler; anything else
keeps FastAPI's handler. ``AreaIndex`` finds the same route a linear scan would."""

from typing import Annotated

import httpx
from fastapi import APIRouter, Depends, FastAPI, HTTPException, Request
from fastapi.responses import JSONResponse

from api.routing import LeanRoute, finish, mount


def _app() -> tuple[FastAPI, list[str]]:
    calls: list[str] = []

    async def guard(request: Request) -> None:
        calls.append("guard")
        if request.headers.get("x-deny"):
            raise HTTPException(403, "denied")

    async def backend(request: Request) -> str:
        calls.append("backend")
        return "be"

    async def user(request: Request, be: Annotated[str, Depends(backend)]) -> str:
        calls.append("user")
        return f"user-of-{be}"

    router = APIRouter(dependencies=[Depends(guard)])

    @router.get("/things/{thing_id}")
    async def thing(thing_id: str, u: Annotated[str, Depends(user)], be: Annotated[str, Depends(backend)]):
        return JSONResponse({"id": thing_id, "user": u, "backend": be})

    @router.get("/things/{thing_id}/plain")
    async def plain(thing_id: str) -> dict:
        return {"id": thing_id}

    @router.get("/things/{thing_id}/paged")
    async def paged(thing_id: str, limit: int = 10) -> dict:
        return {"id": thing_id, "limit": limit}

    @router.get("/things/special")
    async def special() -> dict:
        return {"special": True}

    @router.get("/other/{path:path}")
    async def other(path: str) -> dict:
        return {"path": path}

    app = FastAPI()
    mount(app, router, "/api")
    finish(app, area_depth=2)
    return app, calls


def _route(app: FastAPI, path: str) -> LeanRoute:
    return next(r for r in app.state.routes if r.path == path)


async def test_simple_operations_are_called_directly_with_fastapis_order_and_cache() -> None:
    app, calls = _app()
    assert _route(app, "/api/things/{thing_id}").lean
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        r = await c.get("/api/things/a%20b")
        assert r.status_code == 200
        assert r.json() == {"id": "a b", "user": "user-of-be", "backend": "be"}
        assert calls == ["guard", "backend", "user"]  # router dependency first; backend once
        calls.clear()
        r = await c.get("/api/things/x", headers={"x-deny": "1"})
        assert r.status_code == 403 and r.json() == {"detail": "denied"} and calls == ["guard"]
        r = await c.get("/api/things/x/plain")
        assert r.status_code == 200 and r.json() == {"id": "x"}


async def test_operations_with_query_parameters_keep_fastapis_handler() -> None:
    app, _ = _app()
    assert not _route(app, "/api/things/{thing_id}/paged").lean
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/api/things/x/paged?limit=3")).json() == {"id": "x", "limit": 3}
        assert (await c.get("/api/things/x/paged?limit=no")).status_code == 422


async def test_area_index_matches_like_a_scan() -> None:
    app, _ = _app()
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/api/things/special")).json() == {"special": True}  # literal first
        assert (await c.get("/api/other/a/b/c")).json() == {"path": "a/b/c"}
        assert (await c.get("/api/other")).status_code == 404
        assert (await c.get("/api/nowhere/x")).status_code == 404
        assert (await c.post("/api/things/x")).status_code == 405
