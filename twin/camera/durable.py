"""Where a camera's app platform writes what a device keeps on disk after a change made through its
API (:class:`twin.camera.platform_state.DurablePlatform`), as the parts that make changes see it."""

from __future__ import annotations

from typing import Protocol


class DurableFileSet(Protocol):
    """Files of the camera's tree kept across restarts (:class:`twin.camera.fs.DurableFiles`)."""

    def save(self, path: str) -> None: ...

    def drop(self, path: str) -> None: ...


class Durable(Protocol):
    def save(self) -> None:
        """Write the platform's document as it is now."""

    @property
    def files(self) -> DurableFileSet: ...


class _NoFiles:
    def save(self, path: str) -> None:
        return None

    def drop(self, path: str) -> None:
        return None


class NotDurable:
    """A part's platform until its camera wires the durable one: nothing is written."""

    files = _NoFiles()

    def save(self) -> None:
        return None
