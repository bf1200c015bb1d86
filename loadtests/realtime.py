"""The automation server's realtime paths: devices publishing uplinks to the MQTT broker, and event
subscribers on the WebSocket ``/api/events/ws`` and the SSE stream ``/api/events/stream``."""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from urllib.parse import urlsplit

import gevent
import paho.mqtt.client as mqtt
from locust import User, between, tag, task
from locust.exception import StopUser
from paho.mqtt.enums import CallbackAPIVersion
from websockets.exceptions import ConnectionClosed, InvalidHandshake
from websockets.sync.client import connect

from loadtests.common import MQTT_URL, AutomationUser, answer, is_loopback, record, ws_url

MQTT_DEVICE_TYPE = "load_sensor"
MQTT_DEVICES = 20  # uplinks come from mqtt-load-1 .. mqtt-load-20, so the drafts they make stay few
MQTT_TIMEOUT_S = 10.0
SUBSCRIBE_S = 10.0
"""How long an event subscriber stays connected before it hangs up (and, after its wait, connects
again); the twin's sensors publish every few seconds, so a subscription sees several events."""
ANSWER_TIMEOUT_S = 10.0


class MqttUser(User):
    """A device on the embedded broker (``TWIN_MQTT_URL``): connects (``mqtt connect``, the time to
    CONNACK), then publishes readings at QoS 1 on ``device/load_sensor/mqtt-load-<n>/uplink``, the
    topic the automation server subscribes to, as the JSON object of metric values the server
    expects (it stamps them with the world time). Each publish is recorded as ``mqtt publish
    device/load_sensor/[id]/uplink`` with the time to the broker's PUBACK; the server keeps each
    unknown device as a draft."""

    weight = 2
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        if not is_loopback(MQTT_URL):
            raise StopUser()
        self.device_id = f"mqtt-load-{random.randint(1, MQTT_DEVICES)}"
        self.topic = f"device/{MQTT_DEVICE_TYPE}/{self.device_id}/uplink"
        self.mqtt = mqtt.Client(CallbackAPIVersion.VERSION2, client_id=f"locust-{uuid.uuid4().hex[:12]}")
        connected = threading.Event()
        refused: list[str] = []

        def on_connect(client, userdata, flags, reason, properties) -> None:
            if reason.is_failure:
                refused.append(str(reason))
            connected.set()

        self.mqtt.on_connect = on_connect
        url = urlsplit(MQTT_URL)
        started = time.perf_counter()
        error: Exception | None = None
        try:
            self.mqtt.connect(url.hostname or "127.0.0.1", url.port or 1883, keepalive=30)
            self.mqtt.loop_start()
            if not connected.wait(MQTT_TIMEOUT_S):
                error = TimeoutError(f"no CONNACK in {MQTT_TIMEOUT_S:g} s")
            elif refused:
                error = ConnectionError(f"broker refused: {refused[0]}")
        except OSError as err:
            error = err
        record(self, "MQTT", "mqtt connect", started, error=error)
        if error is not None:
            self.on_stop()
            raise StopUser()

    def on_stop(self) -> None:
        if getattr(self, "mqtt", None) is not None:
            self.mqtt.disconnect()
            self.mqtt.loop_stop()

    @tag("mqtt")
    @task
    def publish(self) -> None:
        body = {"temperature": round(random.uniform(18, 26), 2), "humidity": round(random.uniform(30, 60), 1)}
        payload = json.dumps(body).encode()
        started = time.perf_counter()
        error: Exception | None = None
        try:
            info = self.mqtt.publish(self.topic, payload, qos=1)
            info.wait_for_publish(MQTT_TIMEOUT_S)
            if not info.is_published():
                error = TimeoutError(f"no PUBACK in {MQTT_TIMEOUT_S:g} s")
        except (RuntimeError, ValueError) as err:  # not connected, or the client's queue is full
            error = err
        name = f"mqtt publish device/{MQTT_DEVICE_TYPE}/[id]/uplink"
        record(self, "MQTT", name, started, len(payload), error)


