"""The automation backend's device area: devices, device types, drafts, commands and telemetry.

Value types here are plain frozen data; timestamps are Unix seconds on the backend's clock. The
vendor's JSON shapes live in the API layer, which maps these types.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Final, Literal, Protocol, runtime_checkable


class _Keep(Enum):
    KEEP = "keep"


KEEP: Final = _Keep.KEEP
"""Marks an update field that was absent from the request: the current value is kept."""
Keep = Literal[_Keep.KEEP]

DEVICE_STATUSES = ("online", "offline", "disconnected")
AGGREGATES = ("avg", "min", "max", "sum", "last")
"""Aggregate functions of the per-device telemetry query; the cross-device query adds ``count``."""


# Device types -------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class DataType:
    """``integer|float|string|boolean|binary|array|enum``; enums carry options, arrays an element type."""

    kind: str
    options: tuple[str, ...] = ()
    element_type: str | None = None


@dataclass(frozen=True, slots=True)
class MetricDef:
    name: str
    display_name: str
    data_type: DataType
    unit: str = ""
    min: float | None = None
    max: float | None = None
    required: bool = False


@dataclass(frozen=True, slots=True)
class ParameterDef:
    name: str
    display_name: str
    data_type: DataType
    default_value: Any = None
    min: float | None = None
    max: float | None = None
    unit: str = ""
    allowed_values: tuple[Any, ...] = ()
    required: bool = False
    help_text: str = ""


@dataclass(frozen=True, slots=True)
class CommandDef:
    name: str
    display_name: str
    description: str = ""
    payload_template: str = ""
    parameters: tuple[ParameterDef, ...] = ()
    fixed_values: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DeviceType:
    device_type: str
    name: str
    description: str = ""
    categories: tuple[str, ...] = ()
    mode: str = "simple"
    metrics: tuple[MetricDef, ...] = ()
    commands: tuple[CommandDef, ...] = ()
    uplink_samples: tuple[Any, ...] = ()
    default_offline_timeout_secs: int | None = None
    store_raw: bool | None = None
    built_in: bool = False
    """Generated from a simulated sensor group (not created by a client)."""


@dataclass(frozen=True, slots=True)
class Validation:
    valid: bool
    errors: tuple[str, ...]
    warnings: tuple[str, ...]
    message: str


# Devices ------------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Device:
    device_id: str
    name: str
    device_type: str
    adapter_type: str
    connection_config: Mapping[str, Any]
    status: str
    """``online`` (seen within the timeout), ``offline`` (seen, timed out), ``disconnected`` (never)."""
    last_seen: float | None
    offline_timeout_secs: int | None
    effective_offline_timeout_secs: int
    adapter_id: str | None = None
    simulated: bool = False
    metric_count: int = 0
    command_count: int = 0

    @property
    def online(self) -> bool:
        return self.status == "online"


@dataclass(frozen=True, slots=True)
class DeviceDetail:
    device: Device
    metrics: tuple[MetricDef, ...]
    commands: tuple[CommandDef, ...]
    current_values: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DevicePage:
    devices: tuple[Device, ...]
    page: int
    limit: int
    total: int


@dataclass(frozen=True, slots=True)
class DeviceCreated:
    device_id: str
    updated_existing: bool


@dataclass(frozen=True, slots=True)
class CurrentMetric:
    name: str
    display_name: str
    unit: str
    data_type: str
    value: Any
    is_virtual: bool = False


@dataclass(frozen=True, slots=True)
class CurrentValues:
    device: Device
    metrics: tuple[CurrentMetric, ...]
    commands: tuple[CommandDef, ...]


@dataclass(frozen=True, slots=True)
class CommandSent:
    device_id: str
    command: str
    command_id: str


@dataclass(frozen=True, slots=True)
class CommandRecord:
    """One command sent to a device, as its history shows it."""

    command_id: str
    command_name: str
    parameters: Mapping[str, Any]
    status: str
    """``pending|executing|success|failed|timeout``"""
    result: Any
    error: str | None
    created_at: float
    completed_at: float | None


# Webhook and drafts -------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class Ingested:
    device_id: str
    metrics_received: int
    draft: bool
    """The device is unknown: the data went to an auto-onboarding draft."""


@dataclass(frozen=True, slots=True)
class Draft:
    id: str
    device_id: str
    source: str
    status: str
    sample_count: int
    max_samples: int
    discovered_at: float
    updated_at: float
    generated_type: str | None = None
    original_topic: str | None = None
    error_message: str | None = None


@dataclass(frozen=True, slots=True)
class Approval:
    original_device_id: str
    system_device_id: str
    device_type: str
    recommended_topic: str
    message: str


# Telemetry ----------------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)
class TelemetryQuery:
    """Parameters of ``GET /devices/:id/telemetry``; ``None`` means "not given"."""

    metric: str | None = None
    start: float | None = None
    end: float | None = None
    hours: int | None = None
    aggregate: str | None = None
    limit: int = 100
    offset: int = 0
    cursor: float | None = None
    history: bool = False
    bucketed: bool = False


@dataclass(frozen=True, slots=True)
class Series:
    """Rows of one metric, column-wise (cheap to build from numpy). ``values[i]`` follows the
    requested aggregate; ``mins/maxs/sums/counts`` are the raw aggregates of the row."""

    metric: str
    timestamps: Sequence[float]
    values: Sequence[Any]
    mins: Sequence[Any]
    maxs: Sequence[Any]
    sums: Sequence[Any]
    counts: Sequence[int]
    total: int
    """Points of this metric in the window, before offset, cursor, limit and bucketing."""

    def __len__(self) -> int:
        return len(self.timestamps)


@dataclass(frozen=True, slots=True)
class TelemetryPage:
    device_id: str
    metrics: tuple[str, ...]
    series: tuple[Series, ...]
    start: float
    end: float
    aggregated: bool
    bucketed: bool
    offset: int
    limit: int
    total: int
    next_cursor: float | None
    """Timestamp of the page's oldest point when older points remain; ``None`` on the last page."""


