"""AI agents (jwt-or-api-key): definitions, status, executions and their history. Enveloped.

Also home of :func:`release_router`, which puts each route of the acting areas behind the auth
class the route catalogue gives it in the served release.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict

from api.automation.catalogue import HYBRID, JWT_ONLY, vendor_routes
from api.automation.deps import Backend, admin_user, current_user
from api.automation.schemas import ok
from api.routing import shape_of
from hardware.ports.agents import Agent, AgentMessage, AgentResource, AgentSpec, Execution, Schedule
from hardware.ports.errors import InternalError

AgentId = Annotated[str, Path(alias="id")]
"""The ``:id`` of the vendor's path."""

Route = tuple[str, str, Callable[..., Any]]
"""(method, FastAPI path without the ``/api`` prefix, endpoint)."""


def release_router(routes: list[Route], release: str, tag: str) -> APIRouter:
    """A router whose routes carry the dependencies of their catalogued auth class in ``release``
    (a route the catalogue lacks is protected)."""
    classes = {(r.method, shape_of(r.path)): r.auth(release) for r in vendor_routes()}
    router = APIRouter(tags=[tag])
    for method, path, endpoint in routes:
        shape = shape_of("/api" + path)
        auth = classes.get((method, shape), classes.get(("ANY", shape), HYBRID))
        deps = {HYBRID: [Depends(current_user)], JWT_ONLY: [Depends(admin_user)]}.get(auth, [])
        router.add_api_route(path, endpoint, methods=[method], dependencies=deps)
    return router


def rfc3339(unix: float | None) -> str | None:
    return None if unix is None else datetime.fromtimestamp(unix, UTC).isoformat()


# Bodies ----------------------------------------------------------------------------------------
class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ScheduleBody(_Body):
    schedule_type: str
    interval_seconds: int | None = None
    cron_expression: str | None = None
    timezone: str | None = None
    event_filter: str | None = None

    def to_port(self) -> Schedule:
        return Schedule(**self.model_dump())


class MetricRef(_Body):
    device_id: str
    metric_name: str
    display_name: str = ""
    config: dict[str, Any] | None = None


class CommandRef(_Body):
    device_id: str
    command_name: str
    display_name: str = ""
    parameters: dict[str, Any] = {}


class ResourceBody(_Body):
    resource_id: str
    resource_type: str
    name: str = ""
    config: dict[str, Any] | None = None


class _AgentFields(_Body):
    description: str | None = None
    device_ids: list[str] = []
    metrics: list[MetricRef] = []
    commands: list[CommandRef] = []
    resources: list[ResourceBody] | None = None
    llm_backend_id: str | None = None
    enable_tool_chaining: bool | None = None
    max_chain_depth: int | None = None
    priority: int | None = None
    context_window_size: int | None = None
    execution_mode: str | None = None
    system_prompt: str | None = None
    tool_config: dict[str, Any] | None = None

    def bound(self) -> tuple[AgentResource, ...]:
        out = [
            AgentResource(r.resource_type, r.resource_id, r.name, r.config or {})
            for r in self.resources or ()
        ]
        out += [AgentResource("device", d, d) for d in self.device_ids]
        out += [
            AgentResource(
                "metric", f"{m.device_id}:{m.metric_name}", m.display_name or m.metric_name, m.config or {}
            )
            for m in self.metrics
        ]
        out += [
            AgentResource(
                "command",
                f"{c.device_id}:{c.command_name}",
                c.display_name or c.command_name,
                {"parameters": c.parameters},
            )
            for c in self.commands
        ]
        return tuple(out)


class CreateAgent(_AgentFields):
    name: str
    user_prompt: str
    schedule: ScheduleBody

    def to_port(self) -> AgentSpec:
        return AgentSpec(
            name=self.name,
            user_prompt=self.user_prompt,
            schedule=self.schedule.to_port(),
            description=self.description,
            resources=self.bound(),
            llm_backend_id=self.llm_backend_id,
            execution_mode=self.execution_mode,
            system_prompt=self.system_prompt,
            enable_tool_chaining=self.enable_tool_chaining,
            max_chain_depth=self.max_chain_depth,
            priority=self.priority,
            context_window_size=self.context_window_size,
        )


