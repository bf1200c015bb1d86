"""Configuration export, import and validation as the vendor's handlers do them, and the server's
log archive.

Export: format ``1.0``, the LLM settings the setup wizard saved (never the key), the devices
(id, type, name) and the rules (``rule_text`` is the condition as the server's Rust ``Debug``
prints it). Import is as limited as the vendor's: LLM settings of an Ollama or OpenAI backend are
accepted (and not persisted: they only become the default of new chat sessions there), devices are
acknowledged without being created, and every rule fails with "Rule import not currently
supported". Validation checks the version, the LLM settings and the device list.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from twin.automation.server import automation_of

if TYPE_CHECKING:
    from twin.automation.onboarding import TwinOnboarding
    from twin.world import World

VERSION = "1.0"
IMPORT_BACKENDS = ("ollama", "openai")
COMPARISONS = {
    ">": "GreaterThan", "<": "LessThan", ">=": "GreaterEqual", "<=": "LessEqual", "==": "Equal",
    "!=": "NotEqual", "contains": "Contains", "starts_with": "StartsWith", "ends_with": "EndsWith",
    "regex": "Regex",
}  # fmt: skip
DEFAULT_SECTIONS = {"llm_settings": True, "devices": True, "rules": True, "alerts": False}


def _f64(value: Any) -> str:
    """Rust's ``{:?}`` of an ``f64``: ``30.0``, ``0.5``."""
    return repr(float(value))


def rust_debug(condition: Mapping[str, Any]) -> str:
    """A rule's ``Option<RuleCondition>`` as the server's ``{:?}`` prints it."""
    return "None" if condition.get("condition_type") == "none" else f"Some({_condition(condition)})"


def _condition(c: Mapping[str, Any]) -> str:
    kind = c["condition_type"]
    if kind == "logical":
        inner = ", ".join(_condition(x) for x in c["conditions"])
        return f"Logical {{ operator: {str(c['operator']).capitalize()}, conditions: [{inner}] }}"
    source_type = str(c["source_type"]).capitalize()
    ids = f'source_id: "{c["source_id"]}", field_path: "{c["metric"]}"'
    source = f"DataSourceId {{ source_type: {source_type}, {ids} }}"
    if kind == "range":
        return f"Range {{ source: {source}, min: {_f64(c['min'])}, max: {_f64(c['max'])} }}"
    text = c.get("threshold_value")
    threshold_value = "None" if text is None else f'Some("{text}")'
    return (
        f"Comparison {{ source: {source}, operator: {COMPARISONS[c['operator']]}, "
        f"threshold: {_f64(c.get('threshold', 0.0))}, threshold_value: {threshold_value} }}"
    )


class TwinConfig:
    def __init__(self, world: World, onboarding: TwinOnboarding) -> None:
        self.world = world
        self.onboarding = onboarding

    def export(self) -> Mapping[str, Any]:
        out: dict[str, Any] = {"version": VERSION, "exported_at": int(self.world.now())}
        llm = self.onboarding.llm_settings()
        if llm is not None:
            keys = ("backend", "endpoint", "model", "temperature", "top_p", "max_tokens")
            out["llm_settings"] = {k: llm[k] for k in keys if k != "endpoint" or llm.get(k)}
        devices = automation_of(self.world).devices.list(1, 1_000_000, None, None).devices
        if devices:
            rows = [{"device_id": d.device_id, "device_type": d.device_type, "name": d.name} for d in devices]
            out["devices"] = {"devices": rows}
        rules = automation_of(self.world).rules.list_rules()
        if rules:
            out["rules"] = {
                "rules": [
                    {"id": r.id, "name": r.name, "enabled": r.enabled, "rule_text": rust_debug(r.condition)}
                    for r in rules
                ]
            }
        return out

    def import_config(
        self, config: Mapping[str, Any], options: Mapping[str, Any] | None
    ) -> Mapping[str, Any]:
        sections = DEFAULT_SECTIONS if options is None else {**dict.fromkeys(DEFAULT_SECTIONS, False),
                                                            **(options.get("sections") or {})}  # fmt: skip
        imported: dict[str, Any] = {"version": config["version"], "exported_at": int(self.world.now())}
        skipped: list[str] = []
        errors: list[str] = []
        if sections["llm_settings"]:
            llm = config.get("llm_settings")
            if llm is None:
                skipped.append("LLM settings: not found in export")
            elif llm["backend"] in IMPORT_BACKENDS:
                imported["llm_settings"] = dict(llm)
            else:
                errors.append(f"LLM settings: Unsupported backend: {llm['backend']}")
        if sections["devices"]:
            devices = config.get("devices")
            if devices is None:
                skipped.append("Devices: not found in export")
            else:
                imported["devices"] = dict(devices)
        if sections["rules"]:
            rules = config.get("rules")
            if rules is None:
                skipped.append("Rules: not found in export")
            else:
                errors += [f"Rule {r['id']}: Rule import not currently supported" for r in rules["rules"]]
                imported["rules"] = dict(rules)
        return {"imported": imported, "skipped": skipped, "errors": errors}

    @staticmethod
    def validate(config: Mapping[str, Any]) -> Mapping[str, Any]:
        validation: dict[str, bool] = {}
        errors: list[str] = []
        if config["version"] != VERSION:
            errors.append(f"Unsupported version: {config['version']}")
        else:
            validation["version"] = True
        llm = config.get("llm_settings")
        if llm is not None:
            validation["llm_settings"] = bool(llm["backend"]) and bool(llm["model"])
            if not validation["llm_settings"]:
                errors.append("LLM settings: missing backend or model")
        devices = config.get("devices")
        if devices is not None:
            rows = devices["devices"]
            validation["devices"] = bool(rows) and all(d["device_id"] for d in rows)
            if not validation["devices"]:
                errors.append("Devices: missing or invalid device configurations")
        return {"valid": not errors, "validation": validation, "errors": errors}
