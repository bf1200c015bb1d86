"""Locust load test of the twin: every way a client reaches it. Run from the repository root against
a running twin (``make run``)::

    make load               # 20 users for 30 s, one process
    make load-distributed   # the same from a master and two worker processes, for 20 s
    make load ARGS="ApiUser MqttUser"   # only these user classes (any locust option goes in ARGS)

User classes (each records under its own names in Locust's statistics):

  ApiUser       REST: device list and detail, current values, telemetry paging, webhook pushes
  HealthUser    REST: the health endpoints
  MqttUser      MQTT uplinks to the embedded broker (``mqtt connect``, ``mqtt publish ...``)
  EventWsUser   event subscriber on ``/api/events/ws`` (``ws ... (connect)``, ``... (message)``)
  EventSseUser  event subscriber on ``/api/events/stream`` (``sse ... (connect)``, ``... (event)``)
  GatewayUser   camera gateway REST and the app lifecycle (``gateway /api/...``)
  H264Viewer    live H.264 feed viewers (``gateway /api/v1/h264/main (connect)``, ``... (frame)``)
  FaultUser     switches a latency fault and a rate-limit storm on and off (``control ...``)

Their tasks are tagged ``rest`` (ApiUser, HealthUser), ``mqtt``, ``events`` (both subscribers),
``gateway``, ``video`` and ``faults``; ``--tags`` / ``--exclude-tags`` pick users by those areas
(``make load ARGS="--exclude-tags faults video"``): a class left without tasks is not spawned.

Environment (every target must be on loopback):

  TWIN_USERNAME / TWIN_PASSWORD     automation administrator (default admin / changeme1, the README's
                                    setup/initialize example; a fresh twin gets it created)
  TWIN_GATEWAY_URL                  a camera's gateway (default http://127.0.1.1:8080, camera 1 with
                                    ``--gateway-addressing ip``; with ``port`` it is http://127.0.0.1:8081)
  TWIN_GATEWAY_USERNAME / _PASSWORD default admin / password
  TWIN_CONTROL_URL                  control plane (default http://127.0.0.1:9380)
  TWIN_MQTT_URL                     broker (default mqtt://127.0.0.1:1883)
  TWIN_H264_STREAM, TWIN_H264_VIEWERS   feed watched (default main) and viewers (default 2, at most 5)
  TWIN_STORM_LIMIT                  requests per minute per client during a storm (default 10)

For raw requests/s against a bare FastAPI baseline use ``make bench`` instead: Locust measures
behaviour under a think-time workload, not peak throughput.
"""

from __future__ import annotations

import logging

from locust import events
from locust.env import Environment

from loadtests.common import remote_targets
from loadtests.faults import FaultUser
from loadtests.gateway import GatewayUser, H264Viewer
from loadtests.realtime import EventSseUser, EventWsUser, MqttUser
from loadtests.rest import ApiUser, HealthUser

__all__ = [
    "ApiUser",
    "EventSseUser",
    "EventWsUser",
    "FaultUser",
    "GatewayUser",
    "H264Viewer",
    "HealthUser",
    "MqttUser",
]


@events.init.add_listener
def loopback_only(environment: Environment, **_: object) -> None:
    """Refuse to start against anything but this machine (a worker learns ``--host`` from its master)."""
    remote = remote_targets(environment.host)
    if remote:
        raise SystemExit(f"loadtests: load goes to loopback only, not to {', '.join(remote)}")


@events.init.add_listener
def users_by_tags(environment: Environment, **_: object) -> None:
    """Leave out the user classes that ``--tags`` / ``--exclude-tags`` leave without a task (Locust
    would spawn them and fail). Workers are started without tags: their master decides who runs
    (and Locust's warning that such a class would fail is dropped, see below)."""
    options = environment.parsed_options
    if not (getattr(options, "tags", None) or getattr(options, "exclude_tags", None)):
        return
    environment._filter_tasks_by_tags()
    left_out = [cls.__name__ for cls in environment.user_classes if not cls.tasks]
    environment.user_classes = [cls for cls in environment.user_classes if cls.tasks]
    logging.info("loadtests: the tags leave out %s", ", ".join(left_out) or "no user class")


class _LeftOutByTags(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return "had no tasks left after filtering" not in record.getMessage()


logging.getLogger().addFilter(_LeftOutByTags())
