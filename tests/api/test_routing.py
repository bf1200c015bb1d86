"""``LeanRoute`` calls simple operations directly and behaves like FastAPI's handler; anything else
keeps FastAPI's handler. ``AreaIndex`` finds the same route a linear scan would."""

import inspect
from collections.abc import Callable
from typing import Annotated

import httpx
import pytest
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


# FastAPI and Starlette internals that api/routing.py builds on --------------------------------------
# pyproject.toml pins fastapi and starlette to the tested range; these fail, naming the internal, when a
# release in a widened range changes one of them.
def _accepts(func: Callable[..., object], *names: str) -> list[str]:
    """The keyword ``names`` that ``func`` does not accept."""
    params = inspect.signature(func).parameters
    return [n for n in names if n not in params]


def test_the_dependant_model_has_the_fields_lean_routes_read() -> None:
    import dataclasses

    from fastapi.dependencies.models import Dependant

    used = {
        "path_params",
        "query_params",
        "header_params",
        "cookie_params",
        "body_params",
        "dependencies",
        "name",
        "call",
        "use_cache",
        "request_param_name",
        "websocket_param_name",
        "http_connection_param_name",
        "response_param_name",
        "background_tasks_param_name",
        "security_scopes_param_name",
    }
    assert dataclasses.is_dataclass(Dependant), (
        "fastapi.dependencies.models.Dependant is no longer a dataclass"
    )
    missing = used - {f.name for f in dataclasses.fields(Dependant)}
    assert not missing, f"fastapi.dependencies.models.Dependant lost the fields {sorted(missing)}"


def test_routes_expose_what_lean_routes_read() -> None:
    from fastapi.datastructures import DefaultPlaceholder
    from fastapi.routing import APIRoute

    app, _ = _app()
    route = _route(app, "/api/things/{thing_id}")
    used = [
        "dependant",
        "body_field",
        "status_code",
        "response_class",
        "app",
        "methods",
        "path",
        "endpoint",
        "dependencies",
        "tags",
        "summary",
        "description",
        "include_in_schema",
        "name",
    ]
    for name in used:
        assert hasattr(route, name), f"fastapi.routing.APIRoute has no attribute {name!r}"
    assert isinstance(route.response_class, DefaultPlaceholder), (
        "APIRoute.response_class is no longer a fastapi.datastructures.DefaultPlaceholder by default"
    )
    assert hasattr(route.response_class, "value"), "fastapi.datastructures.DefaultPlaceholder has no .value"
    (param,) = route.dependant.path_params
    assert (param.name, param.alias, param.field_info.annotation) == ("thing_id", "thing_id", str), (
        "a Dependant path parameter lost .name, .alias or .field_info.annotation"
    )
    assert not inspect.signature(APIRoute.get_route_handler).parameters.keys() - {"self"}, (
        "fastapi.routing.APIRoute.get_route_handler takes arguments now"
    )


def test_the_constructors_and_registrations_take_the_arguments_routing_passes() -> None:
    from fastapi.routing import APIRoute
    from starlette.routing import Router, request_response

    mounted = [
        "path",
        "endpoint",
        "methods",
        "dependencies",
        "status_code",
        "tags",
        "summary",
        "description",
        "response_class",
        "include_in_schema",
        "name",
        "route_class_override",
    ]
    assert not _accepts(APIRouter.add_api_route, *mounted), "fastapi.routing.APIRouter.add_api_route"
    assert not _accepts(FastAPI.add_api_websocket_route, "path", "endpoint", "name", "dependencies"), (
        "fastapi.FastAPI.add_api_websocket_route"
    )
    assert not _accepts(
        APIRoute.__init__, "path", "endpoint", "methods", "dependencies", "include_in_schema", "name", "tags"
    ), "fastapi.routing.APIRoute.__init__"
    assert not _accepts(Router.__init__, "routes", "redirect_slashes"), "starlette.routing.Router.__init__"
    assert callable(Router(routes=[], redirect_slashes=False).app), "starlette.routing.Router has no .app"
    assert list(inspect.signature(request_response).parameters) == ["func"], (
        "starlette.routing.request_response(func) changed its signature"
    )


async def test_lean_routes_skip_fastapis_dependency_solving(monkeypatch: pytest.MonkeyPatch) -> None:
    """The lean handler replaces the route's ``app`` (what ``starlette.routing.Route.handle`` calls),
    so a lean operation never reaches ``fastapi.routing.solve_dependencies``; a general one does."""
    import fastapi.routing

    app, _ = _app()

    async def refused(*args: object, **kwargs: object) -> None:
        raise AssertionError("solve_dependencies called")

    monkeypatch.setattr(fastapi.routing, "solve_dependencies", refused)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://t") as c:
        assert (await c.get("/api/things/x/plain")).json() == {"id": "x"}
        with pytest.raises(AssertionError, match="solve_dependencies called"):
            await c.get("/api/things/x/paged?limit=3")


async def test_a_decoded_body_is_left_where_request_json_reads_it() -> None:
    """``_decode_json`` stores the value in ``Request._json``, Starlette's cache of ``json()``."""
    from starlette.requests import Request as StarletteRequest

    async def receive() -> dict[str, object]:
        raise AssertionError("starlette.requests.Request.json() no longer reads its _json cache")

    request = StarletteRequest({"type": "http", "method": "POST", "headers": []}, receive)
    request._json = {"cached": True}
    assert await request.json() == {"cached": True}
