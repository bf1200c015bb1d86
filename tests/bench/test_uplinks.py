"""The uplink counters of the broker bench read every message exactly once, however the stream is cut
into reads (no broker here: the bytes are the brokers' own framing)."""

from __future__ import annotations

import pytest

from bench.brokers import parse_args
from bench.uplinks import MqttCounter, NatsCounter, UplinkCounter
from hardware.adapters.mqtt_fleet import _remaining_length, _utf8


def mqtt_publish(topic: str, payload: bytes, qos: int = 0) -> bytes:
    body = _utf8(topic) + (b"\x00\x07" if qos else b"") + payload
    return bytes((0x30 | qos << 1,)) + _remaining_length(len(body)) + body


def feed(counter: UplinkCounter, stream: bytes, cut: int) -> None:
    """``stream`` in reads of ``cut`` bytes, as the reading thread would take them."""
    buf = bytearray()
    for start in range(0, len(stream), cut):
        buf += stream[start : start + cut]
        del buf[: counter._parse(buf)]
    assert not buf


@pytest.mark.parametrize("cut", [1, 3, 7, 100, 1 << 20])
def test_the_mqtt_counter_counts_each_publish_once_per_topic(cut: int) -> None:
    messages = [(f"device/env_sensor/s-{i % 7}/uplink", b"x" * (i * 37 % 400)) for i in range(200)]
    stream = b"".join(mqtt_publish(t, p, qos=i % 2) for i, (t, p) in enumerate(messages))
    stream += b"\xd0\x00"  # a PINGRESP between them is not a message
    stream += mqtt_publish("device/env_sensor/s-0/uplink", b"y" * 20_000)  # a 3-byte remaining length
    counter = MqttCounter("127.0.0.1", 1)
    feed(counter, stream, cut)
    assert counter.received == 201 and counter.devices() == 7
    assert counter.per_device[b"device/env_sensor/s-0/uplink"] == 1 + sum(i % 7 == 0 for i in range(200))


@pytest.mark.parametrize("cut", [1, 5, 64, 1 << 20])
def test_the_nats_counter_counts_msg_and_hmsg_and_answers_ping(cut: int) -> None:
    class Sock:
        sent = b""

        def sendall(self, data: bytes) -> None:
            self.sent += data

    head = b"NATS/1.0\r\nNmqtt-Pub:1\r\n\r\n"
    stream = b"".join(
        b"MSG device.env.s-%d.uplink 1 %d\r\n%s\r\n" % (i % 3, i, b"z" * i)
        if i % 2
        else b"HMSG device.env.s-%d.uplink 1 %d %d\r\n%s%s\r\n"
        % (i % 3, len(head), len(head) + i, head, b"z" * i)
        for i in range(60)
    )
    stream += b"PING\r\n+OK\r\n"
    counter = NatsCounter("127.0.0.1", 1)
    counter._sock = Sock()  # type: ignore[assignment]
    feed(counter, stream, cut)
    assert counter.received == 60 and counter.devices() == 3 and counter._sock.sent == b"PONG\r\n"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--brokers", "rabbitmq"], "unknown rabbitmq"),
        (["--rates", "10k"], "comma-separated numbers"),
        (["--rates", "0"], "must be > 0"),
        (["--publishers", "0"], "must be >= 1"),
        (["--counters", "zmq"], "choose from mqtt, nats, paho"),
    ],
)
def test_the_broker_bench_refuses_bad_options(argv, message, capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        parse_args(argv)
    assert exc.value.code == 2 and message in capsys.readouterr().err