class UpdateAgent(_AgentFields):
    name: str | None = None
    user_prompt: str | None = None
    schedule: ScheduleBody | None = None

    def changes(self) -> dict[str, Any]:
        given = self.model_fields_set
        plain = (
            "name",
            "user_prompt",
            "description",
            "llm_backend_id",
            "enable_tool_chaining",
            "max_chain_depth",
        )
        plain += ("priority", "context_window_size", "execution_mode", "system_prompt")
        out: dict[str, Any] = {k: getattr(self, k) for k in plain if k in given}
        if "schedule" in given and self.schedule is not None:
            out["schedule"] = self.schedule.to_port()
        if given & {"resources", "device_ids", "metrics", "commands"}:
            out["resources"] = self.bound()
        return out


class StatusBody(_Body):
    status: str


class ExecuteBody(_Body):
    trigger_type: str | None = None
    event_data: Any = None
    input: Any = None
    data: Any = None

    def payload(self) -> Any:
        return (
            self.input if self.input is not None else self.data if self.data is not None else self.event_data
        )


class LlmCheckBody(_Body):
    backend_id: str | None = None
    llm_backend_id: str | None = None


class MessageBody(_Body):
    content: str
    message_type: str = "instruction"


class DetailsBody(_Body):
    execution_ids: list[str]


class CronBody(_Body):
    cron_expression: str | None = None
    expression: str | None = None


# Wire shapes -----------------------------------------------------------------------------------
def _status(agent: Agent) -> str:
    return agent.status.capitalize()


def agent_item(a: Agent) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": a.id,
        "name": a.name,
        "description": a.description,
        "status": _status(a),
        "created_at": rfc3339(a.created_at),
        "last_execution_at": rfc3339(a.last_execution_at),
        "execution_count": a.stats.total_executions,
        "success_count": a.stats.successful_executions,
        "error_count": a.stats.failed_executions,
        "avg_duration_ms": a.stats.avg_duration_ms,
        "execution_mode": a.execution_mode,
    }
    for key in ("enable_tool_chaining", "max_chain_depth", "priority", "context_window_size"):
        if getattr(a, key) is not None:
            item[key] = getattr(a, key)
    return item


def agent_detail(a: Agent) -> dict[str, Any]:
    s = a.schedule
    schedule: dict[str, Any] = {
        "schedule_type": s.schedule_type,
        "interval_seconds": s.interval_seconds,
        "cron_expression": s.cron_expression,
        "timezone": s.timezone,
    }
    if s.event_filter is not None:
        schedule["event_filter"] = s.event_filter
    return {
        **agent_item(a),
        "user_prompt": a.user_prompt,
        "resources": [
            {"resource_type": r.resource_type, "resource_id": r.resource_id, "name": r.name}
            for r in a.resources
        ],
        "schedule": schedule,
        "stats": {
            "total_executions": a.stats.total_executions,
            "successful_executions": a.stats.successful_executions,
            "failed_executions": a.stats.failed_executions,
            "avg_duration_ms": a.stats.avg_duration_ms,
        },
        "updated_at": rfc3339(a.updated_at),
        "error_message": a.error_message,
        "llm_backend_id": a.llm_backend_id,
        "system_prompt": a.system_prompt,
    }


def execution_item(e: Execution) -> dict[str, Any]:
    item: dict[str, Any] = {
        "id": e.id,
        "agent_id": e.agent_id,
        "timestamp": rfc3339(e.timestamp),
        "trigger_type": e.trigger_type,
        "status": e.status.capitalize(),
        "duration_ms": e.duration_ms,
    }
    if e.error is not None:
        item["error"] = e.error
    return item


def execution_detail(e: Execution) -> dict[str, Any]:
    return {**execution_item(e), "decision_process": dict(e.decision_process), "result": dict(e.result)}


