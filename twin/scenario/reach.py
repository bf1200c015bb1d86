"""What each scenario action reaches, and so whether it may target a real member.

A transport or API fault acts at the twin's own layers in front of a server (the fault middleware,
the rate limiter), so it reaches a real member as it reaches a simulated one. Every other action
changes the simulated world, which a real member is not part of: a scenario is refused when such an
action targets a real member (:mod:`twin.scenario.targets`). Every action says what it reaches
(:class:`twin.scenario.actions.Reach`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from twin.scenario.actions import Action, Reach
from twin.scenario.catalog import ACTIONS
from twin.settings import AUTOMATION


class _Reaches(Mapping[str, Reach]):
    """Every action by name: what it reaches (each action says so itself)."""

    def __getitem__(self, name: str) -> Reach:
        return ACTIONS[name].reach

    def __iter__(self) -> Iterator[str]:
        return iter(ACTIONS)

    def __len__(self) -> int:
        return len(ACTIONS)


REACH: Mapping[str, Reach] = _Reaches()

SIMULATED_ONLY = {
    Reach.CAMERA: "it changes the simulated camera (its OS, storage, apps, services or clock), "
    "which a real camera is not",
    Reach.AUTOMATION: "it changes the simulated automation server's world (devices, sensors, "
    "marketplace or chat model), which a real server is not",
    Reach.CLOCK: "it changes the world clock's speed, and a real member runs on wall time at speed 1",
}
"""Why an action cannot target a real member, by what it reaches (a fault at the twin's layers can)."""

LAYER_ACTIONS = tuple(name for name, reach in REACH.items() if reach is Reach.LAYER)


def member(action: Action, params: dict[str, Any]) -> str | None:
    """The member ``action`` with ``params`` acts on (a camera id or ``automation``), if it acts on
    one; a parameter left out counts with its default."""
    reach = REACH[action.name]
    if reach is Reach.AUTOMATION:
        return AUTOMATION
    fields = action.params.model_fields
    key = next((k for k in ("camera", "server") if k in fields), None)
    if reach in (Reach.LAYER, Reach.CAMERA) and key is not None:
        value = params.get(key, fields[key].default)
        return value if isinstance(value, str) else None
    return None
