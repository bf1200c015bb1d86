"""A client that kills the process of the shard serving cam-03 (found on the control plane's
``GET /fleet``), then waits to be stopped: the run must fail naming that shard."""

import json
import os
import signal
import sys
import time
import urllib.request

with urllib.request.urlopen(os.environ["TWIN_CONTROL_URL"] + "/fleet", timeout=30) as r:
    members = json.load(r)["members"]
target = next(m for m in members if m["name"] == "cam-03")
print(f"killing {target['shard']} (pid {target['pid']})", flush=True)
os.kill(target["pid"], signal.SIGKILL)
time.sleep(float(sys.argv[1]) if len(sys.argv) > 1 else 60)