# Routes ----------------------------------------------------------------------------------------
async def list_agents(backend: Backend, view: str | None = None) -> JSONResponse:
    agents = backend.agents.list_agents()
    if view == "summary":
        rows = [{"id": a.id, "name": a.name, "status": _status(a)} for a in agents]
    else:
        rows = [agent_item(a) for a in agents]
    return ok({"agents": rows, "count": len(rows)}, backend.clock.now())


async def create_agent(body: CreateAgent, backend: Backend) -> JSONResponse:
    agent = backend.agents.create_agent(body.to_port())
    return ok({"id": agent.id, "name": agent.name, "status": agent.status}, backend.clock.now())


async def list_tools(backend: Backend) -> JSONResponse:
    tools = [
        {"name": t.name, "category": t.category, "description": t.description}
        for t in backend.system.tools()
        if t.category == "device"
    ]
    return ok({"tools": tools, "count": len(tools)}, backend.clock.now())


async def get_agent(agent_id: AgentId, backend: Backend) -> JSONResponse:
    return ok(agent_detail(backend.agents.get_agent(agent_id)), backend.clock.now())


async def update_agent(agent_id: AgentId, body: UpdateAgent, backend: Backend) -> JSONResponse:
    return ok(agent_detail(backend.agents.update_agent(agent_id, body.changes())), backend.clock.now())


async def delete_agent(agent_id: AgentId, backend: Backend) -> JSONResponse:
    backend.agents.delete_agent(agent_id)
    return ok({"id": agent_id, "deleted": True}, backend.clock.now())


async def set_status(agent_id: AgentId, body: StatusBody, backend: Backend) -> JSONResponse:
    agent = backend.agents.set_status(agent_id, body.status)
    return ok({"id": agent.id, "status": agent.status}, backend.clock.now())


async def execute(agent_id: AgentId, backend: Backend, body: ExecuteBody | None = None) -> JSONResponse:
    body = body or ExecuteBody()
    run = backend.agents.execute(agent_id, body.trigger_type or "manual", body.payload())
    data = {
        "execution_id": run.id,
        "agent_id": run.agent_id,
        "agent_name": run.agent_name,
        "status": "Executing",
    }
    return ok(data, backend.clock.now())


async def invoke(agent_id: AgentId, backend: Backend, body: ExecuteBody | None = None) -> JSONResponse:
    run = await backend.agents.invoke(agent_id, (body or ExecuteBody()).payload())
    if run.status == "failed":
        raise InternalError(f"Agent execution failed: {run.error}", resource="agent_execution")
    decision = run.decision_process
    data = {
        "execution_id": run.id,
        "agent_id": run.agent_id,
        "agent_name": run.agent_name,
        "status": "Completed",
        "duration_ms": run.duration_ms,
        "conclusion": decision.get("conclusion", ""),
        "confidence": decision.get("confidence", 0.0),
        "actions": list(run.result.get("actions_executed", [])),
        "has_error": run.status == "partial",
    }
    return ok(data, backend.clock.now())


async def executions(agent_id: AgentId, backend: Backend) -> JSONResponse:
    runs = backend.agents.executions(agent_id, 50)
    data = {"agent_id": agent_id, "executions": [execution_item(e) for e in runs], "count": len(runs)}
    return ok(data, backend.clock.now())


async def get_execution(agent_id: AgentId, execution_id: str, backend: Backend) -> JSONResponse:
    return ok(execution_detail(backend.agents.get_execution(agent_id, execution_id)), backend.clock.now())


async def agent_stats(agent_id: AgentId, backend: Backend) -> JSONResponse:
    detail = agent_detail(backend.agents.get_agent(agent_id))
    return ok({"agent_id": agent_id, **detail["stats"]}, backend.clock.now())


async def validate_cron(body: CronBody, backend: Backend) -> JSONResponse:
    check = backend.agents.validate_cron(body.cron_expression or body.expression or "")
    data: dict[str, Any] = {"valid": check.valid}
    if check.valid:
        data["next_executions"] = [rfc3339(t) for t in check.next_executions]
        data["description"] = check.description
    else:
        data["error"] = check.error
    return ok(data, backend.clock.now())


