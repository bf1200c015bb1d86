"""Remote instances: other backends the web app can switch to, and their health probe.

Durable records, as the server keeps them: the local instance (``local-default``, ``Local``,
``http://localhost:9375``, never deleted) is there from the first start; a remote one gets the id
``inst_`` + 8 hex digits. The probe is a real HTTP ``GET <url>/api/health`` (10 s timeout, the
instance's key in ``X-API-Key``), refused for the addresses the server refuses (localhost,
127.0.0.1, [::1], 0.0.0.0 and the cloud metadata address) in every spelling, after resolution and
at every redirect, and the key never goes to another host than the instance's (see
:mod:`twin.automation.outbound`); its outcome becomes the instance's
``last_status`` and ``last_checked_at`` (world time). Its latency is the real exchange's, in wall
milliseconds: a measurement the world never uses.
"""

from __future__ import annotations

import time
import uuid
from typing import TYPE_CHECKING, Any

from hardware.ports.automations import Instance, InstanceProbe
from hardware.ports.errors import InvalidInput, NotFound
from twin.automation import outbound

if TYPE_CHECKING:
    from twin.engine import Engine

LOCAL_ID = "local-default"
PROBE_TIMEOUT_S = 10.0
BLOCKED = ("//localhost", "//127.0.0.1", "//[::1]", "//0.0.0.0", "169.254.169.254")
"""The vendor's own check, on the URL's text; then every address the host resolves to is checked
against :data:`FENCE` (:mod:`twin.automation.outbound`), at each redirect too."""
FENCE = outbound.INSTANCE_FENCE


def _instance(doc: dict[str, Any]) -> Instance:
    return Instance(**{k: doc[k] for k in Instance.__slots__})


def _check(doc: dict[str, Any]) -> None:
    if not doc["name"]:
        raise InvalidInput("Name cannot be empty", resource="instance")
    if not doc["url"]:
        raise InvalidInput("URL cannot be empty", resource="instance")
    if not doc["url"].startswith(("http://", "https://")):
        raise InvalidInput("URL must start with http:// or https://", resource="instance")


class InstanceRegistry:
    def __init__(self, world: Engine) -> None:
        self.world = world
        self.docs = world.store.collection("instances")
        if self.docs.get(LOCAL_ID) is None:
            now = int(world.now())
            self.docs.put(
                LOCAL_ID,
                {
                    "id": LOCAL_ID,
                    "name": "Local",
                    "url": "http://localhost:9375",
                    "api_key": None,
                    "is_local": True,
                    "last_status": "online",
                    "last_checked_at": now,
                    "created_at": now,
                },
            )

    def _doc(self, instance_id: str) -> dict[str, Any]:
        doc = self.docs.get(instance_id)
        if doc is None:
            raise NotFound(f"Instance {instance_id} not found", resource="instance")
        return doc

    def list_instances(self) -> list[Instance]:
        return self.docs.values_as(_instance)

    def get_instance(self, instance_id: str) -> Instance:
        return _instance(self._doc(instance_id))

    def create_instance(self, name: str, url: str, api_key: str | None) -> Instance:
        key = self.world.streams.get("automation.instances").bytes(16)
        doc: dict[str, Any] = {
            "id": f"inst_{uuid.UUID(bytes=key, version=4).hex[:8]}",
            "name": name,
            "url": url,
            "api_key": api_key,
            "is_local": False,
            "last_status": "unknown",
            "last_checked_at": None,
            "created_at": int(self.world.now()),
        }
        _check(doc)
        self.docs.put(doc["id"], doc)
        return _instance(doc)

    def update_instance(
        self, instance_id: str, name: str | None, url: str | None, api_key: str | None
    ) -> Instance:
        doc = dict(self._doc(instance_id))
        if name is not None:
            doc["name"] = name
        if url is not None:
            doc["url"] = url
        if api_key is not None:
            doc["api_key"] = api_key or None
        _check(doc)
        self.docs.put(instance_id, doc)
        return _instance(doc)

    def delete_instance(self, instance_id: str) -> None:
        if instance_id == LOCAL_ID:
            raise InvalidInput("Invalid input: Cannot delete the local instance", resource="instance")
        self.docs.delete(instance_id)

    async def test_instance(self, instance_id: str) -> InstanceProbe:
        doc = self._doc(instance_id)
        url = doc["url"].lower()
        for target in BLOCKED:
            if target in url:
                raise _blocked(target)
        health = f"{doc['url'].rstrip('/')}/api/health"
        headers = {"X-API-Key": doc["api_key"]} if doc.get("api_key") is not None else {}
        started = time.perf_counter()
        try:
            answer = await outbound.request(
                "GET", health, FENCE, headers=headers, credentials=headers, timeout=PROBE_TIMEOUT_S
            )
        except outbound.Blocked as err:
            if err.hop == 0:  # any spelling of a refused address: refused as the vendor refuses it
                raise _blocked(str(err.address)) from None
            # A redirect towards one: not followed, and the key went nowhere but the instance's host.
            probe = InstanceProbe(
                False, _ms_since(started), "offline", f"error following redirect for url ({health})"
            )
        except outbound.Unreachable as err:
            error = "builder error" if err.args[0].startswith("builder error") else None
            probe = InstanceProbe(
                False, _ms_since(started), "offline", error or f"error sending request for url ({health})"
            )
        else:
            ok = 200 <= answer.status < 300
            error = None if ok else f"HTTP {answer.status}"
            probe = InstanceProbe(ok, _ms_since(started), "online" if ok else "offline", error)
        self._checked(instance_id, probe.status)
        return probe

    def _checked(self, instance_id: str, status: str) -> None:
        doc = self.docs.get(instance_id)  # it may have gone while the probe waited
        if doc is not None:
            self.docs.put(
                instance_id, {**doc, "last_status": status, "last_checked_at": int(self.world.now())}
            )


def _blocked(target: str) -> InvalidInput:
    return InvalidInput(
        f"Instance URL targets a blocked address ({target}). Use the local API for localhost instances.",
        resource="instance",
    )


def _ms_since(started: float) -> int:
    # Wall time of a real HTTP exchange: reported, never used by the world.
    return round((time.perf_counter() - started) * 1000)
