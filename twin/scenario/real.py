"""What a scenario file says of a real member, apart from the rest of the schema: its address, the
environment variables its secrets are in (never the secrets themselves), and a camera group's keys
for a real camera (:class:`RealCameraKeys`) and a real server's (:class:`RealServerKeys`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic.json_schema import SkipJsonSchema

from twin.settings import AUTOMATION, RealMember, RealMemberError, endpoint_problem

ENVIRON = "environ"
"""Validation context key: the environment the file's ``*_env`` keys are looked up in (by
:func:`twin.scenario.model.parse_scenario`); without it, whether a variable is set is not checked."""
ENV_NAME = r"^[A-Za-z_][A-Za-z0-9_]*$"


def variable(name: str | None, info: ValidationInfo) -> str | None:
    """A secret's environment variable, which must be set (checked when the context has the environment)."""
    environ = (info.context or {}).get(ENVIRON)
    if name is not None and environ is not None and not environ.get(name):
        raise ValueError(f"the environment variable {name} is not set")
    return name


def never_in_the_file(what: str, key: str) -> ValueError:
    return ValueError(
        f"a {what} is never written in the scenario file: "
        f"name the environment variable that holds it with '{key}'"
    )


def _endpoint(url: Any) -> Any:
    problem = endpoint_problem(url) if isinstance(url, str) else None
    if problem is not None:
        raise ValueError(problem)
    return url.rstrip("/") if isinstance(url, str) else url


RealUrl = Annotated[
    str,
    BeforeValidator(_endpoint),
    Field(
        description="a real member's address, http:// or https://, no path: the twin serves it through "
        "its faults, journal and verdicts (passthrough)",
        json_schema_extra={"format": "uri"},
    ),
]


class RealCameraKeys(BaseModel):
    """A camera group's keys for a real camera (the group is then that one camera)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    real: RealUrl | None = Field(
        default=None, description="a real camera's gateway in place of a simulated one"
    )
    username: str | None = Field(default=None, min_length=1, description="real: the twin's start-up login")
    password_env: str | None = Field(
        default=None,
        pattern=ENV_NAME,
        description="real: the environment variable holding that login's password",
    )
    insecure: bool = Field(default=False, description="real: accept its certificate unverified (self-signed)")
    password: SkipJsonSchema[Any] = Field(default=None, exclude=True)

    REAL_KEYS: ClassVar = ("real", "username", "password_env", "insecure", "password")
    SIMULATED_KEYS: ClassVar[tuple[str, ...]] = ()
    """The group's keys that a real camera does not take (the subclass's)."""

    @field_validator("password", mode="before")
    @classmethod
    def _no_password(cls, value: Any) -> Any:
        raise never_in_the_file("password", "password_env")

    @field_validator("password_env")
    @classmethod
    def _password_set(cls, name: str | None, info: ValidationInfo) -> str | None:
        return variable(name, info)

    @model_validator(mode="after")
    def _real_or_simulated(self) -> RealCameraKeys:
        given = self.model_fields_set
        if self.real is None:
            stray = [k for k in ("username", "password_env", "insecure") if k in given]
            if stray:
                raise ValueError(f"'{stray[0]}' applies to a real camera only (a group with 'real: URL')")
            return self
        if getattr(self, "count", 1) != 1:
            raise ValueError("a real camera group is one camera: drop 'count' or make it 1")
        simulated = [k for k in self.SIMULATED_KEYS if k in given]
        if simulated:
            raise ValueError(f"'{simulated[0]}' applies to simulated cameras only: a real camera has its own")
        if (self.username is None) != (self.password_env is None):
            raise ValueError(
                "'username' and 'password_env' go together: the twin's start-up login needs both"
            )
        return self


class RealServerKeys(BaseModel):
    """A real automation server's keys besides its address: the API key's variable, the certificate."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    real: RealUrl | None = None
    api_key_env: str | None = Field(
        default=None,
        pattern=ENV_NAME,
        description="the environment variable holding its API key, for the twin's start-up check",
    )
    insecure: bool = Field(default=False, description="accept its certificate unverified (self-signed)")
    api_key: SkipJsonSchema[Any] = Field(default=None, exclude=True)

    @field_validator("api_key", mode="before")
    @classmethod
    def _no_key(cls, value: Any) -> Any:
        raise never_in_the_file("key", "api_key_env")

    @field_validator("api_key_env")
    @classmethod
    def _key_set(cls, name: str | None, info: ValidationInfo) -> str | None:
        return variable(name, info)


def real_members(
    server: RealServerKeys | None, cameras: Mapping[str, RealCameraKeys], environ: Mapping[str, str]
) -> dict[str, RealMember]:
    """The real members by name (a real automation ``server``, real ``cameras`` by id), their secrets
    read from ``environ``."""

    def secret(variable: str) -> str:
        value = environ.get(variable)
        if not value:
            raise RealMemberError(f"the environment variable {variable} is not set")
        return value

    members = {}
    if server is not None and server.real:
        key = secret(server.api_key_env) if server.api_key_env else None
        members[AUTOMATION] = RealMember(AUTOMATION, server.real, server.insecure, key)
    for camera_id, group in cameras.items():
        login = (
            (group.username, secret(group.password_env)) if group.username and group.password_env else None
        )
        members[camera_id] = RealMember(camera_id, group.real or "", group.insecure, login=login)
    return members


def without_secrets(fleet: Any) -> Any:
    """The fleet with any password written in it left out (refused on its own), so that its names
    are still checked."""
    groups = fleet.get("cameras") if isinstance(fleet, dict) else None
    if isinstance(groups, dict):
        groups = [groups]
    if not isinstance(groups, list):
        return fleet
    kept = [{k: v for k, v in g.items() if k != "password"} if isinstance(g, dict) else g for g in groups]
    return {**fleet, "cameras": kept}
