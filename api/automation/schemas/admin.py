"""Wire shapes of configuration export, import and validation (the vendor's ``ConfigExport``,
read as strictly as serde reads it) and of the log archive."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Strict(BaseModel):
    model_config = ConfigDict(extra="ignore", strict=True)


class LlmSettingsExport(_Strict):
    backend: str
    endpoint: str | None = None
    model: str
    temperature: float
    top_p: float
    max_tokens: int = Field(ge=0)


class DeviceConfigExport(_Strict):
    device_id: str
    device_type: str
    name: str | None = None
    config: Any = None


class DevicesExport(_Strict):
    devices: list[DeviceConfigExport]


class RuleConfigExport(_Strict):
    id: str
    name: str
    enabled: bool
    rule_text: str
    description: str | None = None


class RulesExport(_Strict):
    rules: list[RuleConfigExport]


class AlertRuleExport(_Strict):
    id: str
    name: str
    severity: str
    condition: str | None = None
    notification_channels: list[str] | None = None


class AlertsExport(_Strict):
    alert_rules: list[AlertRuleExport]


class ConfigExport(_Strict):
    version: str
    exported_at: int
    llm_settings: LlmSettingsExport | None = None
    devices: DevicesExport | None = None
    rules: RulesExport | None = None
    alerts: AlertsExport | None = None

    def to_port(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class ImportSections(_Strict):
    llm_settings: bool = False
    devices: bool = False
    rules: bool = False
    alerts: bool = False


class ImportOptions(_Strict):
    sections: ImportSections = ImportSections()
    overwrite: bool = False


class ConfigImport(_Strict):
    config: ConfigExport
    options: ImportOptions | None = None


def zip_headers(file_name: str) -> dict[str, str]:
    return {
        "Content-Disposition": f'attachment; filename="{file_name}"',
        "Cache-Control": "no-store, no-cache, must-revalidate",
    }
