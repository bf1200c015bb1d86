"""The chat port over the world: :class:`hardware.ports.chat.ChatSessions` on the world's
:class:`~twin.automation.chat_sessions.ChatRegistry`, with a turn's reader waiting on the world clock.

A reader waiting for the model counts as a request waiting on the world (a step-mode scenario run
moves time for it). A world rebuilt under a turn (reset, restore) ends it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from hardware.ports.chat import (
    ChatEvent,
    ChatMessage,
    PendingStream,
    SessionInfo,
    SessionOptions,
    SessionState,
    TurnRequest,
)
from hardware.ports.errors import DomainError

if TYPE_CHECKING:
    from twin.automation.chat_sessions import ChatRegistry
    from twin.automation.chat_turns import Turn
    from twin.clock import SimClock


class TurnReader:
    """Implements :class:`hardware.ports.chat.ChatTurn`."""

    def __init__(self, turn: Turn, clock: SimClock, current: Callable[[], ChatRegistry]) -> None:
        self.turn = turn
        self.session_id = turn.session_id
        self._clock = clock
        self._current = current

    async def next(self) -> ChatEvent | None:
        turn = self.turn
        while True:
            event = turn.pop()
            if event is not None:
                return event
            if turn.finished or turn.env is not self._current().world.env:
                return None
            try:
                await self._clock.wait(turn.signal())
            except DomainError:  # the world was rebuilt under the turn
                return None

    def cancel(self) -> bool:
        return self.turn.cancel()


class TwinChat:
    def __init__(self, registry: Callable[[], ChatRegistry], clock: SimClock) -> None:
        self._registry = registry
        """Looked up on each call: a reset world has a new registry."""
        self._clock = clock

    def create_session(self, options: SessionOptions | None = None) -> str:
        return self._registry().create_session(options)

    def exists(self, session_id: str) -> bool:
        return self._registry().exists(session_id)

    def list_sessions(self) -> list[SessionInfo]:
        return self._registry().list_sessions()

    def session_state(self, session_id: str) -> SessionState:
        return self._registry().session_state(session_id)

    def history(self, session_id: str) -> list[ChatMessage]:
        return self._registry().history(session_id)

    def rename(self, session_id: str, title: str | None) -> None:
        self._registry().rename(session_id, title)

    def set_memory(self, session_id: str, enabled: bool) -> None:
        self._registry().set_memory(session_id, enabled)

    def delete_session(self, session_id: str) -> None:
        self._registry().delete_session(session_id)

    def cleanup(self) -> int:
        return self._registry().cleanup()

    def pending(self, session_id: str) -> PendingStream | None:
        return self._registry().pending(session_id)

    def clear_pending(self, session_id: str) -> None:
        self._registry().clear_pending(session_id)

    def start_turn(self, session_id: str, request: TurnRequest) -> TurnReader:
        return TurnReader(self._registry().start_turn(session_id, request), self._clock, self._registry)

    def cancel(self, session_id: str) -> bool:
        return self._registry().cancel(session_id)
