"""AI agents (jwt-or-api-key): definitions, status, executions and their history. Enveloped."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Path
from fastapi.responses import JSONResponse

from api.automation.deps import Backend, Route, catalogued_router
from api.automation.schemas import ok
from api.automation.schemas.agents import (
    CreateAgent,
    CronBody,
    DetailsBody,
    ExecuteBody,
    LlmCheckBody,
    MessageBody,
    StatusBody,
    UpdateAgent,
    agent_detail,
    agent_item,
    agent_summary,
    execution_detail,
    execution_item,
    message_info,
    rfc3339,
)
from hardware.ports.errors import InternalError

AgentId = Annotated[str, Path(alias="id")]
"""The ``:id`` of the vendor's path."""


# Routes ----------------------------------------------------------------------------------------
async def list_agents(backend: Backend, view: str | None = None) -> JSONResponse:
    agents = backend.agents.list_agents()
    shape = agent_summary if view == "summary" else agent_item
    rows = [shape(a) for a in agents]
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


router = catalogued_router(ROUTES, "agents")
