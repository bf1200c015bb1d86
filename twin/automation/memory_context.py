"""What the server writes into its memory files by itself, on the world clock.

Thirty seconds after start, then every ``system_context_interval_secs`` (at least 60, read once at
start), the resource inventory goes between ``<!-- system-context -->`` markers in ``KNOWLEDGE.md``:
devices (name and id), agents that are not stopped, enabled extensions and dashboards (the default
one marked), at most 800 characters, devices dropped from the end first. On its own timer (every
``summary_interval_secs``, at least 600, the configuration read again at each tick) and only while
the summary's model backend exists, two digests: the agents' last five runs each into
``<!-- agent-summary -->`` in ``KNOWLEDGE.md`` (at most 300 characters) and the user's recent chat
requests into ``<!-- chat-summary -->`` in ``USER.md`` (at most 200). The server asks its model for
these two; the twin writes a digest of the same records, so the text follows from the world alone.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twin.automation.agents import AgentRegistry
    from twin.automation.chat_sessions import ChatRegistry
    from twin.automation.dashboards import DashboardRegistry
    from twin.automation.extensions import ExtensionRegistry
    from twin.automation.llm import ModelBackendRegistry
    from twin.automation.memory import SystemMemory
    from twin.automation.registry import DeviceRegistry
    from twin.engine import Engine

START_DELAY_S = 30
CONTEXT_LIMIT = 800
AGENT_SUMMARY_LIMIT = 300
CHAT_SUMMARY_LIMIT = 200
DEVICES_HEADER = "### Devices\n"
RUNS_PER_AGENT = 5
RECENT_SESSIONS = 5
MESSAGES_PER_SESSION = 20
COMMON = (
    "about after again also been could does from have into just like make more much need please right "
    "show some than that them then there these they this what when where which will with would your"
)
"""Words too common to say what a user asks about."""
WORD = re.compile(r"[a-z0-9]{4,}")


def fit_context(sections: list[str]) -> str:
    """The sections joined; past the limit, device lines go from the end, then the text is cut."""
    text = "\n\n".join(sections)
    if len(text) <= CONTEXT_LIMIT:
        return text
    start = text.find(DEVICES_HEADER)
    if start >= 0:
        head_end = start + len(DEVICES_HEADER)
        rest = text.find("\n### ", head_end)
        rest = len(text) if rest < 0 else rest
        head, tail = text[:head_end], text[rest:]
        room, kept = CONTEXT_LIMIT - len(head) - len(tail), []
        for line in filter(None, text[head_end:rest].split("\n")):
            if len(line) + 1 > room:
                break
            kept.append(line + "\n")
            room -= len(line) + 1
        text = head + "".join(kept) + tail
    return text[:CONTEXT_LIMIT]


def _clip(lines: list[str], limit: int) -> str:
    return "\n".join(lines)[:limit]


class MemoryContext:
    def __init__(
        self,
        world: Engine,
        *,
        memory: SystemMemory,
        devices: DeviceRegistry,
        agents: AgentRegistry,
        extensions: ExtensionRegistry,
        dashboards: DashboardRegistry,
        llm: ModelBackendRegistry,
        chat: ChatRegistry,
    ) -> None:
        self.world = world
        self.memory = memory
        self.devices = devices
        self.agents = agents
        self.extensions = extensions
        self.dashboards = dashboards
        self.llm = llm
        self.chat = chat
        config = memory.config()
        self.context_every = max(config.system_context_interval_secs, 60)
        self.summary_every = max(config.summary_interval_secs, 600)
        world.env.process(self._run())

    def _run(self) -> Generator[Any, Any, None]:
        env = self.world.env
        yield env.timeout(START_DELAY_S)
        next_context = next_summary = env.now
        while True:
            if env.now >= next_context:
                self.update_context()
                next_context += self.context_every
            if env.now >= next_summary:
                self.update_summaries()
                next_summary += self.summary_every
            yield env.timeout(min(next_context, next_summary) - env.now)

    # The inventory -----------------------------------------------------------------------------
    def system_context(self) -> str:
        sections = []
        devices = self.devices.list(1, 1000, None, None).devices  # more than 800 characters hold
        if devices:
            sections.append("\n".join(["### Devices", *(f"- {d.name} ({d.device_id})" for d in devices)]))
        agents = [a.name for a in self.agents.list_agents() if a.status != "stopped"]
        extensions = [e.name for e in self.extensions.list_extensions() if e.enabled]
        boards = [d.name + (" [default]" if d.is_default else "") for d in self.dashboards.list_dashboards()]
        for title, names in (("Agents", agents), ("Extensions", extensions), ("Dashboards", boards)):
            if names:
                sections.append("\n".join([f"### {title}", *(f"- {n}" for n in names)]))
        return fit_context(sections)

    def update_context(self) -> None:
        self.memory.replace_section("knowledge", "system-context", self.system_context())

    # The digests -------------------------------------------------------------------------------
    def update_summaries(self) -> None:
        backend = self.memory.config().summary_backend_id
        if backend is not None and not self.llm.exists(backend):
            return  # the server finds no model to ask and skips the round
        if chat := self.chat_summary():
            self.memory.replace_section("user", "chat-summary", chat)
        if agents := self.agent_summary():
            self.memory.replace_section("knowledge", "agent-summary", agents)

    def agent_summary(self) -> str:
        lines = []
        for agent in self.agents.list_agents():
            if agent.status == "stopped":
                continue
            runs = self.agents.executions(agent.id, RUNS_PER_AGENT)
            if not runs:
                continue
            good = sum(r.status == "completed" for r in runs)
            last = runs[0]
            what = last.error or last.result.get("summary") or last.decision_process.get("conclusion") or ""
            lines.append(
                f"- {agent.name}: {good}/{len(runs)} recent runs OK; last {last.status}: {str(what)[:80]}"
            )
        return _clip(lines, AGENT_SUMMARY_LIMIT)

    def chat_summary(self) -> str:
        asked = [  # oldest first, so the last is the newest request
            m.content[:100]
            for session in reversed(self.chat.list_sessions()[:RECENT_SESSIONS])
            for m in self.chat.history(session.session_id)[-MESSAGES_PER_SESSION:]
            if m.role == "user" and m.content.strip()
        ]
        if not asked:
            return ""
        common = COMMON.split()
        words = Counter(
            w for text in asked for w in WORD.findall(text.lower()) if w not in common and not w.isdigit()
        )
        lines = []
        if words:
            top = ", ".join(w for w, _ in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:3])
            lines.append(f"- Asks most about: {top}")
        lines.append(f"- Last request: {asked[-1][:80]}")
        return _clip(lines, CHAT_SUMMARY_LIMIT)
