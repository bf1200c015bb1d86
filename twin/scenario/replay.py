"""A scenario's replayed members: the ``replay:`` key of a camera group and of the automation server
(a fixture ``twin record`` wrote, of that vendor, checked when the file is), and which member each
fixture serves (see :mod:`api.members.replay` for how it is served)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Annotated, Protocol, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator

from hardware.ports.fixture import AutomationFixture, GatewayFixture
from twin.scenario.files import placed
from twin.scenario.real import RealServerKeys
from twin.settings import AUTOMATION

GatewayFile = Annotated[GatewayFixture, BeforeValidator(placed)]
"""A gateway fixture inside the directories a scenario may read (:mod:`twin.scenario.files`)."""
AutomationFile = Annotated[AutomationFixture, BeforeValidator(placed)]


class ReplayCameraKeys(BaseModel):
    """A camera group's ``replay`` key (a mixin of the group's model)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    replay: GatewayFile | None = Field(
        default=None,
        description="serve these cameras' gateways from a fixture `twin record` wrote (in the scenario's "
        "directory or one allowed with --scenario-files) on the world clock; logins are the twin's",
    )


class ReplayServerKeys(RealServerKeys):
    """The automation server: real (``real: URL``) or replayed (``replay: FILE``)."""

    replay: AutomationFile | None = Field(
        default=None, description="a fixture `twin record` wrote, replayed on the world clock (no 'real')"
    )

    @model_validator(mode="after")
    def _real_or_replayed(self) -> ReplayServerKeys:
        if (self.real is None) == (self.replay is None):
            raise ValueError("give exactly one of 'real' (a URL) and 'replay' (a fixture)")
        if self.replay is not None and {"api_key_env", "insecure"} & self.model_fields_set:
            raise ValueError("'api_key_env' and 'insecure' apply to a real server only")
        return self


class _Group(Protocol):
    count: int
    replay: str | None


_G = TypeVar("_G", bound=_Group)


def numbered(groups: Sequence[_G], camera_ids: Sequence[str]) -> list[tuple[_G, list[str]]]:
    """Each camera group with its cameras' ids (``camera_ids`` numbers the ``groups`` in order)."""
    ids = iter(camera_ids)
    return [(g, [next(ids) for _ in range(g.count)]) for g in groups]


def replays(
    server: ReplayServerKeys | None, groups: Iterable[tuple[_Group, Sequence[str]]]
) -> dict[str, Path]:
    """The members served from a fixture (``automation``, camera ids: ``groups`` are the camera
    groups with their cameras' ids) and their files."""
    out = {AUTOMATION: Path(server.replay)} if server is not None and server.replay else {}
    for group, camera_ids in groups:
        if group.replay:
            out.update(dict.fromkeys(camera_ids, Path(group.replay)))
    return out
