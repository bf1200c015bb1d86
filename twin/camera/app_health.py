"""Health probes and automatic restarts of running apps, on the world clock.

- A manifest's ``healthcheck`` (``http``, ``tcp`` or ``command``) is probed every ``interval``
  while the app runs. An HTTP probe passes only on 200. The simulated app answers its probes
  unless it has been made unhealthy (``AppManager.break_health``: a hung worker, a wedged
  socket). ``retries`` failures in a row end the container (reason ``unhealthy``).
- ``auto_restart`` (or ``restart_policy: always|on-failure``) restarts a container that ended
  under the app — crashed, out of memory, unhealthy — after ``retry_delay_seconds``, growing by
  ``backoff_multiplier`` each time, capped at five minutes; ``max_retries`` 0 means no limit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from twin.camera.app_manifest import Manifest

RETRY_DELAY_S = 5.0
BACKOFF = 1.5
MAX_DELAY_S = 300.0
INTERVAL_S = 30.0
RETRIES = 3
RESTARTED_ON = ("crashed", "OOMKilled", "unhealthy")
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)(ms|s|m|h)?$")
_UNIT = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


@dataclass(frozen=True)
class RestartPolicy:
    enabled: bool
    max_retries: int
    delay: float
    multiplier: float

    def delay_for(self, attempt: int) -> float:
        """Seconds before restart number ``attempt`` (1-based)."""
        return min(MAX_DELAY_S, self.delay * self.multiplier ** (attempt - 1))


@dataclass(frozen=True)
class Probe:
    kind: str
    target: str
    interval: float
    retries: int


def restart_policy(manifest: Manifest) -> RestartPolicy:
    spec: dict[str, Any] = manifest.raw.get("spec") or {}
    auto = spec.get("auto_restart") or {}
    policy = str(spec.get("restart_policy") or "")
    enabled = bool(auto.get("enabled")) or policy in ("always", "on-failure")
    retries = int(auto.get("max_retries") or spec.get("restart_max_retries") or 0)
    delay = float(auto.get("retry_delay_seconds") or RETRY_DELAY_S)
    multiplier = float(auto.get("backoff_multiplier") or BACKOFF)
    return RestartPolicy(enabled, retries, delay, multiplier)


def probe_of(manifest: Manifest) -> Probe | None:
    check = manifest.healthcheck
    if not check or check.get("enabled") is False:
        return None
    kind = str(check.get("type") or "http")
    if kind == "http":
        target = f"http://127.0.0.1:{check.get('port') or 8080}{check.get('path') or '/health'}"
    elif kind == "tcp":
        target = f"tcp 127.0.0.1:{check.get('port') or 8080}"
    else:
        command = check.get("command") or ["true"]
        target = " ".join(command) if isinstance(command, list) else str(command)
    interval = _seconds(check.get("interval"))
    interval = interval or float(check.get("health_check_interval_seconds") or INTERVAL_S)
    return Probe(kind, target, interval, int(check.get("retries") or RETRIES))


def failure_text(probe: Probe) -> str:
    if probe.kind == "http":
        return f"health check failed: GET {probe.target}: status 503"
    if probe.kind == "tcp":
        return f"health check failed: {probe.target}: connection refused"
    return f"health check failed: command {probe.target!r} exited with status 1"


def _seconds(value: Any) -> float:
    if value is None:
        return 0.0
    match = _DURATION.match(str(value).strip())
    return float(match.group(1)) * _UNIT[match.group(2)] if match else 0.0
