"""The automation backend's agents: their specs, schedules, resources, executions and messages.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock. Nested,
free-form parts a client stores and reads back (decision traces) stay mappings: the backend never
interprets them beyond what is stated here.

The other acting areas have their own modules (:mod:`hardware.ports.llm_backends`,
:mod:`hardware.ports.dashboards`, :mod:`hardware.ports.extensions`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

AGENT_STATUSES = ("active", "paused", "error")
"""What ``POST /agents/:id/status`` may set; ``executing`` and ``stopped`` are only reported."""
SCHEDULE_TYPES = ("interval", "cron", "event")
EXECUTION_STATUSES = ("running", "completed", "failed", "partial")
RESOURCE_TYPES = ("device", "metric", "command", "data_stream", "extension_tool", "extension_metric")
MIN_INTERVAL_S = 10


@dataclass(frozen=True, slots=True)
class Schedule:
    schedule_type: str
    interval_seconds: int | None = None
    cron_expression: str | None = None
    timezone: str | None = None
    event_filter: str | None = None


@dataclass(frozen=True, slots=True)
class AgentResource:
    resource_type: str
    resource_id: str
    """``device_id`` for a device, ``device_id:metric`` / ``device_id:command`` for the others."""
    name: str
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class AgentSpec:
    """What a client gives on create (and, partially, on update)."""

    name: str
    user_prompt: str
    schedule: Schedule
    description: str | None = None
    resources: tuple[AgentResource, ...] = ()
    """Device, metric and command bindings (``device_ids``/``metrics``/``commands`` fold into these)."""
    llm_backend_id: str | None = None
    execution_mode: str | None = None
    """``free``/``react`` → free; anything else, including ``None``, → focused."""
    system_prompt: str | None = None
    enable_tool_chaining: bool | None = None
    max_chain_depth: int | None = None
    priority: int | None = None
    context_window_size: int | None = None


@dataclass(frozen=True, slots=True)
class AgentStats:
    total_executions: int = 0
    successful_executions: int = 0
    failed_executions: int = 0
    avg_duration_ms: float = 0.0


@dataclass(frozen=True, slots=True)
class Agent:
    id: str
    name: str
    user_prompt: str
    status: str
    """``active``, ``paused``, ``error`` or ``executing`` (lowercase; the API capitalises)."""
    schedule: Schedule
    execution_mode: str
    resources: tuple[AgentResource, ...]
    created_at: float
    updated_at: float
    stats: AgentStats
    description: str | None = None
    llm_backend_id: str | None = None
    system_prompt: str | None = None
    enable_tool_chaining: bool | None = None
    max_chain_depth: int | None = None
    priority: int | None = None
    context_window_size: int | None = None
    last_execution_at: float | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class Execution:
    id: str
    agent_id: str
    agent_name: str
    timestamp: float
    trigger_type: str
    """``schedule``, ``manual``, ``event`` or ``rule``."""
    status: str
    """One of :data:`EXECUTION_STATUSES`."""
    duration_ms: int
    error: str | None = None
    decision_process: Mapping[str, Any] = field(default_factory=dict)
    """``situation_analysis, data_collected[], reasoning_steps[], decisions[], conclusion, confidence``."""
    result: Mapping[str, Any] = field(default_factory=dict)
    """``actions_executed[], notifications_sent[], summary, success_rate``."""


@dataclass(frozen=True, slots=True)
class AgentMessage:
    id: str
    agent_id: str
    content: str
    message_type: str
    timestamp: float


@dataclass(frozen=True, slots=True)
class CronCheck:
    valid: bool
    error: str | None = None
    next_executions: tuple[float, ...] = ()
    description: str | None = None


@runtime_checkable
class AutomationAgents(Protocol):
    def list_agents(self) -> list[Agent]: ...

    def create_agent(self, spec: AgentSpec) -> Agent:
        """``InvalidInput`` for a bad schedule or a focused agent without resources; ``details``
        carry ``status_hint`` (400 or 422) where the vendor distinguishes them."""

    def get_agent(self, agent_id: str) -> Agent: ...

    def update_agent(self, agent_id: str, changes: Mapping[str, Any]) -> Agent:
        """Partial update: only the keys present change (``schedule`` as a :class:`Schedule`)."""

    def delete_agent(self, agent_id: str) -> None: ...

    def set_status(self, agent_id: str, status: str) -> Agent: ...

    def execute(self, agent_id: str, trigger_type: str = "manual", data: Any = None) -> Execution:
        """Start an execution now; returns it (completed at once for the simulated model)."""

    async def invoke(self, agent_id: str, data: Any = None, timeout_s: float = 60.0) -> Execution:
        """Run an execution to its end; ``Timeout`` past ``timeout_s``."""

    def executions(self, agent_id: str, limit: int = 50) -> list[Execution]:
        """Newest first, at most ``limit``."""

    def get_execution(self, agent_id: str, execution_id: str) -> Execution: ...

    def validate_cron(self, expression: str) -> CronCheck: ...

    def validate_llm(self, backend_id: str | None) -> Mapping[str, Any]:
        """Whether agents can use the backend: ``valid``, ``backend_id``, ``message``."""

    def available_resources(self, agent_id: str) -> list[Mapping[str, Any]]:
        """The devices an agent could bind, with their metrics and commands."""

    def memory(self, agent_id: str) -> Mapping[str, Any]:
        """What the agent remembers: its recent conclusions since the memory was last cleared."""

    def clear_memory(self, agent_id: str) -> None: ...

    def messages(self, agent_id: str) -> list[AgentMessage]: ...

    def add_message(self, agent_id: str, content: str, message_type: str = "instruction") -> AgentMessage:
        """A user message the agent reads on its next executions (newest ``context_window_size``)."""

    def delete_messages(self, agent_id: str, message_id: str | None = None) -> int:
        """Delete one message (``NotFound`` when unknown) or all; the number deleted."""
