"""Bringing devices in: the auto-onboarding drafts beyond list/approve/reject (edit, analysis, the
"LLM" enhancement, type suggestions and signatures, cleanup, configuration, uploaded samples),
device-type generation (MDL from examples, a type from samples) and BLE provisioning.

Shapes are the vendor's JSON objects (mappings); a generated MDL is a :class:`DeviceType`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from hardware.ports.devices import DeviceType


@dataclass(frozen=True, slots=True)
class OnboardConfig:
    enabled: bool = True
    max_samples: int = 10
    draft_retention_secs: int = 86_400


@dataclass(frozen=True, slots=True)
class BrokerAddress:
    """What a BLE-provisioned device is told to connect to."""

    host: str
    port: int
    username: str = ""
    password: str = ""


@dataclass(frozen=True, slots=True)
class BleRequest:
    model: str
    sn: str
    device_type: str
    device_name: str
    broker_id: str
    resolve_only: bool = False


@runtime_checkable
class Provisioning(Protocol):
    # Drafts -------------------------------------------------------------------------------------
    def draft(self, device_id: str) -> Mapping[str, Any]:
        """The vendor's ``DraftDeviceDto`` (every field, nulls included); ``NotFound``."""

    def drafts(self) -> list[Mapping[str, Any]]: ...

    def update_draft(self, device_id: str, name: str | None, description: str | None) -> None:
        """``InternalError`` for an unknown draft, as the vendor's manager reports it."""

    def analyze(self, device_id: str) -> None:
        """``NotFound``; ``InvalidInput`` when there is no sample to analyse."""

    def enhance(self, device_id: str) -> Mapping[str, Any]:
        """The draft as it was; its metrics get display names, descriptions and units afterwards.
        ``NotFound``; ``InvalidInput`` before an analysis."""

    def suggest_types(self, device_id: str) -> Mapping[str, Any]:
        """``suggestions`` (every device type with its match score, best first) and ``exact_match``."""

    def type_signatures(self) -> Mapping[str, str]:
        """Signature hash -> device type, for the types analyses created."""

    def cleanup(self) -> int:
        """Drop drafts idle past the retention; how many."""

    def config(self) -> OnboardConfig: ...

    def set_config(self, config: OnboardConfig) -> None: ...

    def upload(self, device_id: str | None, source: str | None, samples: Sequence[Any]) -> tuple[str, int]:
        """Feed samples to auto-onboarding as an unknown device's data; (device id, samples taken)."""

    # Generation and provisioning -------------------------------------------------------------------
    def generate_mdl(
        self, device_name: str, description: str, uplink_example: str, downlink_example: str
    ) -> DeviceType:
        """``InvalidInput`` with the vendor's message for a bad name or example."""

    def generate_from_samples(
        self, device_id: str | None, manufacturer: str | None, samples: Sequence[Any], min_coverage: float
    ) -> Mapping[str, Any]: ...

    def ble_provision(
        self, request: BleRequest, brokers: Callable[[str], BrokerAddress]
    ) -> Mapping[str, Any]:
        """``InvalidInput`` for an unknown device type, then the broker named (``brokers`` raises
        ``NotFound``); creates (or, unless ``resolve_only``, updates) the MQTT device the serial
        number names."""
