"""AI agents: durable definitions, schedules on the world clock, executions through a model backend.

An active agent has one SimPy process on ``world.env``: ``interval`` wakes every
``interval_seconds`` after activation, ``cron`` at the next instant its expression matches (in the
schedule's timezone), ``event`` once per world second in which a matching bus event arrived. Every
run is an *execution*: the model is given the prompt, the agent's bound resources and the device
tools; tool calls read device state and send device commands through the devices area; the record
(decision process, actions, duration) is kept in the store (newest 500 per agent).

With the built-in simulated model an execution completes inside the SimPy step that starts it, so a
schedule in step mode runs exactly when the clock passes its instants. With an HTTP model the
execution is recorded ``running`` and finished by an asyncio task when the model has answered.
The rules engine triggers an agent with :meth:`AgentRegistry.trigger`.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import uuid
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any

import simpy

from hardware.ports.agents import (
    AGENT_STATUSES,
    MIN_INTERVAL_S,
    Agent,
    AgentMessage,
    AgentSpec,
    AgentStats,
    CronCheck,
    Execution,
    Schedule,
)
from hardware.ports.errors import DomainError, InvalidInput, NotFound, Timeout
from hardware.ports.events import EventKind
from twin.automation.agent_context import AgentContext
from twin.automation.agent_runs import conduct
from twin.automation.agent_spec import check_spec, spec_doc, spec_of
from twin.automation.chat_models import run_now
from twin.automation.crontab import CronExpression, describe
from twin.rng import hash_uniform

if TYPE_CHECKING:
    from twin.automation.llm import ModelBackendRegistry
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine

KEEP_EXECUTIONS = 500
EVENT_POLL_S = 1.0


def not_found(agent_id: str) -> NotFound:
    return NotFound(f"Agent not found: {agent_id}", resource="agent")


class AgentRegistry:
    """Implements :class:`hardware.ports.agents.AutomationAgents` over the world."""

    def __init__(self, world: Engine, *, llm: ModelBackendRegistry, devices: DeviceRegistry) -> None:
        self.world = world
        self.env = world.env
        """The environment this registry was built in (the world gets a new one when rebuilt)."""
        self.llm = llm
        self.devices = devices
        self.docs = world.store.collection("agents")
        self.runs = world.store.collection("agent_executions")
        self.context = AgentContext(world, devices=devices)
        self.procs: dict[str, simpy.Process] = {}
        self.pending: set[asyncio.Task[None]] = set()
        for doc in self.docs.values():
            if doc["status"] == "active":
                self._start(doc)

    # Definitions -------------------------------------------------------------------------------
    def list_agents(self) -> list[Agent]:
        return [self._value(doc) for doc in self.docs.values()]

    def create_agent(self, spec: AgentSpec) -> Agent:
        mode = check_spec(spec, self.llm.exists)
        now = self.world.now()
        doc = {
            **spec_doc(spec),
            "id": self._uuid(),
            "execution_mode": mode,
            "status": "active",
            "created_at": now,
            "updated_at": now,
            "stats": dataclasses.asdict(AgentStats()),
            "last_execution_at": None,
            "error_message": None,
            "anchor": now,
        }
        self.docs.put(doc["id"], doc)
        self._start(doc)
        return self._value(doc)

    def get_agent(self, agent_id: str) -> Agent:
        return self._value(self._doc(agent_id))

    def update_agent(self, agent_id: str, changes: Mapping[str, Any]) -> Agent:
        doc = self._doc(agent_id)
        current = spec_of(doc)
        fields = {f.name for f in dataclasses.fields(AgentSpec)}
        spec = dataclasses.replace(current, **{k: v for k, v in changes.items() if k in fields})
        if "execution_mode" not in changes:
            spec = dataclasses.replace(spec, execution_mode=doc["execution_mode"])
        mode = check_spec(spec, self.llm.exists)
        if spec.schedule != current.schedule:
            doc["anchor"] = self.world.now()
        doc.update(spec_doc(spec), execution_mode=mode, updated_at=self.world.now())
        self.docs.put(agent_id, doc)
        self._restart(doc)
        return self._value(doc)

    def delete_agent(self, agent_id: str) -> None:
        self._doc(agent_id)
        self._stop(agent_id)
        self.docs.delete(agent_id)
        for run_id, run in self.runs.items():
            if run["agent_id"] == agent_id:
                self.runs.delete(run_id)
        self.context.delete_messages(agent_id, None)

    def set_status(self, agent_id: str, status: str) -> Agent:
        if status not in AGENT_STATUSES:
            raise InvalidInput(
                f"Invalid status '{status}'; expected one of {', '.join(AGENT_STATUSES)}", field="status"
            )
        doc = self._doc(agent_id)
        if status == "active" and doc["status"] != "active":
            doc["anchor"] = self.world.now()
        doc.update(status=status, updated_at=self.world.now())
        self.docs.put(agent_id, doc)
        self._restart(doc)
        return self._value(doc)

    def validate_cron(self, expression: str) -> CronCheck:
        try:
            cron = CronExpression.parse(expression)
        except ValueError as err:
            return CronCheck(False, error=str(err))
        times, t = [], self.world.now()
        for _ in range(5):
            t = cron.next_after(t)
            times.append(t)
        return CronCheck(True, next_executions=tuple(times), description=describe(cron))

    # Executions ---------------------------------------------------------------------------------
    def execute(self, agent_id: str, trigger_type: str = "manual", data: Any = None) -> Execution:
        doc = self._doc(agent_id)
        llm = self.llm
        if llm.is_simulated(doc.get("llm_backend_id")):
            return self._run_simulated(doc, trigger_type, data)
        run = self._begin(doc, trigger_type)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return self._finish(doc, run, None, "no event loop to reach the model backend")
        task = loop.create_task(self._run_remote(doc, run, data))
        self.pending.add(task)
        task.add_done_callback(self.pending.discard)
        return self._execution(run)

    def trigger(self, agent_id: str, data: Any = None, trigger_type: str = "rule") -> Execution | None:
        """Run an agent for the rules engine (``trigger_agent``); ``None`` when it is not active."""
        doc = self.docs.get(agent_id)
        if doc is None or doc["status"] != "active":
            return None
        return self.execute(agent_id, trigger_type, data)

    async def invoke(self, agent_id: str, data: Any = None, timeout_s: float = 60.0) -> Execution:
        doc = self._doc(agent_id)
        if self.llm.is_simulated(doc.get("llm_backend_id")):
            return self._run_simulated(doc, "manual", data)
        run = self._begin(doc, "manual")
        try:
            outcome = await asyncio.wait_for(conduct(self, doc, data), timeout_s)
        except TimeoutError as err:
            self._finish(doc, run, None, f"timed out after {timeout_s:g} s")
            raise Timeout("Agent execution timed out", resource="agent_execution") from err
        except DomainError as err:
            return self._finish(doc, run, None, err.message)
        return self._finish(doc, run, outcome, None)

    def executions(self, agent_id: str, limit: int = 50) -> list[Execution]:
        self._doc(agent_id)
        runs = [r for r in self.runs.values() if r["agent_id"] == agent_id]
        return [self._execution(r) for r in reversed(runs[-limit:])]

    def get_execution(self, agent_id: str, execution_id: str) -> Execution:
        self._doc(agent_id)
        run = self.runs.get(execution_id)
        if run is None or run["agent_id"] != agent_id:
            raise NotFound(f"Execution {execution_id}", resource="execution")
        return self._execution(run)

    # Context: messages, memory, resources -------------------------------------------------------
    def validate_llm(self, backend_id: str | None) -> Mapping[str, Any]:
        llm = self.llm
        chosen = backend_id or llm.active_id()
        if not llm.exists(chosen):
            return {"valid": False, "backend_id": chosen, "message": f"LLM backend {chosen} not found"}
        backend = llm.get_backend(chosen)
        message = "ready" if backend.healthy else "the backend did not answer its last probe"
        return {"valid": backend.healthy, "backend_id": chosen, "message": message}

    def available_resources(self, agent_id: str) -> list[Mapping[str, Any]]:
        self._doc(agent_id)
        return self.context.available_resources()

    def memory(self, agent_id: str) -> Mapping[str, Any]:
        doc = self._doc(agent_id)
        return self.context.memory(doc, [r for r in self.runs.values() if r["agent_id"] == agent_id])

    def clear_memory(self, agent_id: str) -> None:
        doc = self._doc(agent_id)
        doc["memory_cleared_at"] = self.world.now()
        self.docs.put(agent_id, doc)

    def messages(self, agent_id: str) -> list[AgentMessage]:
        self._doc(agent_id)
        return self.context.messages(agent_id)

    def add_message(self, agent_id: str, content: str, message_type: str = "instruction") -> AgentMessage:
        self._doc(agent_id)
        return self.context.add_message(agent_id, content, message_type)

    def delete_messages(self, agent_id: str, message_id: str | None = None) -> int:
        self._doc(agent_id)
        return self.context.delete_messages(agent_id, message_id)

    # Schedules (SimPy processes) ----------------------------------------------------------------
    def _start(self, doc: dict[str, Any]) -> None:
        if doc["status"] == "active":
            self.procs[doc["id"]] = self.world.env.process(
                self._schedule(doc["id"], Schedule(**doc["schedule"]), doc.get("anchor", self.world.now()))
            )

    def _stop(self, agent_id: str) -> None:
        proc = self.procs.pop(agent_id, None)
        if proc is not None and proc.is_alive:
            proc.interrupt("rescheduled")

    def _restart(self, doc: dict[str, Any]) -> None:
        self._stop(doc["id"])
        self._start(doc)

    def _schedule(self, agent_id: str, schedule: Schedule, anchor: float) -> Generator[Any, Any, None]:
        """``anchor``: Unix time the schedule was set or activated; interval instants count from
        it, so a restored or restarted world keeps the phase."""
        env = self.world.env
        try:
            if schedule.schedule_type == "interval":
                interval = float(schedule.interval_seconds or MIN_INTERVAL_S)
                k = int((self.world.now() - anchor) // interval)
                while True:
                    k += 1  # absolute instants: no drift from summing intervals
                    yield env.timeout(max(0.0, anchor + k * interval - self.world.now()))
                    self._scheduled_run(agent_id, "schedule")
            elif schedule.schedule_type == "cron":
                cron = CronExpression.parse(schedule.cron_expression or "", schedule.timezone)
                while True:
                    at = cron.next_after(self.world.now())
                    yield env.timeout(max(0.0, at - self.world.now()))
                    self._scheduled_run(agent_id, "schedule")
            else:
                sub = self.world.bus.subscribe(None, maxlen=64)
                try:
                    while True:
                        yield env.timeout(EVENT_POLL_S)
                        seen = False
                        while (event := sub.get_nowait()) is not None:
                            seen = seen or _matches(
                                schedule.event_filter, event.kind.value, event.source, event.data
                            )
                        if seen:
                            self._scheduled_run(agent_id, "event")
                finally:
                    sub.close()
        except simpy.Interrupt:
            return

    def _scheduled_run(self, agent_id: str, trigger_type: str) -> None:
        doc = self.docs.get(agent_id)
        if doc is not None and doc["status"] == "active":
            self.execute(agent_id, trigger_type)

    # Running an execution ---------------------------------------------------------------------
    def _run_simulated(self, doc: dict[str, Any], trigger_type: str, data: Any) -> Execution:
        run = self._begin(doc, trigger_type)
        try:
            outcome = run_now(conduct(self, doc, data))
        except DomainError as err:
            return self._finish(doc, run, None, err.message)
        return self._finish(doc, run, outcome, None)

    async def _run_remote(self, doc: dict[str, Any], run: dict[str, Any], data: Any) -> None:
        try:
            outcome, error = await conduct(self, doc, data), None
        except DomainError as err:
            outcome, error = None, err.message
        if self.world.env is self.env:  # the world was not reset or restored meanwhile
            self._finish(doc, run, outcome, error)

    def _begin(self, doc: dict[str, Any], trigger_type: str) -> dict[str, Any]:
        run = {
            "id": self._uuid(),
            "agent_id": doc["id"],
            "agent_name": doc["name"],
            "timestamp": self.world.now(),
            "trigger_type": trigger_type,
            "status": "running",
            "duration_ms": 0,
            "error": None,
            "decision_process": {},
            "result": {},
        }
        self.runs.put(run["id"], run)
        self.world.emit(
            EventKind.AGENT_EXECUTION_STARTED,
            doc["id"],
            agent_id=doc["id"],
            agent_name=doc["name"],
            execution_id=run["id"],
            trigger_type=trigger_type,
        )
        return run

    def _finish(
        self, doc: dict[str, Any], run: dict[str, Any], outcome: dict[str, Any] | None, error: str | None
    ) -> Execution:
        if outcome is None:
            status, duration = "failed", self._duration(doc, run, 0)
        else:
            status = "partial" if outcome["partial"] else "completed"
            duration = self._duration(doc, run, outcome["tool_calls"])
            run.update(decision_process=outcome["decision_process"], result=outcome["result"])
        run.update(status=status, duration_ms=duration, error=error)
        self.runs.put(run["id"], run)
        self._prune(doc["id"])
        doc = self.docs.get(doc["id"]) or doc
        stats = doc["stats"]
        n = stats["total_executions"]
        stats["avg_duration_ms"] = round((stats["avg_duration_ms"] * n + duration) / (n + 1), 1)
        stats["total_executions"] = n + 1
        stats["successful_executions" if status != "failed" else "failed_executions"] += 1
        doc.update(last_execution_at=run["timestamp"], error_message=error)
        if self.docs.get(doc["id"]) is not None:
            self.docs.put(doc["id"], doc)
        self.world.emit(
            EventKind.AGENT_EXECUTION_COMPLETED,
            doc["id"],
            agent_id=doc["id"],
            execution_id=run["id"],
            status=status,
            duration_ms=duration,
            success=status != "failed",
        )
        if status != "failed":
            self.context.memory_updated(doc["id"], run["id"])
        return self._execution(run)

    def _duration(self, doc: dict[str, Any], run: dict[str, Any], tool_calls: int) -> int:
        """The simulated model's think time is deterministic from the seed and the execution id; an
        HTTP model's is the world time its answer took."""
        if not self.llm.is_simulated(doc.get("llm_backend_id")):
            return round((self.world.now() - run["timestamp"]) * 1000)
        key = self.world.streams.key("agent-think:" + run["id"])
        return int(180 + 900 * float(hash_uniform(key, 0)) + 45 * tool_calls)

    def _prune(self, agent_id: str) -> None:
        ids = [rid for rid, r in self.runs.items() if r["agent_id"] == agent_id]
        for rid in ids[:-KEEP_EXECUTIONS]:
            self.runs.delete(rid)

    # Internals --------------------------------------------------------------------------------
    def _uuid(self) -> str:
        return str(uuid.UUID(bytes=self.world.streams.get("automation.agents").bytes(16), version=4))

    def _doc(self, agent_id: str) -> dict[str, Any]:
        doc = self.docs.get(agent_id)
        if doc is None:
            raise not_found(agent_id)
        return doc

    def _value(self, doc: dict[str, Any]) -> Agent:
        spec = spec_of(doc)
        return Agent(
            id=doc["id"],
            name=spec.name,
            user_prompt=spec.user_prompt,
            status=doc["status"],
            schedule=spec.schedule,
            execution_mode=doc["execution_mode"],
            resources=spec.resources,
            created_at=doc["created_at"],
            updated_at=doc["updated_at"],
            stats=AgentStats(**doc["stats"]),
            description=spec.description,
            llm_backend_id=spec.llm_backend_id,
            system_prompt=spec.system_prompt,
            enable_tool_chaining=spec.enable_tool_chaining,
            max_chain_depth=spec.max_chain_depth,
            priority=spec.priority,
            context_window_size=spec.context_window_size,
            last_execution_at=doc.get("last_execution_at"),
            error_message=doc.get("error_message"),
        )

    @staticmethod
    def _execution(run: dict[str, Any]) -> Execution:
        return Execution(**run)


def _matches(event_filter: str | None, kind: str, source: str, data: Mapping[str, Any]) -> bool:
    """``None`` or ``*`` matches device metrics; otherwise every ``a:b`` or word must be found."""
    if not event_filter or event_filter == "*":
        return kind in (EventKind.DEVICE_METRIC.value, EventKind.DEVICE_TELEMETRY.value)
    text = json.dumps({"kind": kind, "source": source, **data}, default=str)
    return all(part in text or part == kind for part in event_filter.split())
