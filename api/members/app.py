"""Which app serves a member of the fleet (the automation server or a camera's gateway): a real
device's passthrough, a recorded session's replay, or the member's own simulated app. A real
member or a replay keeps the simulated app's route table, which names its routes in the journal."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from api.members.gates import Gate
from api.members.passthrough import Passthrough
from api.members.replay import Replay, WorldClock
from api.members.upstream import Upstream


class Endpoint(Protocol):
    """A real member's address (:class:`twin.settings.RealMember` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def url(self) -> str: ...

    @property
    def insecure(self) -> bool: ...


def member_app(
    name: str,
    simulated: Any,
    gate: Gate,
    *,
    real: Mapping[str, Endpoint],
    replays: Mapping[str, Path],
    clock: WorldClock,
    release: str,
) -> Any:
    """The app that serves ``name``: its passthrough if it is ``real``, its replay if one of
    ``replays`` names it, else ``simulated`` itself. ``gate`` decides in front of a real member."""
    member = real.get(name)
    if member is not None:
        return Passthrough(Upstream(member.name, member.url, member.insecure), gate, simulated.state.routes)
    if name in replays:
        return Replay.load(replays[name], simulated, clock, release)
    return simulated