class EventSubscriber(AutomationUser):
    """What both event subscribers share: their weight and pace, and a login at the start."""

    abstract = True
    weight = 1
    think = (1.0, 3.0)

    def on_start(self) -> None:
        super().on_start()
        self.token = self.login()


class EventWsUser(EventSubscriber):
    """An event subscriber on the WebSocket ``/api/events/ws``: authenticates with its first frame
    ``{"type": "Auth", "token"}``, answers the server's pings, and stays ``SUBSCRIBE_S`` seconds.
    Recorded as ``ws /api/events/ws (connect)``, the time to the ``Authenticated`` answer, and
    ``... (message)``, one entry per message of events (a batch or a single event) with its size and
    the gap since the previous one as its time. An ``Error`` frame or an early close is a failure."""

    @tag("events")
    @task
    def subscribe(self) -> None:
        name = "ws /api/events/ws"
        started = time.perf_counter()
        try:
            socket = connect(f"{ws_url(self.host)}/api/events/ws", open_timeout=10, close_timeout=1)
        except (OSError, InvalidHandshake) as err:
            record(self, "WS", f"{name} (connect)", started, error=err)
            return
        with socket:
            entry = f"{name} (connect)"
            last = started
            try:
                socket.send(json.dumps({"type": "Auth", "token": self.token}))
                answer = json.loads(socket.recv(timeout=ANSWER_TIMEOUT_S))
                if answer.get("type") != "Authenticated":
                    raise ConnectionError(f"not authenticated: {answer}")
                record(self, "WS", entry, last)
                entry, last = f"{name} (message)", time.perf_counter()
                deadline = last + SUBSCRIBE_S
                while (remaining := deadline - time.perf_counter()) > 0:
                    try:
                        text = socket.recv(timeout=remaining)
                    except TimeoutError:
                        break
                    frame = json.loads(text)
                    if frame.get("type") == "ping":
                        socket.send('{"type":"pong"}')
                        continue
                    if frame.get("type") == "Error":
                        raise ConnectionError(f"server error: {frame.get('message')}")
                    record(self, "WS", entry, last, len(text))
                    last = time.perf_counter()
            except (ConnectionClosed, ConnectionError, TimeoutError, OSError, ValueError) as err:
                record(self, "WS", entry, last, error=err)


class EventSseUser(EventSubscriber):
    """An event subscriber on the SSE stream ``/api/events/stream?token=``: stays ``SUBSCRIBE_S``
    seconds. Recorded as ``sse /api/events/stream (connect)``, the time to the response headers,
    and ``... (event)``, one entry per event with its size and the gap since the previous one as its
    time (``:keepalive`` comments are not events)."""

    @tag("events")
    @task
    def subscribe(self) -> None:
        name = "sse /api/events/stream"
        with self.client.get(
            "/api/events/stream",
            params={"token": self.token},
            stream=True,
            timeout=(10, None),
            name=f"{name} (connect)",
            catch_response=True,
        ) as response:
            streaming = response.status_code == 200 and response.headers.get("content-type", "").startswith(
                "text/event-stream"
            )
            if not streaming:
                response.failure(f"{answer(response)} ({response.headers.get('content-type')})")
                response.close()
                return
            response.success()
        last = time.perf_counter()
        lines: list[bytes] = []
        try:
            with gevent.Timeout(SUBSCRIBE_S, False):
                for line in response.iter_lines():
                    if line:
                        lines.append(line)
                        continue
                    event, lines = b"\n".join(lines), []
                    if event and not event.startswith(b":"):
                        record(self, "SSE", f"{name} (event)", last, len(event))
                        last = time.perf_counter()
                raise ConnectionError("the server ended the stream")
        except (OSError, ValueError) as err:
            record(self, "SSE", f"{name} (event)", last, error=err)
        finally:
            response.close()