@dataclass(frozen=True, slots=True)
class SourceQuery:
    source: str | None
    metric: str | None
    start: float | None = None
    end: float | None = None
    limit: int = 100
    offset: int = 0
    aggregate: str | None = None


@dataclass(frozen=True, slots=True)
class SourceSeries:
    """The cross-device query's answer: the newest ``limit`` points after ``offset``, oldest first,
    or (with ``aggregate``) one value over the window."""

    source_id: str
    source: str
    metric: str
    start: float
    end: float
    total_count: int
    series: Series
    aggregation: str | None = None
    value: Any = None
    quality: Sequence[float | None] = ()


@runtime_checkable
class AutomationDevices(Protocol):
    """Devices of the automation server (simulated sensors, and devices clients create).

    Unknown device ids raise ``NotFound(resource="device")``; bad values ``InvalidInput``.
    """

    def list(
        self, page: int = 1, limit: int = 50, device_type: str | None = None, status: str | None = None
    ) -> DevicePage: ...

    def create(
        self,
        device_type: str,
        name: str,
        adapter_type: str,
        connection_config: Mapping[str, Any],
        device_id: str | None = None,
        offline_timeout_secs: int | None = None,
    ) -> DeviceCreated:
        """Creating an existing id replaces its name and configuration. An unknown device type
        raises ``InternalError`` (the vendor reports it as a server failure)."""

    def detail(self, device_id: str) -> DeviceDetail: ...

    def current(self, device_id: str) -> CurrentValues: ...

    def update(
        self,
        device_id: str,
        *,
        name: str | None = None,
        adapter_type: str | None = None,
        connection_config: Mapping[str, Any] | None = None,
        adapter_id: str | Keep | None = KEEP,
        offline_timeout_secs: int | Keep | None = KEEP,
    ) -> None:
        """``offline_timeout_secs``: ``KEEP`` keeps, ``None`` clears, 30..86400 sets."""

    def delete(self, device_id: str) -> None:
        """Removes the device; its telemetry stays readable with ``history=True``."""

    def send_command(self, device_id: str, command: str, params: Mapping[str, Any]) -> CommandSent: ...

    def command_history(self, device_id: str, limit: int) -> tuple[CommandRecord, ...]:
        """The device's commands, newest first; ``NotFound`` for an unknown device."""


@runtime_checkable
class DeviceTypes(Protocol):
    """The device type templates: the simulated sensor groups' own, and those clients create."""

    def list(self) -> tuple[DeviceType, ...]: ...

    def get(self, device_type: str) -> DeviceType: ...

    def create(self, template: DeviceType) -> DeviceType: ...

    def validate(self, template: DeviceType) -> Validation: ...

    def delete(self, device_type: str) -> None: ...


@runtime_checkable
class DeviceIngest(Protocol):
    """Data devices push (webhook, MQTT uplink, single metrics) and the drafts of unknown devices."""

    def webhook(
        self,
        device_id: str,
        data: Mapping[str, Any],
        timestamp: float | None = None,
        quality: float | None = None,
        token: str | None = None,
    ) -> Ingested:
        """Record pushed metrics. A device with ``webhook_token`` set requires it
        (``Unauthenticated`` otherwise); an unknown device gets a draft."""

    def uplink(self, device_id: str, data: Mapping[str, Any], topic: str) -> Ingested | None:
        """An uplink received from the broker; an unknown device gets a draft. Uplinks of the
        simulated sensors themselves are ignored (``None``)."""

    def push_metric(self, device_id: str, metric: str, value: Any, timestamp: float | None) -> float:
        """Store one sample (``timestamp`` in Unix seconds, default now); returns the timestamp used."""

    def list_drafts(self) -> tuple[Draft, ...]: ...

    def get_draft(self, draft_id: str) -> Draft:
        """``NotFound(resource="draft")`` for an unknown draft."""

    def reject_draft(self, draft_id: str, reason: str) -> Draft:
        """Mark the draft rejected with ``reason``; its later samples no longer register it."""

    def approve_draft(
        self,
        draft_id: str,
        existing_type: str | None = None,
        new_type: DeviceType | None = None,
        device_name: str | None = None,
    ) -> Approval: ...


@runtime_checkable
class DeviceTelemetry(Protocol):
    """Clients' reads of stored telemetry; each read counts in the telemetry statistics."""

    def read(self, device_id: str, query: TelemetryQuery) -> TelemetryPage: ...

    def read_source(self, query: SourceQuery) -> SourceSeries: ...
