"""The automation backend's acting areas: agents, model backends, dashboards and extensions.

Value types are plain frozen data; timestamps are Unix seconds on the backend's clock. Nested,
free-form parts a client stores and reads back (dashboard components, decision traces) stay
mappings: the backend never interprets them beyond what is stated here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

# Agents ---------------------------------------------------------------------------------------
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


# Model backends ------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class BackendType:
    id: str
    name: str
    description: str
    default_model: str
    default_endpoint: str | None
    requires_api_key: bool
    supports_streaming: bool
    supports_thinking: bool
    supports_multimodal: bool


@dataclass(frozen=True, slots=True)
class Capabilities:
    supports_streaming: bool = False
    supports_multimodal: bool = False
    multimodal_user_override: bool | None = None
    multimodal_source: str = "probe"
    """``probe`` (what the model reported), ``default`` (not probed) or ``user`` (overridden)."""
    supports_thinking: bool = False
    supports_tools: bool = True
    max_context: int = 4096


@dataclass(frozen=True, slots=True)
class BackendSpec:
    name: str
    backend_type: str
    model: str
    endpoint: str | None = None
    api_key: str | None = None
    temperature: float = 0.7
    top_p: float = 0.9
    top_k: int | None = None
    max_tokens: int | None = None
    thinking_enabled: bool = False
    thinking_effort: str | None = None


@dataclass(frozen=True, slots=True)
class ModelBackend:
    id: str
    name: str
    backend_type: str
    endpoint: str | None
    model: str
    api_key_configured: bool
    is_active: bool
    temperature: float
    top_p: float
    top_k: int | None
    max_tokens: int | None
    thinking_enabled: bool
    thinking_effort: str | None
    capabilities: Capabilities
    updated_at: float
    healthy: bool


@dataclass(frozen=True, slots=True)
class BackendTest:
    backend_id: str
    success: bool
    latency_ms: int
    reply: str | None = None
    error: str | None = None


@runtime_checkable
class ModelBackends(Protocol):
    def types(self) -> list[BackendType]: ...

    def list_backends(self) -> list[ModelBackend]: ...

    def active_id(self) -> str | None: ...

    async def create_backend(self, spec: BackendSpec) -> ModelBackend:
        """Registers and probes the backend (real HTTP for the HTTP kinds)."""

    def get_backend(self, backend_id: str) -> ModelBackend: ...

    async def update_backend(self, backend_id: str, changes: Mapping[str, Any]) -> ModelBackend: ...

    def delete_backend(self, backend_id: str) -> None: ...

    def activate(self, backend_id: str) -> ModelBackend: ...

    def set_multimodal(self, backend_id: str, multimodal: bool | None) -> ModelBackend:
        """``None`` clears the user's override: the probed value applies again."""

    async def test_backend(self, backend_id: str) -> BackendTest: ...

    async def generate(self, prompt: str, backend_id: str | None = None) -> Mapping[str, Any]:
        """One completion without tools: ``text``, ``backend_id``, ``model``."""

    async def ollama_models(self, endpoint: str | None = None) -> list[Mapping[str, Any]]:
        """The models a local Ollama server has (``GET {endpoint}/api/tags``)."""


# Dashboards ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Dashboard:
    id: str
    name: str
    layout: Mapping[str, Any]
    components: tuple[Mapping[str, Any], ...]
    created_at: float
    updated_at: float
    is_default: bool = False
    sort_order: int | None = None
    description: str | None = None


@dataclass(frozen=True, slots=True)
class ShareLink:
    token: str
    dashboard_id: str
    permissions: Mapping[str, Any]
    created_at: float
    expires_at: float | None


@dataclass(frozen=True, slots=True)
class SharedDashboard:
    dashboard: Dashboard
    link: ShareLink


@runtime_checkable
class Dashboards(Protocol):
    def list_dashboards(self) -> list[Dashboard]: ...

    def create_dashboard(
        self,
        name: str,
        layout: Mapping[str, Any] | None = None,
        components: Sequence[Mapping[str, Any]] = (),
        description: str | None = None,
    ) -> Dashboard: ...

    def get_dashboard(self, dashboard_id: str) -> Dashboard: ...

    def update_dashboard(self, dashboard_id: str, changes: Mapping[str, Any]) -> Dashboard: ...

    def delete_dashboard(self, dashboard_id: str) -> None: ...

    def share(
        self, dashboard_id: str, permissions: Mapping[str, Any], expires_in_hours: float | None
    ) -> ShareLink: ...

    def shares(self, dashboard_id: str) -> list[ShareLink]: ...

    def revoke_share(self, dashboard_id: str, token: str) -> None: ...

    def shared(self, token: str) -> SharedDashboard:
        """``NotFound`` for an unknown token; ``NotFound`` with resource ``expired_share`` past expiry."""

    def proxy(self, token: str, method: str, path: str) -> Mapping[str, Any]:
        """What a shared dashboard's component fetches through the link (read-only data)."""

    def duplicate(self, dashboard_id: str) -> Dashboard: ...

    def add_component(self, dashboard_id: str, component: Mapping[str, Any]) -> Dashboard: ...

    def remove_component(self, dashboard_id: str, component_id: str) -> Dashboard: ...

    def reorder(self, dashboard_ids: Sequence[str]) -> list[Dashboard]:
        """Give the listed dashboards ``sort_order`` 0, 1, 2... in that order."""

    def templates(self) -> list[Mapping[str, Any]]: ...


