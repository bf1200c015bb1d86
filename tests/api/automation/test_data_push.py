"""Data push over HTTP with real delivery: a webhook target that fails three times then succeeds
(four attempts, backoff in sim time, nothing lost), an MQTT target on a real broker, test pushes,
start/stop, logs, and the failure paths; a dead target: its circuit opens, its payloads wait (or are
given up past the bound, counted as failed) and all go out once a probe gets through."""

from __future__ import annotations

import asyncio
import contextlib
import json

import httpx
import pytest
from amqtt.client import MQTTClient

from api.realtime.broker import EmbeddedBroker
from tests.conftest import admin_token
from tests.receivers import HttpReceiver, closed_port
from tests.sockets import until
from twin.automation import delivery
from twin.automation.circuit import COOL_DOWN_S, FAILURES_TO_OPEN, JITTER
from twin.automation.delivery import run_worker
from twin.automation.server import automation_of
from twin.serve import Twin

LAB = {
    "device_id": "lab",
    "device_type": "env_sensor",
    "name": "Lab",
    "adapter_type": "webhook",
    "connection_config": {},
}


@pytest.fixture
async def auth(automation: httpx.AsyncClient) -> dict[str, str]:
    headers = {"Authorization": f"Bearer {await admin_token(automation)}"}
    assert (await automation.post("/api/devices", json=LAB, headers=headers)).status_code == 200
    return headers


@pytest.fixture
async def worker(twin: Twin):
    """The delivery worker the composition root runs, here on the test's loop."""
    task = asyncio.create_task(run_worker(lambda: automation_of(twin.world)))
    yield task
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def target(url: str, **overrides) -> dict:
    return {
        "name": "lake",
        "target_type": "webhook",
        "config": {"url": url},
        "schedule": {"type": "event_driven", "event_types": ["DeviceMetric"]},
        "data_filter": {"source_patterns": ["device:lab:*"], "only_changes": False},
        "retry_config": {"max_retries": 3, "backoff_secs": 5, "max_backoff_secs": 300},
        **overrides,
    }


async def logs(client: httpx.AsyncClient, auth: dict[str, str], target_id: str) -> list[dict]:
    resp = await client.get(f"/api/data-push/{target_id}/logs", headers=auth)
    assert resp.status_code == 200
    return resp.json()["data"]["logs"]


async def test_three_failures_then_success_shows_four_attempts_and_loses_nothing(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin, worker: asyncio.Task
) -> None:
    async with HttpReceiver(statuses=[500, 503, 500]) as lake:
        created = await automation.post("/api/data-push", json=target(f"{lake.url}/ingest"), headers=auth)
        assert created.status_code == 200
        target_id = created.json()["data"]["id"]
        assert created.json()["data"] == {
            "id": target_id,
            "name": "lake",
            "target_type": "webhook",
            "enabled": True,
        }
        written = await automation.post(
            "/api/devices/lab/metrics", json={"metric": "co2", "value": 812}, headers=auth
        )
        assert written.status_code == 200
        await until(lambda: len(lake.requests) == 1)
        # the outcome is back (the receiver answered before the worker read its answer)
        await until(lambda: automation_of(twin.world).outbox.stats("push", [target_id])[0].attempts == 1)
        (entry,) = await logs(automation, auth, target_id)
        assert (
            entry["status"] == "retrying" and entry["attempts"] == 1 and entry["error"].startswith("HTTP 500")
        )
        for wait, expected in ((5, 2), (10, 3), (20, 4)):  # backoff 5 s, doubling, in sim time
            twin.clock.advance(wait - 0.1)
            assert (
                automation_of(twin.world).outbox.take() == []
            )  # not due yet: the worker has nothing to send
            twin.clock.advance(0.1)
            await until(lambda n=expected: len(lake.requests) == n)
            # the outcome is back (so the next wait starts from here)
            await until(
                lambda n=expected: (
                    automation_of(twin.world).outbox.stats("push", [target_id])[0].attempts == n
                )
            )
        await until(lambda: automation_of(twin.world).outbox.pending() == 0)
        (entry,) = await logs(automation, auth, target_id)
    assert entry["status"] == "success" and entry["attempts"] == 4 and entry["error"] is None
    assert entry["response"] == '{"ok":true}' and entry["data_source_id"] == "device:lab:co2"
    assert entry["created_at"] == 1767225600 and entry["completed_at"] == 1767225635
    bodies = {r.body for r in lake.requests}
    assert len(bodies) == 1  # the same payload every time
    payload = json.loads(bodies.pop())
    assert payload == json.loads(entry["payload_sent"])
    assert payload["device_id"] == "lab" and payload["metric"] == "co2" and payload["value"] == 812
    detail = (await automation.get(f"/api/data-push/{target_id}", headers=auth)).json()["data"]
    assert detail["stats"] == {"pushed": 1, "failed": 0}


