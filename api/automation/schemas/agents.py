"""Wire shapes of the agents area: request bodies and the vendor's JSON for agents, executions and
agent messages (statuses capitalised, times RFC 3339)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict

from hardware.ports.agents import Agent, AgentMessage, AgentResource, AgentSpec, Execution, Schedule


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
        plain: tuple[str, ...] = (
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


def agent_summary(a: Agent) -> dict[str, Any]:
    return {"id": a.id, "name": a.name, "status": _status(a)}


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


def message_info(m: AgentMessage) -> dict[str, Any]:
    return {
        "id": m.id,
        "content": m.content,
        "message_type": m.message_type,
        "timestamp": rfc3339(m.timestamp),
    }
