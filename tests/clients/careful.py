"""The careful reference client: polls devices and pages telemetry the way the APIs ask to be used.

Waits out ``Retry-After`` on 429, follows ``next_cursor`` until it is null, stops polling a device
that answers 404 (after one last read with ``history=true``), logs in again on 401 and backs off on
5xx and failed connections. Every pause is on the world clock (see ``common.Env.pause``).

Other modes: ``--ota`` (a firmware install polled to its end), ``--os-upgrade`` (an A/B OS upgrade
driven through its reboot and polled to its end), ``--stream`` (the device's event WebSocket)
``--sse`` (the automation event stream) and ``--mqtt`` (a device-side MQTT session); the stream
modes reopen what the server dropped.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PAGE, WATCHED, WINDOW_S, Answer, Env, EventStream, Gateway, Mqtt, page_of, rounds

POLL_S = 10
OS_TERMINAL = ("success", "rollback", "failed", "cancelled")
STREAM_ROUNDS = 30  # five-second checks of the event stream: 150 s


class Careful:
    def __init__(self, env: Env) -> None:
        self.env = env
        self.devices = list(WATCHED)
        self.backoff = 1.0

    def call(self, method: str, path: str, **kwargs) -> Answer:
        """One request, retried politely: Retry-After on 429, login on 401, backoff on 5xx."""
        for _ in range(8):
            answer = self.env.call(method, path, **kwargs)
            if answer.status == 429:
                self.env.pause(float(answer.headers.get("retry-after", "1")) or 1.0)
            elif answer.status == 401:
                self.env.login()
            elif answer.status == 0 or answer.status >= 500:
                self.env.pause(self.backoff)
                self.backoff = min(60.0, self.backoff * 2)
            else:
                self.backoff = 1.0
                return answer
        return answer

    def read(self, device: str) -> None:
        now = self.env.now
        params = {"metric": "temperature", "start": now - WINDOW_S, "end": now, "limit": PAGE}
        cursor = None
        while True:
            query = dict(params, cursor=cursor) if cursor is not None else params
            answer = self.call("GET", f"/devices/{device}/telemetry", params=query)
            if answer.status == 404:
                self.devices.remove(device)
                self.call("GET", f"/devices/{device}/telemetry", params={**params, "history": "true"})
                return
            if answer.status != 200:
                return
            _, cursor = page_of(answer)
            if cursor is None:
                return

    def upgrade(self) -> int:
        """Install firmware and poll its status to a terminal state, through the reboot (the
        device refuses connections while it is down: keep polling)."""
        gateway = Gateway(self.env)
        if not gateway.login() or gateway.install().status != 200:
            return 1
        for _ in range(200):
            self.env.pause(2)
            status, state = gateway.ota_state()
            if status == 200 and state in ("failed", "reboot_confirmed"):
                return 0
        return 1

    def os_upgrade(self) -> int:
        """Upload, validate and install an OS package, reboot into it when the job asks for
        that, and poll the public status through the reboot to a terminal state (the device
        refuses connections while it is down: keep polling)."""
        gateway = Gateway(self.env)
        job_id = gateway.os_upgrade_start() if gateway.login() else None
        if job_id is None:
            return 1
        for _ in range(200):
            self.env.pause(5)
            status, state = gateway.os_state()
            if status != 200:
                continue
            if state in OS_TERMINAL:
                return 0
            if state == "awaiting_reboot" and gateway.os_reboot(job_id).status == 401:
                gateway.login()  # the session may have gone: log in and ask again
                gateway.os_reboot(job_id)
        return 1

    def mqtt(self) -> int:
        """A device-side MQTT session: when the broker drops it, connect again (every few
        seconds until the broker is back); disconnect cleanly at the end."""
        session = Mqtt("qa-careful")
        session.connect()
        for _ in range(STREAM_ROUNDS):
            self.env.pause(5)
            if not session.pump():
                session.connect()
        session.close()
        return 0

    def sse(self) -> int:
        """Keep the automation event stream (SSE) open: when the server ends it, open it again,
        logging in again if it is refused."""
        self.env.login()
        stream = EventStream(self.env)
        for _ in range(STREAM_ROUNDS):
            self.env.pause(5)
            if not stream.alive:
                stream = EventStream(self.env)
                if stream.status == 401 and self.env.login():
                    stream = EventStream(self.env)
        return 0

    def follow(self) -> int:
        """Keep the device's event stream open: when it drops, open it again at once (and every
        few seconds until the device takes it), logging in again if the session is gone."""
        gateway = Gateway(self.env)
        gateway.login()
        ws, _ = gateway.stream()
        for _ in range(STREAM_ROUNDS):
            self.env.pause(5)
            if ws is not None and not gateway.alive(ws):
                ws.close()
                ws = None
            if ws is None:
                ws, status = gateway.stream()
                if status == 401 and gateway.login():  # the session went with the drop
                    ws, _ = gateway.stream()
        if ws is not None:
            ws.close()
        return 0

    def run(self) -> int:
        self.env.login()
        for _ in range(rounds()):
            self.call("GET", "/devices")
            for device in list(self.devices):
                self.read(device)
            self.env.pause(POLL_S)
        return 0


if __name__ == "__main__":
    client = Careful(Env())
    modes = {
        "--ota": client.upgrade,
        "--os-upgrade": client.os_upgrade,
        "--stream": client.follow,
        "--mqtt": client.mqtt,
        "--sse": client.sse,
    }
    sys.exit(next((modes[a] for a in sys.argv[1:] if a in modes), client.run)())
