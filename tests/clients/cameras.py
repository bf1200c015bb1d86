"""A client of every camera in the run (``TWIN_GATEWAY_URLS``, simulated and real alike): logs in,
then reads the system info until the camera answers 429.

By default it leaves a camera alone once told to wait: it has nothing more to ask, so it never comes
back before ``Retry-After``. ``--naive`` asks again at once, as a client that ignores the header
would. It fails (exit 1) when a camera refuses the login or never limits it.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import Env, Gateway

MAX_READS = 50
INFO = "/api/v1/system/info"


def limited(gateway: Gateway, naive: bool) -> bool:
    """Read until a 429; ``True`` if one came."""
    for _ in range(MAX_READS):
        answer = gateway.call("GET", INFO)
        if answer.status == 429:
            print(f"{gateway.base}: 429, Retry-After {answer.headers.get('retry-after')}")
            if naive:
                gateway.call("GET", INFO)
            return True
    return False


def main() -> int:
    naive = "--naive" in sys.argv[1:]
    env = Env()
    failed = False
    for pair in os.environ.get("TWIN_GATEWAY_URLS", "").split():
        camera_id, _, url = pair.partition("=")
        gateway = Gateway(env)
        gateway.base = url
        if not gateway.login():
            print(f"{camera_id}: login refused")
            failed = True
        elif not limited(gateway, naive):
            print(f"{camera_id}: no 429 in {MAX_READS} reads")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