async def test_retries_run_out(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin, worker: asyncio.Task
) -> None:
    async with HttpReceiver(statuses=[500, 500]) as lake:
        body = target(lake.url, retry_config={"max_retries": 1, "backoff_secs": 2, "max_backoff_secs": 2})
        target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
        await automation.post("/api/devices/lab/metrics", json={"metric": "co2", "value": 1}, headers=auth)
        await until(lambda: automation_of(twin.world).outbox.stats("push", [target_id])[0].attempts == 1)
        twin.clock.advance(2)
        await until(lambda: automation_of(twin.world).outbox.pending() == 0)
    (entry,) = await logs(automation, auth, target_id)
    assert entry["status"] == "failed" and entry["attempts"] == 2 and entry["completed_at"] is not None
    stats = (await automation.get("/api/data-push/stats", headers=auth)).json()["data"]
    assert stats["total_targets"] == 1 and stats["total_failed"] == 1 and stats["by_type"] == {"webhook": 1}


async def test_filters_batches_and_stop(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    async with HttpReceiver() as lake:
        body = target(
            lake.url,
            data_filter={"source_patterns": ["device:lab:co2"], "only_changes": True},
            batch_config={"batch_size": 2, "batch_interval_ms": 1000, "format": "flat"},
        )
        target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
        for metric, value in (("co2", 1), ("co2", 1), ("temp", 5), ("co2", 2)):
            await automation.post(
                "/api/devices/lab/metrics", json={"metric": metric, "value": value}, headers=auth
            )
        await automation_of(twin.world).outbox.flush()
        (request,) = lake.requests
        batch = request.json()
        assert batch["count"] == 2 and [i["value"] for i in batch["items"]] == [1, 2]
        await automation.post("/api/devices/lab/metrics", json={"metric": "co2", "value": 3}, headers=auth)
        twin.clock.advance(1)  # a partial batch goes out after batch_interval_ms
        await automation_of(twin.world).outbox.flush()
        assert lake.requests[-1].json()["items"][0]["value"] == 3
        stopped = await automation.post(f"/api/data-push/{target_id}/stop", headers=auth)
        assert stopped.json()["data"]["enabled"] is False
        await automation.post("/api/devices/lab/metrics", json={"metric": "co2", "value": 4}, headers=auth)
        twin.clock.advance(2)
        assert await automation_of(twin.world).outbox.flush() == 0
        started = await automation.post(f"/api/data-push/{target_id}/start", headers=auth)
        assert started.json()["data"]["enabled"] is True


async def test_interval_target_pushes_latest_values(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    async with HttpReceiver() as lake:
        body = target(
            lake.url,
            schedule={"type": "interval", "interval_secs": 60},
            data_filter={"source_patterns": ["device:env_sensor-0001:*"]},
        )
        await automation.post("/api/data-push", json=body, headers=auth)
        twin.clock.advance(60)
        await automation_of(twin.world).outbox.flush()
        pushed = {r.json()["metric"]: r.json()["value"] for r in lake.requests}
        assert set(pushed) == {"temperature", "humidity"} and pushed["humidity"] == 37.11


async def test_mqtt_target_publishes_on_a_real_broker(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    broker = EmbeddedBroker("127.0.0.1", 0)
    await broker.start()
    client = MQTTClient(config={"auto_reconnect": False})
    try:
        url = f"mqtt://127.0.0.1:{broker.port}"
        await client.connect(url)
        await client.subscribe([("lake/#", 1)])
        body = target(
            "", target_type="mqtt", config={"broker_url": url, "topic": "lake/{device_id}", "qos": 1}
        )
        target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
        await automation.post("/api/devices/lab/metrics", json={"metric": "co2", "value": 640}, headers=auth)
        assert await automation_of(twin.world).outbox.flush() == 1
        msg = await client.deliver_message(timeout_duration=10)
        assert msg.topic == "lake/lab" and json.loads(bytes(msg.data))["value"] == 640
        session = automation_of(twin.world).outbox.links[("push", target_id)].transports["mqtt"].client
        tested = (await automation.post(f"/api/data-push/{target_id}/test", headers=auth)).json()["data"]
        assert tested["success"] is True and tested["log"]["attempts"] == 1
        msg = await client.deliver_message(timeout_duration=10)
        assert json.loads(bytes(msg.data))["test"] is True
        assert (
            automation_of(twin.world).outbox.links[("push", target_id)].transports["mqtt"].client is session
        )  # reused
        entries = await logs(automation, auth, target_id)
        assert [e["status"] for e in entries] == ["success", "success"]
    finally:
        await automation_of(twin.world).outbox.aclose()
        with contextlib.suppress(Exception):
            await client.disconnect()
        await broker.stop()


async def test_test_push_and_crud(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    async with HttpReceiver(statuses=[502]) as lake:
        url = lake.url
        target_id = (await automation.post("/api/data-push", json=target(lake.url), headers=auth)).json()[
            "data"
        ]["id"]
        failed = (await automation.post(f"/api/data-push/{target_id}/test", headers=auth)).json()["data"]
        assert failed["success"] is False and failed["log"]["status"] == "failed"
        assert failed["log"]["error"].startswith("HTTP 502")
        ok = (await automation.post(f"/api/data-push/{target_id}/test", headers=auth)).json()["data"]
        assert ok["success"] is True and lake.requests[-1].json()["test"] is True
    listed = (await automation.get("/api/data-push", headers=auth)).json()["data"]
    assert listed["total"] == 1 and listed["targets"][0]["retry_config"]["backoff_secs"] == 5
    assert listed["targets"][0]["batch_config"] == {
        "batch_size": 1,
        "batch_interval_ms": 2000,
        "format": "flat",
    }
    updated = await automation.put(f"/api/data-push/{target_id}", json={"name": "renamed"}, headers=auth)
    assert updated.json()["data"]["name"] == "renamed" and updated.json()["data"]["config"]["url"] == url
    gone = await automation.delete(f"/api/data-push/{target_id}", headers=auth)
    assert gone.json()["data"] == {"id": target_id, "deleted": True}
    assert (await automation.get(f"/api/data-push/{target_id}", headers=auth)).status_code == 404


@pytest.mark.parametrize(
    ("body", "status"),
    [
        ({"name": "x", "target_type": "webhook"}, 422),
        ({"name": "x", "target_type": "webhook", "config": "http://x"}, 422),
        ({"name": "x", "target_type": "kafka", "config": {"url": "http://127.0.0.1:1/"}}, 400),
        ({"name": "x", "target_type": "webhook", "config": {}}, 400),
        ({"name": "x", "target_type": "webhook", "config": {"url": "ftp://host/x"}}, 400),
        (
            {
                "name": "x",
                "target_type": "webhook",
                "config": {"url": "http://127.0.0.1:9375/api/devices/d1/webhook"},
            },
            400,
        ),
        ({"name": "x", "target_type": "mqtt", "config": {"broker_url": "mqtt://127.0.0.1:1"}}, 400),
        (
            {
                "name": "x",
                "target_type": "webhook",
                "config": {"url": "http://127.0.0.1:1/"},
                "schedule": {"type": "interval"},
            },
            400,
        ),
        (
            {
                "name": "x",
                "target_type": "webhook",
                "config": {"url": "http://127.0.0.1:1/"},
                "batch_config": {"batch_size": 0},
            },
            400,
        ),
    ],
)
async def test_create_validation(
    automation: httpx.AsyncClient, auth: dict[str, str], body: dict, status: int
) -> None:
    resp = await automation.post("/api/data-push", json=body, headers=auth)
    assert resp.status_code == status, resp.text
    assert resp.json()["success"] is False
    assert resp.json()["error"]["code"] == ("VALIDATION_ERROR" if status == 422 else "BAD_REQUEST")


async def test_unknown_ids_and_auth(automation: httpx.AsyncClient, auth: dict[str, str]) -> None:
    for method, path in (
        ("GET", "/api/data-push/nope"),
        ("PUT", "/api/data-push/nope"),
        ("DELETE", "/api/data-push/nope"),
        ("POST", "/api/data-push/nope/test"),
        ("POST", "/api/data-push/nope/start"),
        ("POST", "/api/data-push/nope/stop"),
        ("GET", "/api/data-push/nope/logs"),
    ):
        resp = await automation.request(method, path, json={} if method == "PUT" else None, headers=auth)
        assert resp.status_code == 404 and resp.json()["error"]["code"] == "NOT_FOUND", path
    for method, path in (
        ("GET", "/api/data-push"),
        ("POST", "/api/data-push"),
        ("GET", "/api/data-push/x/logs"),
    ):
        resp = await automation.request(method, path)
        assert resp.status_code == 401 and resp.json()["error"]["code"] == "UNAUTHORIZED", path


async def test_nested_format_and_template(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin
) -> None:
    async with HttpReceiver() as lake:
        nested = target(
            f"{lake.url}/nested", batch_config={"batch_size": 2, "batch_interval_ms": 500, "format": "nested"}
        )
        templated = target(f"{lake.url}/text", template="{{device_id}}.{{metric}}={{value}} @{{timestamp}}")
        for body in (nested, templated):
            assert (await automation.post("/api/data-push", json=body, headers=auth)).status_code == 200
        for metric, value in (("co2", 700), ("temp", 21.5)):
            await automation.post(
                "/api/devices/lab/metrics", json={"metric": metric, "value": value}, headers=auth
            )
        await automation_of(twin.world).outbox.flush()
        by_path: dict[str, list[bytes]] = {}
        for r in lake.requests:
            by_path.setdefault(r.path, []).append(r.body)
    (batch,) = by_path["/nested"]
    assert json.loads(batch) == {
        "devices": {"lab": {"co2": 700, "temp": 21.5}},
        "timestamp": 1767225600.0,
        "count": 2,
    }
    assert sorted(by_path["/text"]) == [b"lab.co2=700 @1767225600", b"lab.temp=21.5 @1767225600"]


async def co2(client: httpx.AsyncClient, auth: dict[str, str], value: int) -> None:
    resp = await client.post("/api/devices/lab/metrics", json={"metric": "co2", "value": value}, headers=auth)
    assert resp.status_code == 200


async def delivery_metrics(client: httpx.AsyncClient, owner_id: str) -> dict[str, str]:
    """This owner's ``neomind_delivery_*`` samples: name (the circuit as ``circuit``) -> value."""
    text = (await client.get("/api/metrics")).text
    out = {}
    for line in text.splitlines():
        if f'owner_id="{owner_id}"' in line and line.startswith("neomind_delivery_"):
            name = line.split("{", 1)[0].removeprefix("neomind_delivery_")
            out[name] = line.rsplit(" ", 1)[1]
            if name == "circuit":
                out[name] = line.split('state="', 1)[1].split('"', 1)[0]
    return out


async def test_a_dead_target_opens_its_circuit_then_delivers_everything_once_back(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin, worker: asyncio.Task
) -> None:
    port = closed_port()
    body = target(f"http://127.0.0.1:{port}/ingest")
    target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
    for value in range(FAILURES_TO_OPEN + 1):
        await co2(automation, auth, value)
    await until(
        lambda: (
            automation_of(twin.world).outbox.stats("push", [target_id])[0].attempts == FAILURES_TO_OPEN + 1
        )
    )
    figures = await delivery_metrics(automation, target_id)
    assert figures["circuit"] == "open" and figures["attempts_total"] == str(FAILURES_TO_OPEN + 1)
    twin.clock.advance(COOL_DOWN_S * (1 - JITTER) - 1)  # every retry came due: none went out
    figures = await delivery_metrics(automation, target_id)
    assert figures["attempts_total"] == str(FAILURES_TO_OPEN + 1)
    assert figures["waiting"] == figures["pending"] == str(FAILURES_TO_OPEN + 1)
    entries = await logs(automation, auth, target_id)
    assert {(e["status"], e["attempts"]) for e in entries} == {("retrying", 1)}
    detail = (await automation.get(f"/api/data-push/{target_id}", headers=auth)).json()["data"]
    assert detail["stats"] == {"pushed": 0, "failed": 0}  # the vendor's shape, unchanged
    async with HttpReceiver(port=port) as lake:
        twin.clock.advance(COOL_DOWN_S * 2 * JITTER + 1)  # half-open: the probe gets through...
        await until(lambda: len(lake.requests) == FAILURES_TO_OPEN + 1)  # ...and releases the rest
        await until(lambda: automation_of(twin.world).outbox.pending() == 0)
    assert sorted(json.loads(r.body)["value"] for r in lake.requests) == list(range(FAILURES_TO_OPEN + 1))
    entries = await logs(automation, auth, target_id)
    assert {(e["status"], e["attempts"]) for e in entries} == {("success", 2)}
    detail = (await automation.get(f"/api/data-push/{target_id}", headers=auth)).json()["data"]
    assert detail["stats"] == {"pushed": FAILURES_TO_OPEN + 1, "failed": 0}
    figures = await delivery_metrics(automation, target_id)
    assert figures["circuit"] == "closed" and figures["delivered_total"] == str(FAILURES_TO_OPEN + 1)


async def test_payloads_given_up_behind_an_open_circuit_are_counted_as_failed(
    automation: httpx.AsyncClient,
    auth: dict[str, str],
    twin: Twin,
    worker: asyncio.Task,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(delivery, "MAX_WAITING", 2)
    body = target(f"http://127.0.0.1:{closed_port()}/ingest")
    target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
    for value in range(FAILURES_TO_OPEN):
        await co2(automation, auth, value)
    await until(lambda: automation_of(twin.world).outbox.stats("push", [target_id])[0].circuit == "open")
    twin.clock.advance(5)  # the retries come due behind the open circuit: two wait, three are given up
    entries = await logs(automation, auth, target_id)
    failed = [e for e in entries if e["status"] == "failed"]
    assert len(failed) == FAILURES_TO_OPEN - 2 and all(e["error"].startswith("Dropped: ") for e in failed)
    assert all(e["completed_at"] is not None and e["attempts"] == 1 for e in failed)
    detail = (await automation.get(f"/api/data-push/{target_id}", headers=auth)).json()["data"]
    assert detail["stats"] == {"pushed": 0, "failed": FAILURES_TO_OPEN - 2}
    stats = (await automation.get("/api/data-push/stats", headers=auth)).json()["data"]
    assert stats["total_failed"] == FAILURES_TO_OPEN - 2
    figures = await delivery_metrics(automation, target_id)
    assert figures["dropped_total"] == figures["failed_total"] == str(FAILURES_TO_OPEN - 2)
    assert figures["waiting"] == "2"


async def test_deleting_a_dead_target_closes_its_link_and_forgets_its_deliveries(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin, worker: asyncio.Task
) -> None:
    body = target(f"http://127.0.0.1:{closed_port()}/ingest")
    target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
    await co2(automation, auth, 1)
    await until(lambda: automation_of(twin.world).outbox.stats("push", [target_id])[0].attempts == 1)
    client = automation_of(twin.world).outbox.links[("push", target_id)].transports["http"].client
    assert (await automation.delete(f"/api/data-push/{target_id}", headers=auth)).status_code == 200
    await until(lambda: client.is_closed)
    assert (
        automation_of(twin.world).outbox.pending() == 0
        and ("push", target_id) not in automation_of(twin.world).outbox.links
    )
    assert "neomind_delivery_" not in (await automation.get("/api/metrics")).text


async def test_a_dead_target_pointed_at_a_working_address_gets_its_backlog_there(
    automation: httpx.AsyncClient, auth: dict[str, str], twin: Twin, worker: asyncio.Task
) -> None:
    body = target(f"http://127.0.0.1:{closed_port()}/ingest")
    target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
    for value in range(FAILURES_TO_OPEN):
        await co2(automation, auth, value)
    await until(lambda: automation_of(twin.world).outbox.stats("push", [target_id])[0].circuit == "open")
    async with HttpReceiver() as lake:
        moved = {"config": {"url": f"{lake.url}/moved"}}
        assert (
            await automation.put(f"/api/data-push/{target_id}", json=moved, headers=auth)
        ).status_code == 200
        assert (
            automation_of(twin.world).outbox.stats("push", [target_id])[0].circuit == "closed"
        )  # a new address
        twin.clock.advance(5)  # the retries come due and go where the target points now
        await until(lambda: automation_of(twin.world).outbox.pending() == 0)
    assert [r.path for r in lake.requests] == ["/moved"] * FAILURES_TO_OPEN
    entries = await logs(automation, auth, target_id)
    assert {(e["status"], e["attempts"]) for e in entries} == {("success", 2)}


async def test_credentials_of_a_target_are_write_only(
    automation: httpx.AsyncClient, auth: dict[str, str]
) -> None:
    """A configured Authorization header (and any other credential) reads back as the vendor's mask;
    sending the mask back in an update keeps the stored value, and the far end still gets the real one."""
    secret = "Bearer s3cr3t-value"
    async with HttpReceiver(statuses=[200]) as lake:
        config = {"url": lake.url, "headers": {"Authorization": secret, "X-Trace": "on"}}
        body = target(lake.url, config=config)
        target_id = (await automation.post("/api/data-push", json=body, headers=auth)).json()["data"]["id"]
        got = await automation.get(f"/api/data-push/{target_id}", headers=auth)
        assert got.json()["data"]["config"]["headers"] == {"Authorization": "*****", "X-Trace": "on"}
        listed = await automation.get("/api/data-push", headers=auth)
        assert "s3cr3t" not in got.text and "s3cr3t" not in listed.text
        echoed = got.json()["data"]["config"]
        updated = await automation.put(
            f"/api/data-push/{target_id}", json={"config": echoed, "name": "renamed"}, headers=auth
        )
        assert "s3cr3t" not in updated.text
        await automation.post(f"/api/data-push/{target_id}/test", headers=auth)
        assert lake.requests[-1].headers["authorization"] == secret