async def validate_llm(body: LlmCheckBody, backend: Backend) -> JSONResponse:
    check = backend.agents.validate_llm(body.backend_id or body.llm_backend_id)
    return ok(dict(check), backend.clock.now())


async def available_resources(agent_id: AgentId, backend: Backend) -> JSONResponse:
    rows = [dict(r) for r in backend.agents.available_resources(agent_id)]
    return ok({"agent_id": agent_id, "devices": rows, "count": len(rows)}, backend.clock.now())


async def get_memory(agent_id: AgentId, backend: Backend) -> JSONResponse:
    memory = dict(backend.agents.memory(agent_id))
    memory["entries"] = [{**e, "timestamp": rfc3339(e["timestamp"])} for e in memory["entries"]]
    memory["cleared_at"] = rfc3339(memory["cleared_at"])
    return ok(memory, backend.clock.now())


async def clear_memory(agent_id: AgentId, backend: Backend) -> JSONResponse:
    backend.agents.clear_memory(agent_id)
    return ok({"agent_id": agent_id, "cleared": True}, backend.clock.now())


def message_info(m: AgentMessage) -> dict[str, Any]:
    return {
        "id": m.id,
        "content": m.content,
        "message_type": m.message_type,
        "timestamp": rfc3339(m.timestamp),
    }


async def list_messages(agent_id: AgentId, backend: Backend) -> JSONResponse:
    rows = [message_info(m) for m in backend.agents.messages(agent_id)]
    return ok({"agent_id": agent_id, "messages": rows, "count": len(rows)}, backend.clock.now())


async def add_message(agent_id: AgentId, body: MessageBody, backend: Backend) -> JSONResponse:
    message = backend.agents.add_message(agent_id, body.content, body.message_type)
    return ok(message_info(message), backend.clock.now())


async def delete_messages(agent_id: AgentId, backend: Backend) -> JSONResponse:
    deleted = backend.agents.delete_messages(agent_id)
    return ok({"agent_id": agent_id, "deleted": deleted}, backend.clock.now())


async def delete_message(agent_id: AgentId, message_id: str, backend: Backend) -> JSONResponse:
    backend.agents.delete_messages(agent_id, message_id)
    return ok({"agent_id": agent_id, "message_id": message_id, "deleted": True}, backend.clock.now())


async def execution_details(agent_id: AgentId, body: DetailsBody, backend: Backend) -> JSONResponse:
    wanted = set(body.execution_ids)
    runs = [execution_detail(e) for e in backend.agents.executions(agent_id, 500) if e.id in wanted]
    return ok({"agent_id": agent_id, "executions": runs, "count": len(runs)}, backend.clock.now())


ROUTES: list[Route] = [
    ("GET", "/agents", list_agents),
    ("POST", "/agents", create_agent),
    ("GET", "/agents/tools", list_tools),
    ("POST", "/agents/validate-cron", validate_cron),
    ("GET", "/agents/{id}", get_agent),
    ("PUT", "/agents/{id}", update_agent),
    ("DELETE", "/agents/{id}", delete_agent),
    ("POST", "/agents/{id}/status", set_status),
    ("POST", "/agents/{id}/execute", execute),
    ("POST", "/agents/{id}/invoke", invoke),
    ("GET", "/agents/{id}/executions", executions),
    ("GET", "/agents/{id}/executions/{execution_id}", get_execution),
    ("GET", "/agents/{id}/stats", agent_stats),
    ("POST", "/agents/validate-llm", validate_llm),
    ("GET", "/agents/{id}/available-resources", available_resources),
    ("GET", "/agents/{id}/memory", get_memory),
    ("DELETE", "/agents/{id}/memory", clear_memory),
    ("GET", "/agents/{id}/messages", list_messages),
    ("POST", "/agents/{id}/messages", add_message),
    ("DELETE", "/agents/{id}/messages", delete_messages),
    ("DELETE", "/agents/{id}/messages/{message_id}", delete_message),
    ("POST", "/agents/{id}/executions/details", execution_details),
]


def router_for(release: str) -> APIRouter:
    return release_router(ROUTES, release, "agents")
