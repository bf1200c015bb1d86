"""Expectations on long device jobs: the client follows a firmware (OTA) install or an OS upgrade,
through the camera's reboot, to a terminal state."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from twin.scenario.expect_base import Expect, RunRecord, Verdict, fmt_entry


class PollsOtaToTerminal(Expect):
    """After starting a firmware install, the client polls ``ota/status`` until a terminal state
    (``failed``, or ``reboot_confirmed`` after the reboot a successful install ends with): its last
    poll after the last install it started saw one."""

    expect: Literal["polls_ota_to_terminal"]
    server: str | None = "cam-01"
    terminal: tuple[str, ...] = ("failed", "reboot_confirmed")

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        starts = [
            i
            for i, e in enumerate(entries)
            if e.method == "POST" and "/ota/install" in e.path and 200 <= e.status < 300
        ]
        if not starts:
            return self.not_exercised("no OTA install was started")
        polls = [e for e in entries[starts[-1] + 1 :] if e.route.endswith("/ota/status") and e.status == 200]
        if not polls:
            return self.verdict(False, "never polled ota/status after starting the install")
        last = polls[-1]
        if last.state not in self.terminal:
            return self.verdict(
                False,
                f"stopped polling while the install was {last.state!r} ({fmt_entry(last)}); "
                f"terminal: {', '.join(self.terminal)}",
            )
        return self.verdict(True, f"polled to {last.state!r} in {len(polls)} polls")


class PollsOsUpgradeToTerminal(Expect):
    """After starting an OS-upgrade install, the client follows the job through its reboot to a
    terminal state (``success``, ``rollback``, ``failed`` or ``cancelled``): its last
    ``os-upgrade/status`` poll after the last install it started saw one. When the camera
    rebooted meanwhile, the client came back: it got a successful answer from the camera after
    it powered up again (within ``reconnect_within`` seconds, when given)."""

    expect: Literal["polls_os_upgrade_to_terminal"]
    server: str | None = "cam-01"
    terminal: tuple[str, ...] = ("success", "rollback", "failed", "cancelled")
    reconnect_within: float | None = Field(default=None, gt=0, description="seconds after the camera is back")

    def judge(self, run: RunRecord) -> Verdict:
        entries = self.entries(run)
        starts = [
            i
            for i, e in enumerate(entries)
            if e.method == "POST" and e.route.endswith("/os-upgrade/install") and 200 <= e.status < 300
        ]
        if not starts:
            return self.not_exercised("no OS-upgrade install was started")
        start = entries[starts[-1]]
        after = entries[starts[-1] + 1 :]
        ups = [
            ev.at
            for ev in run.events
            if ev.kind.value == "camera.power_up"
            and ev.at >= start.at
            and (self.server is None or ev.source == self.server)
        ]
        for up in ups:
            deadline = run.end if self.reconnect_within is None else up + self.reconnect_within
            if deadline > run.end:
                continue  # came back too late in the run to judge
            back = next((e for e in after if e.at >= up and 200 <= e.status < 300), None)
            if back is None:
                return self.verdict(False, f"no successful request after the camera came back at t={up:g}")
            if back.at > deadline:
                return self.verdict(
                    False,
                    f"first successful request {back.at - up:g} s after the camera came back at t={up:g} "
                    f"(allowed {self.reconnect_within:g}): {fmt_entry(back)}",
                )
        polls = [e for e in after if e.route.endswith("/os-upgrade/status") and e.status == 200]
        if not polls:
            return self.verdict(False, "never polled os-upgrade/status after starting the install")
        last = polls[-1]
        if last.state not in self.terminal:
            return self.verdict(
                False,
                f"stopped polling while the upgrade was {last.state!r} ({fmt_entry(last)}); "
                f"terminal: {', '.join(self.terminal)}",
            )
        rebooted = f", back after {len(ups)} reboot{'s' if len(ups) != 1 else ''}" if ups else ""
        return self.verdict(True, f"polled to {last.state!r} in {len(polls)} polls{rebooted}")
