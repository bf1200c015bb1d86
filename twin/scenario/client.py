"""The client under test: a subprocess the runner starts with the servers' addresses and stops at the
end of the run, and its exit status, judged against what the scenario says it should be.

By default a client exits 0, or is still running when the run ends (the runner then stops it: that
is not an exit of its own). ``client: {expect_exit: nonzero}`` or ``{expect_exit: 3}`` is for a
scenario whose point is that the client gives up; ``any`` reports the status without judging it.
"""

from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
from pathlib import Path
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from twin.scenario.expect_base import RunRecord, Verdict

NAME = "client exit status"
"""The client verdict's name in reports."""


def describe_exit(status: int) -> str:
    """``exited with status 1``, ``killed by signal 11, SIGSEGV``."""
    if status >= 0:
        return f"exited with status {status}"
    try:
        name = f", {signal.Signals(-status).name}"
    except ValueError:
        name = ""
    return f"killed by signal {-status}{name}"


ExitStatus = Annotated[int, Field(ge=0, le=255)]


class ClientSpec(BaseModel):
    """What the scenario says about the client under test itself."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    expect_exit: int | Literal["nonzero", "any"] = Field(
        default=0,
        description="the exit status the client should end with: 0 (the default; a client still "
        "running at the stop time, which the runner then stops, is also fine), 'nonzero' (it must "
        "exit on its own with a status other than 0, a signal included), an exact status, or 'any' "
        "(reported, not judged). Any other ending fails the run",
    )

    @field_validator(
        "expect_exit", mode="plain", json_schema_input_type=ExitStatus | Literal["nonzero", "any"]
    )
    @classmethod
    def _status(cls, value: object) -> int | str:
        if value in ("nonzero", "any") or (type(value) is int and 0 <= value <= 255):
            return value
        raise ValueError(f"expected an exit status 0-255, 'nonzero' or 'any', not {value!r}")

    def judge(self, run: RunRecord) -> Verdict | None:
        """The client's verdict; ``None`` when the runner started no client."""
        status, want = run.client_exit, self.expect_exit
        if status is None:
            return None
        if run.client_stopped:
            how, ok = "still running at the stop time, stopped by the runner", want == 0
        else:
            how, ok = describe_exit(status), (status != 0 if want == "nonzero" else status == want)
        if want == "any":
            return Verdict(NAME, True, f"{how} (not judged: expect_exit any)")
        if ok:
            return Verdict(NAME, True, how)
        expected = "a non-zero status" if want == "nonzero" else str(want)
        return Verdict(NAME, False, f"{how} (expected {expected})")


class ClientNotStarted(OSError):
    """The client's command line could not be split or its program could not be started."""


async def start_client(command: str, env: dict[str, str], log_path: Path) -> asyncio.subprocess.Process:
    """The client as a subprocess, its output (stdout and stderr) to ``log_path``."""
    try:
        argv = shlex.split(command)
    except ValueError as err:
        raise ClientNotStarted(f"cannot split the client command {command!r}: {err}") from err
    if not argv:
        raise ClientNotStarted("the client command is empty")
    try:
        with open(log_path, "wb") as log:
            return await asyncio.create_subprocess_exec(
                *argv, env=env, stdout=log, stderr=asyncio.subprocess.STDOUT
            )
    except OSError as err:
        raise ClientNotStarted(f"cannot start the client {argv[0]!r}: {err.strerror or err}") from err


async def finish_client(proc: asyncio.subprocess.Process) -> int:
    """The client's exit status, once stopped if it is still running (terminated, killed after 5 s)."""
    if proc.returncode is None:
        with contextlib.suppress(ProcessLookupError):
            proc.terminate()
        try:
            await asyncio.wait_for(proc.wait(), 5)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await proc.wait()
    return proc.returncode if proc.returncode is not None else -1
