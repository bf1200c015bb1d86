"""Every scenario action by name: the twin's own (:data:`twin.scenario.actions.CORE_ACTIONS`), then
each registered kind's (:attr:`twin.kinds.Kind.actions`), read off the registration as it is now."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from hardware.ports.errors import InvalidInput
from twin.kinds import Kinds
from twin.scenario.actions import CORE_ACTIONS, Action
from twin.scenario.suggest import did_you_mean
from twin.wings import KINDS


class Catalog(Mapping[str, Action]):
    """The actions of a registration by name, rebuilt when the registration changes."""

    def __init__(self, kinds: Kinds) -> None:
        self._kinds = kinds
        self._version = -1
        self._actions: dict[str, Action] = {}
        self._described: list[dict[str, Any]] | None = None

    def _current(self) -> dict[str, Action]:
        if self._version != self._kinds.version:
            actions = [*CORE_ACTIONS, *(a for kind in self._kinds for a in kind.actions)]
            self._actions = {a.name: a for a in actions}
            self._described = None
            self._version = self._kinds.version
        return self._actions

    def __getitem__(self, name: str) -> Action:
        return self._current()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._current())

    def __len__(self) -> int:
        return len(self._current())

    def check(self, name: str) -> Action:
        action = self.get(name)
        if action is not None:
            return action
        why = f"unknown action {name!r}" + (did_you_mean(name, self) or f"; known: {', '.join(sorted(self))}")
        raise InvalidInput(why, field="do")

    def describe(self) -> list[dict[str, Any]]:
        """Every action with its parameters' JSON Schema; built once per registration (the schemas
        are costly)."""
        actions = self._current()
        if self._described is None:
            self._described = [
                {"name": a.name, "doc": a.doc, "params": a.params.model_json_schema()}
                for a in actions.values()
            ]
        return self._described


ACTIONS = Catalog(KINDS)
"""The actions of the twin's registration."""
