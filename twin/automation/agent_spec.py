"""An agent's definition: validation like the vendor's and the stored document form.

Refusals: ``InvalidInput`` (400) for an unknown schedule type, an invalid cron expression, an
unknown model backend and a focused agent without resources when ``execution_mode`` is omitted;
:func:`validation` (422 ``VALIDATION_ERROR``) for out-of-range fields, a missing interval or cron
expression and an explicitly focused agent without resources.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from hardware.ports.agents import (
    MIN_INTERVAL_S,
    RESOURCE_TYPES,
    SCHEDULE_TYPES,
    AgentResource,
    AgentSpec,
    Schedule,
)
from hardware.ports.errors import InvalidInput
from twin.automation.crontab import CronExpression


def validation(message: str, field: str) -> InvalidInput:
    """A refusal the vendor answers with 422 ``VALIDATION_ERROR`` (plain ``InvalidInput`` is 400)."""
    return InvalidInput(message, resource="validation", field=field)


def check_spec(spec: AgentSpec, backend_exists: Callable[[str], bool]) -> str:
    """Validate like the vendor; returns the effective execution mode."""
    if not 1 <= len(spec.name) <= 100:
        raise validation("name must be 1 to 100 characters", "name")
    if not 1 <= len(spec.user_prompt) <= 10_000:
        raise validation("user_prompt must be 1 to 10000 characters", "user_prompt")
    if spec.system_prompt is not None and len(spec.system_prompt) > 4000:
        raise validation("system_prompt must be at most 4000 characters", "system_prompt")
    if spec.max_chain_depth is not None and not 1 <= spec.max_chain_depth <= 30:
        raise validation("max_chain_depth must be 1 to 30", "max_chain_depth")
    if spec.context_window_size is not None and not 1 <= spec.context_window_size <= 100:
        raise validation("context_window_size must be 1 to 100", "context_window_size")
    for r in spec.resources:
        if r.resource_type not in RESOURCE_TYPES:
            raise validation(f"unknown resource_type {r.resource_type!r}", "resources")
    check_schedule(spec.schedule)
    if spec.llm_backend_id and not backend_exists(spec.llm_backend_id):
        raise InvalidInput(f"LLM backend {spec.llm_backend_id} not found", field="llm_backend_id")
    mode = "free" if (spec.execution_mode or "").lower() in ("free", "react") else "focused"
    if mode == "focused" and not spec.resources:
        message = "Focused mode requires at least one bound resource; use execution_mode 'free'"
        if spec.execution_mode is None:
            raise InvalidInput(message, field="execution_mode")
        raise validation(message, "execution_mode")
    return mode


def check_schedule(schedule: Schedule) -> None:
    if schedule.schedule_type not in SCHEDULE_TYPES:
        raise InvalidInput(
            f"Invalid schedule_type '{schedule.schedule_type}'; expected one of {', '.join(SCHEDULE_TYPES)}",
            field="schedule",
        )
    if schedule.schedule_type == "interval" and (
        schedule.interval_seconds is None or schedule.interval_seconds < MIN_INTERVAL_S
    ):
        raise validation(f"interval_seconds must be at least {MIN_INTERVAL_S}", "schedule.interval_seconds")
    if schedule.schedule_type == "cron":
        if not schedule.cron_expression:
            raise validation("cron_expression is required for a cron schedule", "schedule.cron_expression")
        try:
            CronExpression.parse(schedule.cron_expression, schedule.timezone)
        except ValueError as err:
            raise InvalidInput(f"Invalid cron expression: {err}", field="schedule.cron_expression") from err


def spec_doc(spec: AgentSpec) -> dict[str, Any]:
    return dataclasses.asdict(spec)


def spec_of(doc: dict[str, Any]) -> AgentSpec:
    fields = {f.name for f in dataclasses.fields(AgentSpec)}
    values = {k: doc[k] for k in fields if k in doc}
    values["schedule"] = Schedule(**doc["schedule"])
    values["resources"] = tuple(AgentResource(**r) for r in doc.get("resources", ()))
    return AgentSpec(**values)
