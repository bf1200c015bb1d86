"""Counting the fleet's uplinks at a broker with little CPU: every message on ``device/+/+/uplink``, per
device and per wall second, on a thread of its own.

Three readers of the same stream, to measure which costs least (``python -m bench.brokers`` compares
them):

- :class:`MqttCounter`: a minimal MQTT 3.1.1 subscriber at QoS 0 over a plain socket: ``CONNECT``,
  ``SUBSCRIBE``, then one ``recv`` takes every ``PUBLISH`` that has arrived and a short loop reads
  each one's topic; the payload is never decoded. Works on any broker.
- :class:`NatsCounter`: NATS's own protocol on the server's client port, subscribed to the subject
  the MQTT topic maps to (``device.*.*.uplink``; MQTT ``/`` is NATS ``.``). NATS only.
- :class:`PahoCounter`: paho-mqtt, as ``bench.publisher`` subscribes: the reference.

Each keeps ``received`` (all messages), ``per_second`` (wall second -> messages) and ``per_device``
(the device's topic or subject -> messages).
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from collections import Counter
from typing import Any

import paho.mqtt.client as mqtt

from hardware.adapters.mqtt_fleet import (
    DISCONNECT_PACKET,
    PINGREQ_PACKET,
    _remaining_length,
    _utf8,
    connect_packet,
)

TOPIC = "device/+/+/uplink"
SUBJECT = "device.*.*.uplink"
KEEPALIVE_S = 600
READ_SIZE = 1 << 20
READY_TIMEOUT_S = 10.0


class CounterError(RuntimeError):
    """The counter could not subscribe."""


class UplinkCounter:
    """The counts and the reading thread; subclasses connect and parse."""

    name = "?"

    def __init__(self, host: str, port: int) -> None:
        self.host, self.port = host, port
        self.received = 0
        self.per_second: Counter[int] = Counter()
        self.per_device: dict[bytes, int] = {}
        self.error: str | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sock: socket.socket | None = None
        self._tid: int | None = None

    def cpu_seconds(self) -> float:
        """CPU time of the thread that reads and counts (``/proc/self/task/<tid>/stat``)."""
        if self._tid is None:
            return 0.0
        with open(f"/proc/self/task/{self._tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def start(self) -> UplinkCounter:
        """Connect and subscribe (raises :class:`CounterError`), then count on a thread."""
        try:
            self._sock = socket.create_connection((self.host, self.port), timeout=READY_TIMEOUT_S)
            self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
            rest = self._subscribe(self._sock)
        except (OSError, ValueError) as err:
            self.close()
            raise CounterError(f"{self.name} counter on {self.host}:{self.port}: {err}") from err
        self._sock.settimeout(1.0)
        self._thread = threading.Thread(
            target=self._run, args=(rest,), name=f"uplinks-{self.name}", daemon=True
        )
        self._thread.start()
        return self

    def _subscribe(self, sock: socket.socket) -> bytearray:
        raise NotImplementedError

    def _parse(self, buf: bytearray) -> int:
        """Count the complete messages at the start of ``buf``; returns the bytes consumed."""
        raise NotImplementedError

    def _idle(self, sock: socket.socket) -> None:
        """Called about once a second without data."""

    def _run(self, buf: bytearray) -> None:
        self._tid = threading.get_native_id()
        sock = self._sock
        assert sock is not None
        try:
            while not self._stop.is_set():
                if buf:
                    before = self.received
                    del buf[: self._parse(buf)]
                    if self.received != before:
                        self.per_second[int(time.monotonic())] += self.received - before
                try:
                    data = sock.recv(READ_SIZE)
                except TimeoutError:
                    self._idle(sock)
                    continue
                if not data:
                    self.error = "the broker closed the connection"
                    return
                buf += data
        except OSError as err:
            if not self._stop.is_set():
                self.error = f"{type(err).__name__}: {err}"

    def devices(self) -> int:
        return len(self.per_device)

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        self.close()

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.close()
            self._sock = None


def _read_until(sock: socket.socket, buf: bytearray, done: Any) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while not done(buf):
        if time.monotonic() > deadline:
            raise ValueError("no answer to the subscription in time")
        data = sock.recv(65536)
        if not data:
            raise ValueError(f"closed by the broker after {bytes(buf[:200])!r}")
        buf += data


class MqttCounter(UplinkCounter):
    """An MQTT 3.1.1 subscriber at QoS 0 of its own (see the module)."""

    name = "mqtt"

    def _subscribe(self, sock: socket.socket) -> bytearray:
        sock.sendall(connect_packet(f"bench-uplinks-{os.getpid()}-{id(self)}", None, KEEPALIVE_S))
        body = (1).to_bytes(2, "big") + _utf8(TOPIC) + b"\x00"
        sock.sendall(b"\x82" + _remaining_length(len(body)) + body)
        buf = bytearray()
        # CONNACK (4 bytes), then SUBACK (5 bytes); a PUBLISH may follow at once.
        _read_until(sock, buf, lambda b: len(b) >= 9)
        if buf[0] != 0x20 or buf[3] != 0:
            raise ValueError(f"CONNACK refused: {bytes(buf[:4]).hex()}")
        if buf[4] != 0x90 or buf[8] == 0x80:
            raise ValueError(f"SUBACK refused: {bytes(buf[4:9]).hex()}")
        self._last_ping = time.monotonic()
        return buf[9:]

    def close(self) -> None:
        if self._sock is not None:
            with contextlib.suppress(OSError):
                self._sock.sendall(DISCONNECT_PACKET)
        super().close()

    def _idle(self, sock: socket.socket) -> None:
        if time.monotonic() - self._last_ping > KEEPALIVE_S / 4:
            sock.sendall(PINGREQ_PACKET)
            self._last_ping = time.monotonic()

    def _parse(self, buf: bytearray) -> int:
        pos, end, n = 0, len(buf), 0
        devices = self.per_device
        while end - pos >= 2:
            length, i = buf[pos + 1], pos + 2
            if length & 0x80:
                length, shift = length & 0x7F, 7
                while True:
                    if i >= end:
                        self.received += n
                        return pos
                    byte = buf[i]
                    i += 1
                    length |= (byte & 0x7F) << shift
                    shift += 7
                    if not byte & 0x80:
                        break
            if i + length > end:
                break
            if buf[pos] >> 4 == 3:  # PUBLISH
                topic = bytes(buf[i + 2 : i + 2 + (buf[i] << 8 | buf[i + 1])])
                devices[topic] = devices.get(topic, 0) + 1
                n += 1
            pos = i + length
        self.received += n
        return pos


class NatsCounter(UplinkCounter):
    """A NATS subscriber of its own on the client port (see the module)."""

    name = "nats"

    def _subscribe(self, sock: socket.socket) -> bytearray:
        buf = bytearray()
        _read_until(sock, buf, lambda b: b"\r\n" in b)  # INFO
        del buf[: buf.index(b"\r\n") + 2]
        options = {
            "verbose": False,
            "pedantic": False,
            "headers": True,
            "protocol": 1,
            "name": "bench-uplinks",
        }
        sock.sendall(f"CONNECT {json.dumps(options)}\r\nSUB {SUBJECT} 1\r\nPING\r\n".encode())
        _read_until(sock, buf, lambda b: b"PONG\r\n" in b or b"-ERR" in b)
        if b"-ERR" in buf:
            raise ValueError(bytes(buf).decode("utf-8", "replace").strip())
        del buf[: buf.index(b"PONG\r\n") + 6]
        return buf

    def _parse(self, buf: bytearray) -> int:
        pos, end, n = 0, len(buf), 0
        devices = self.per_device
        while pos < end:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                break
            if buf[pos] == 0x4D or buf[pos] == 0x48:  # MSG subject sid [reply] size / HMSG ... hsize size
                parts = bytes(buf[pos:eol]).split()
                stop = eol + 2 + int(parts[-1]) + 2
                if stop > end:
                    break
                subject = parts[1]
                devices[subject] = devices.get(subject, 0) + 1
                n += 1
                pos = stop
                continue
            if buf.startswith(b"PING", pos):
                assert self._sock is not None
                self._sock.sendall(b"PONG\r\n")
            elif buf.startswith(b"-ERR", pos):
                self.error = bytes(buf[pos:eol]).decode("utf-8", "replace")
            pos = eol + 2
        self.received += n
        return pos


class PahoCounter(UplinkCounter):
    """paho-mqtt at QoS 0 on its own network thread (``loop_start``)."""

    name = "paho"

    def start(self) -> UplinkCounter:
        subscribed = threading.Event()
        client = mqtt.Client(mqtt.CallbackAPIVersion.VERSION2, client_id=f"bench-paho-{os.getpid()}")
        client.on_connect = lambda c, u, f, code, p: c.subscribe(TOPIC, qos=0)
        client.on_subscribe = lambda c, u, mid, codes, p: subscribed.set()
        client.on_message = self._on_message
        try:
            client.connect(self.host, self.port, keepalive=KEEPALIVE_S)
        except OSError as err:
            raise CounterError(f"paho counter on {self.host}:{self.port}: {err}") from err
        client.loop_start()
        self._client = client
        self._tid = client._thread.native_id  # type: ignore[union-attr]
        if not subscribed.wait(READY_TIMEOUT_S):
            self.stop()
            raise CounterError(f"paho counter on {self.host}:{self.port}: no SUBACK")
        return self

    def _on_message(self, client: mqtt.Client, userdata: Any, message: mqtt.MQTTMessage) -> None:
        self.received += 1
        self.per_second[int(time.monotonic())] += 1
        topic = message._topic  # bytes, as the other counters keep it
        self.per_device[topic] = self.per_device.get(topic, 0) + 1

    def stop(self) -> None:
        client = getattr(self, "_client", None)
        if client is not None:
            client.disconnect()
            client.loop_stop()


COUNTERS: dict[str, type[UplinkCounter]] = {c.name: c for c in (MqttCounter, NatsCounter, PahoCounter)}