# Extensions ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class ExtensionCommand:
    id: str
    display_name: str
    description: str
    input_schema: Mapping[str, Any] = field(default_factory=dict)
    output_fields: tuple[Mapping[str, Any], ...] = ()


@dataclass(frozen=True, slots=True)
class ExtensionMetric:
    name: str
    display_name: str
    data_type: str
    unit: str = ""


@dataclass(frozen=True, slots=True)
class StreamCapability:
    direction: str
    """``upload``, ``download`` or ``bidirectional``."""
    mode: str
    """``stateless``, ``stateful`` or ``push``."""
    supported_data_types: tuple[str, ...]
    max_chunk_size: int
    preferred_chunk_size: int
    max_concurrent_sessions: int


@dataclass(frozen=True, slots=True)
class Extension:
    id: str
    name: str
    version: str
    description: str
    author: str
    extension_type: str
    state: str
    """``Running``, ``Stopped``, ``Error``... (the vendor's display strings)."""
    file_path: str
    loaded_at: float
    health_status: str
    enabled: bool
    commands: tuple[ExtensionCommand, ...]
    metrics: tuple[ExtensionMetric, ...]
    components: tuple[Mapping[str, Any], ...]
    assets: tuple[str, ...]
    stream: StreamCapability | None = None
    disabled_commands: tuple[str, ...] = ()
    config: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class CommandResult:
    extension_id: str
    command: str
    success: bool
    output: Mapping[str, Any]
    duration_ms: int


@dataclass(frozen=True, slots=True)
class SyncReport:
    scanned: int
    installed: tuple[str, ...]
    skipped: tuple[str, ...]
    failed: tuple[tuple[str, str], ...]
    """(file, reason) for every manifest that could not be installed."""


@dataclass(frozen=True, slots=True)
class PushFrame:
    """One frame of a push-mode stream session."""

    sequence: int
    data: bytes
    data_type: str
    timestamp: float
    metadata: Mapping[str, Any] = field(default_factory=dict)


class StreamSession(Protocol):
    """A push session: frames arrive from the world; ``close`` ends it."""

    session_id: str
    dropped: int

    async def next_frame(self) -> PushFrame: ...

    def close(self) -> None: ...


@runtime_checkable
class Extensions(Protocol):
    def list_extensions(self) -> list[Extension]: ...

    def types(self) -> list[str]: ...

    def get_extension(self, extension_id: str) -> Extension: ...

    def health(self, extension_id: str) -> Mapping[str, Any]: ...

    def command(self, extension_id: str, command: str, args: Mapping[str, Any]) -> CommandResult: ...

    def asset(self, extension_id: str, path: str) -> tuple[bytes, str]:
        """(content, media type); ``NotFound`` for anything outside the extension's own assets."""

    def upload(self, file_name: str, content: bytes) -> Extension:
        """Store an uploaded manifest in the extensions directory and install it (``InvalidInput``
        for anything but a valid ``.json`` manifest; ``Conflict`` when the id is installed)."""

    def register(self, file_name: str) -> Extension:
        """Install the manifest the extensions directory holds under ``file_name``."""

    def sync(self) -> SyncReport:
        """Scan the extensions directory and install what is new, before returning."""

    def open_stream(self, extension_id: str) -> StreamSession:
        """``InvalidInput`` with ``stream_code`` when the extension has no push stream."""

    def install_component(self, component_id: str) -> Mapping[str, Any]:
        """Install a marketplace component: ``NotFound`` when missing, ``Unavailable`` when the
        marketplace cannot be reached."""

    def market(self) -> list[Mapping[str, Any]]:
        """The marketplace's components (``Unavailable`` when it cannot be reached)."""

    def set_enabled(self, extension_id: str, enabled: bool) -> Extension: ...

    def components_installed(self) -> list[Mapping[str, Any]]:
        """Frontend components installed from the marketplace."""

    def component_bundle(self, component_id: str) -> bytes:
        """The JavaScript bundle of an installed component."""

    def remove_component(self, component_id: str) -> None: ...

    def uninstall(self, extension_id: str) -> None:
        """Remove an installed extension (a later sync installs it again from the directory)."""

    def sessions(self, extension_id: str) -> list[Mapping[str, Any]]:
        """Open stream sessions: ``session_id``, ``frames`` sent, ``dropped``."""

    def set_command_enabled(self, extension_id: str, command: str, enabled: bool) -> Extension:
        """A disabled command is refused (``Conflict``) until enabled again."""

    def reload(self, extension_id: str) -> Extension: ...

    def descriptor(self, extension_id: str) -> Mapping[str, Any]:
        """The installed manifest (asset names, not their contents)."""

    def set_config(self, extension_id: str, config: Mapping[str, Any]) -> Extension: ...

    def logs(self, extension_id: str, limit: int = 100) -> list[Mapping[str, Any]]:
        """Newest last: ``timestamp``, ``level``, ``message``."""

    def clear_logs(self, extension_id: str) -> int: ...

    def sync_status(self) -> Mapping[str, Any]:
        """The last directory scan: when, and what it found."""
