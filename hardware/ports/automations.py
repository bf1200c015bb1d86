"""The automation backend's automations (data transforms) and its list of remote instances.

An automation is a transform: JavaScript (or the older declarative operations) run on the data of
the devices its scope names, whose results are virtual metrics stored like telemetry under
``transform:<id>`` and under the device. Timestamps are Unix seconds on the backend's clock, except
execution records, which are in milliseconds as the server keeps them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

Scope = str | Mapping[str, str]
"""``"global"``, ``{"device_type": t}`` or ``{"device": id}``."""


@dataclass(frozen=True, slots=True)
class Transform:
    id: str
    name: str
    description: str
    enabled: bool
    execution_count: int
    last_executed: int | None
    created_at: int
    updated_at: int
    scope: Scope
    output_prefix: str
    complexity: int
    """As stored (the definition's own field)."""
    complexity_score: int
    """What lists show: ``complexity`` for JavaScript transforms, else derived from the operations."""
    intent: str | None = None
    js_code: str | None = None
    operations: tuple[Mapping[str, Any], ...] | None = None
    output_metrics: tuple[str, ...] = ()
    """What it outputs, as known before it runs: its prefix (JavaScript), else its operations'
    outputs (the data explorer lists these for a transform that has not run yet)."""


@dataclass(frozen=True, slots=True)
class AutomationChanges:
    """``PUT /automations/:id``: ``None`` keeps a field; ``definition`` merges its known keys."""

    name: str | None = None
    description: str | None = None
    enabled: bool | None = None
    definition: Any = None


@dataclass(frozen=True, slots=True)
class TransformedMetric:
    device_id: str
    metric: str
    value: Any
    timestamp: int
    quality: float | None
    transform_id: str | None = None


@dataclass(frozen=True, slots=True)
class TransformResult:
    metrics: tuple[TransformedMetric, ...]
    warnings: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class CodeTest:
    """``POST /automations/transforms/test-code``: the metrics, or why the code failed."""

    success: bool
    metrics: tuple[TransformedMetric, ...] = ()
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Execution:
    id: str
    automation_id: str
    started_at: int
    """Milliseconds."""
    ended_at: int | None
    status: str
    """``running``, ``completed``, ``failed`` or ``cancelled``."""
    error: str | None
    output: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class TransformOutput:
    """One output metric of a transform that has run: a data source ``transform:<id>:<metric>``."""

    transform_id: str
    transform_name: str
    metric_name: str
    data_source_id: str
    display_name: str
    data_type: str
    unit: str | None
    description: str
    last_update: int | None
    registered_at: int
    enabled: bool


@dataclass(frozen=True, slots=True)
class Intent:
    recommended_type: str
    confidence: int
    reasoning: str


@dataclass(frozen=True, slots=True)
class Imported:
    imported: int
    failed: int


@runtime_checkable
class Automations(Protocol):
    def list_automations(self) -> list[Transform]:
        """In storage order."""

    def get_automation(self, automation_id: str) -> Transform:
        """``NotFound`` for an unknown id."""

    def create_automation(self, name: str, description: str, enabled: bool, definition: Any) -> Transform:
        """``InvalidInput`` when ``definition`` is not a transform (the message says why)."""

    def update_automation(self, automation_id: str, changes: AutomationChanges) -> Transform: ...

    def delete_automation(self, automation_id: str) -> None:
        """Also forgets its execution records; ``NotFound`` for an unknown id."""

    def set_enabled(self, automation_id: str, enabled: bool) -> Transform: ...

    def executions(self, automation_id: str, limit: int) -> list[Execution]:
        """Newest first; an unknown id has none."""

    def templates(self) -> list[Mapping[str, Any]]: ...

    def import_automations(self, automations: Any) -> Imported:
        """``InvalidInput`` unless ``automations`` is a list of complete stored transforms."""

    def analyze_intent(self, description: str) -> Intent: ...

    def process(self, device_id: str, device_type: str | None, data: Any) -> TransformResult:
        """Run every applicable enabled transform on ``data``: outputs are returned and registered as
        data sources, runs recorded, nothing stored as telemetry nor published."""

    def test_transform(
        self, automation_id: str, device_id: str, device_type: str | None, data: Any
    ) -> TransformResult:
        """As :meth:`process`, with this transform only; ``NotFound`` for an unknown id."""

    def test_code(self, code: str, input_data: Any, output_prefix: str) -> CodeTest: ...

    def virtual_metrics(self) -> dict[str, list[str]]:
        """Output metric or prefix -> ``"<id>:<name>"`` of the transforms producing it."""

    def data_sources(self, transform_id: str | None = None) -> list[TransformOutput]:
        """The registered outputs: every one (of enabled transforms) or those of one transform."""

    def data_source(self, data_source_id: str) -> TransformOutput:
        """``NotFound`` for an output no run has registered."""


# Instances -----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Instance:
    """A backend the web app can switch to; ``api_key`` is the whole key (the API masks it)."""

    id: str
    name: str
    url: str
    api_key: str | None
    is_local: bool
    last_status: str
    last_checked_at: int | None
    created_at: int


@dataclass(frozen=True, slots=True)
class InstanceProbe:
    success: bool
    latency_ms: int
    status: str
    error: str | None = None


@runtime_checkable
class Instances(Protocol):
    def list_instances(self) -> list[Instance]:
        """The local instance (``local-default``, never deleted) and the remote ones."""

    def get_instance(self, instance_id: str) -> Instance: ...

    def create_instance(self, name: str, url: str, api_key: str | None) -> Instance:
        """``InvalidInput`` for an empty name or URL, or a URL that is not http(s)."""

    def update_instance(
        self, instance_id: str, name: str | None, url: str | None, api_key: str | None
    ) -> Instance:
        """An empty ``api_key`` removes the key."""

    def delete_instance(self, instance_id: str) -> None:
        """``InvalidInput`` for the local instance; an unknown id is no error."""

    async def test_instance(self, instance_id: str) -> InstanceProbe:
        """``GET <url>/api/health``; the outcome is kept as the instance's status. ``InvalidInput``
        for a URL naming a blocked address."""
