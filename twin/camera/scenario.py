"""A camera group's entry in a scenario's fleet (``fleet.cameras``): its boot profile, scene, apps,
video source, serial port and host figures, or the real camera or recording in its place."""

from __future__ import annotations

from typing import Annotated, ClassVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from hardware.adapters.serial_port import check_url
from twin.camera.video.config import PROFILES
from twin.camera.video.scene import MAX_OBJECTS, SCENES
from twin.camera.video.source import media_of
from twin.fleet import VideoSpec
from twin.scenario.files import placed
from twin.scenario.real import RealCameraKeys
from twin.scenario.replay import ReplayCameraKeys

MAX_CAMERAS = 254
"""Cameras in a world at the most (their addresses end in 1..254)."""


SerialUrl = Annotated[str, BeforeValidator(lambda v: check_url(v) or v if isinstance(v, str) else v)]
"""A pyserial URL (a device path, ``loop://``...); the options in it are read when it opens."""


class Video(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    source: str = Field(
        min_length=1,
        description="real video in place of the synthetic scene: a file path (in the scenario's "
        "directory or one allowed with --scenario-files), an rtsp://, http:// or https:// URL, or a "
        "V4L2 device /dev/videoN",
    )
    loop: bool = Field(default=True, description="a file starts over at its end (else its last frame stays)")

    @field_validator("source")
    @classmethod
    def _known_kind(cls, value: str, info: ValidationInfo) -> str:
        media = media_of(value)
        # A file stays in the directories a scenario may read; a URL or a /dev/videoN is no file.
        return value if media.live else placed(value, info)

    def spec(self) -> VideoSpec:
        return VideoSpec(self.source, self.loop)


class Cameras(RealCameraKeys, ReplayCameraKeys):
    count: int = Field(default=1, ge=0, le=MAX_CAMERAS)
    profile: str = Field(
        default="default",
        description="the media profile every camera boots with (GET /media/profile)",
        json_schema_extra={"enum": list(PROFILES)},
    )
    scene: str = Field(
        default="street",
        description="the synthetic scene every camera sees: street (people and vehicles), empty "
        "(background only), parking (parked vehicles, rarely moving), crowd (many people)",
        json_schema_extra={"enum": list(SCENES)},
    )
    objects: int | None = Field(
        default=None,
        ge=0,
        le=MAX_OBJECTS,
        description="objects in each camera's scene (default: the scene's own count)",
    )
    ai_overlay: bool = Field(
        default=False,
        description="boot with the AI overlay on: the model's detections drawn on the video",
    )
    apps: tuple[str, ...] = Field(
        default=(),
        description="app packages under assets/apps/ installed and started on each camera at boot",
    )
    rs485: SerialUrl | None = Field(
        default=None,
        description="each camera's RS485 on a real serial port: a pyserial URL (/dev/ttyUSB0, loop://, "
        "rfc2217://host:port; default: the simulated port)",
    )
    host_stats: bool = Field(
        default=False,
        description="each camera's CPU, memory, disk and network figures (monitor/*) are this host's, "
        "read from /proc",
    )
    video: Video | None = Field(
        default=None,
        description="each camera's video source (default: the synthetic scene); OSD, privacy masks "
        "and the AI overlay are drawn on it as on the scene",
    )

    SIMULATED_KEYS: ClassVar = ("profile", "scene", "objects", "ai_overlay", "apps", "video", "replay")

    @field_validator("profile", "scene")
    @classmethod
    def _known(cls, value: str, info: ValidationInfo) -> str:
        known = PROFILES if info.field_name == "profile" else SCENES
        if value not in known:
            raise ValueError(f"unknown {info.field_name} {value!r}; known: {', '.join(known)}")
        return value

    @model_validator(mode="after")
    def _objects_fit_the_scene(self) -> Cameras:
        if self.scene == "empty" and self.objects:
            raise ValueError("scene 'empty' has no objects: drop 'objects' or choose another scene")
        return self


def one_group_or_many(schema: dict) -> None:
    """Editors: ``cameras`` is one group (a mapping) or a list of groups."""
    many = {key: schema.pop(key) for key in ("type", "items", "minItems") if key in schema}
    schema["anyOf"] = [many["items"], many]
