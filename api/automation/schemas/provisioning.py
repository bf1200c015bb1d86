"""Wire shapes of auto-onboarding (drafts beyond list/approve/reject), device-type generation and
BLE provisioning: request bodies read as serde reads them, and the generated MDL."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictInt, StrictStr

from api.automation.schemas.device_types import command_def, data_type
from hardware.ports.devices import DeviceType
from hardware.ports.provisioning import BleRequest, OnboardConfig


class _Body(BaseModel):
    model_config = ConfigDict(extra="ignore")


class DraftUpdate(_Body):
    name: str | None = None
    description: str | None = None


class OnboardConfigBody(_Body):
    enabled: StrictBool
    max_samples: StrictInt = Field(ge=0)
    draft_retention_secs: StrictInt = Field(ge=0)

    def to_port(self) -> OnboardConfig:
        return OnboardConfig(self.enabled, self.max_samples, self.draft_retention_secs)


class UploadBody(_Body):
    device_id: str | None = None
    source: str | None = None
    data: list[Any]


class GenerateMdlBody(_Body):
    device_name: StrictStr
    description: StrictStr = ""
    uplink_example: StrictStr = ""
    downlink_example: StrictStr = ""


class SampleBody(_Body):
    timestamp: StrictInt
    data: Any


class GenerateTypeBody(_Body):
    device_id: str | None = None
    manufacturer: str | None = None
    samples: list[SampleBody]
    min_coverage: float = 0.0
    min_confidence: float = 0.0


class BleBody(_Body):
    model: str
    sn: str
    device_type: str
    device_name: str
    broker_id: str
    resolve_only: StrictBool = False

    def to_port(self) -> BleRequest:
        return BleRequest(
            self.model, self.sn, self.device_type, self.device_name, self.broker_id, self.resolve_only
        )


def mdl(t: DeviceType) -> dict[str, Any]:
    """A ``DeviceTypeDefinition`` (the MDL format): metrics under ``uplink``, commands under ``downlink``."""
    metrics = [
        {"name": m.name, "display_name": m.display_name, "data_type": data_type(m.data_type), "unit": m.unit,
         "min": m.min, "max": m.max, "required": m.required}
        for m in t.metrics
    ]  # fmt: skip
    return {
        "device_type": t.device_type,
        "name": t.name,
        "description": t.description,
        "categories": list(t.categories),
        "mode": t.mode,
        "uplink": {"metrics": metrics, "samples": []},
        "downlink": {"commands": [command_def(c) for c in t.commands]},
    }
