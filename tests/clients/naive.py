"""The naive reference client: the mistakes clients make in the field, on purpose.

Retries a 429 after one second whatever ``Retry-After`` says, pages until a page comes back empty
(so it asks past a null cursor), keeps polling a device after it answered 404 and never logs in
again after a 401. It paces itself on the world clock like the careful one. In its other modes
it looks at an OS upgrade a few times and assumes it worked (``--os-upgrade``), and carries on
without a stream the server dropped (``--stream``, ``--sse``, ``--mqtt``).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import PAGE, WATCHED, WINDOW_S, Answer, Env, EventStream, Gateway, Mqtt, page_of, rounds

POLL_S = 10
STREAM_ROUNDS = 30  # five-second checks of the event stream: 150 s


class Naive:
    def __init__(self, env: Env) -> None:
        self.env = env

    def call(self, method: str, path: str, **kwargs) -> Answer:
        for _ in range(5):
            answer = self.env.call(method, path, **kwargs)
            if answer.status != 429:
                return answer
            self.env.pause(1)
        return answer

    def read(self, device: str) -> None:
        now = self.env.now
        params = {"metric": "temperature", "start": now - WINDOW_S, "end": now, "limit": PAGE}
        cursor = None
        for _ in range(20):
            query = dict(params, cursor=cursor) if cursor is not None else params
            answer = self.call("GET", f"/devices/{device}/telemetry", params=query)
            if answer.status != 200:
                return
            stamps, _ = page_of(answer)
            if not stamps:
                return
            cursor = stamps[-1]

    def upgrade(self) -> int:
        """Install firmware, look at the status a few times, and assume it worked."""
        gateway = Gateway(self.env)
        gateway.login()
        gateway.install()
        for _ in range(3):
            self.env.pause(2)
            gateway.ota_state()
        return 0

    def os_upgrade(self) -> int:
        """Start an OS upgrade, look at its status a few times, and assume it worked."""
        gateway = Gateway(self.env)
        gateway.login()
        gateway.os_upgrade_start()
        for _ in range(3):
            self.env.pause(5)
            gateway.os_state()
        return 0

    def mqtt(self) -> int:
        """Connect to the broker once; when the connection drops, carry on without it."""
        session = Mqtt("qa-naive")
        session.connect()
        for _ in range(STREAM_ROUNDS):
            self.env.pause(5)
            session.pump()
        session.close()
        return 0

    def sse(self) -> int:
        """Open the automation event stream once; when the server ends it, carry on without it."""
        self.env.login()
        EventStream(self.env)
        for _ in range(STREAM_ROUNDS):
            self.env.pause(5)
        return 0

    def follow(self) -> int:
        """Open the device's event stream once; when it drops, carry on without it."""
        gateway = Gateway(self.env)
        gateway.login()
        ws, _ = gateway.stream()
        for _ in range(STREAM_ROUNDS):
            self.env.pause(5)
            if ws is not None and not gateway.alive(ws):
                ws.close()
                ws = None
        if ws is not None:
            ws.close()
        return 0

    def run(self) -> int:
        self.env.login()
        for _ in range(rounds()):
            self.call("GET", "/devices")
            for device in WATCHED:
                self.read(device)
            self.env.pause(POLL_S)
        return 0


if __name__ == "__main__":
    client = Naive(Env())
    modes = {
        "--ota": client.upgrade,
        "--os-upgrade": client.os_upgrade,
        "--stream": client.follow,
        "--mqtt": client.mqtt,
        "--sse": client.sse,
    }
    sys.exit(next((modes[a] for a in sys.argv[1:] if a in modes), client.run)())
