"""The event-loop probe: its bookkeeping on a fake clock, and the control plane's /loop routes."""

from __future__ import annotations

import asyncio

import httpx

from twin.loopwatch import LoopWatch


class FakeWall:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


def test_the_longest_block_its_cpu_and_the_counts_past_each_threshold() -> None:
    wall = FakeWall()
    watch = LoopWatch(wall=wall, cpu=lambda: 0.0)
    for late, cpu in ((0.001, 0.0005), (0.030, 0.012), (0.006, 0.006), (0.150, 0.001)):
        wall.t += 1.0
        watch.note(late, cpu)
    figures = watch.figures()
    assert figures["longest_block_ms"] == 150.0 and figures["longest_at_s"] == 4.0
    assert figures["longest_cpu_ms"] == 12.0
    assert figures["blocks_over_ms"] == {"5": 3, "20": 2, "100": 1}
    assert figures["wakeups"] == 4 and figures["watching"] is False
    watch.reset()
    assert watch.figures()["longest_block_ms"] == 0.0 and watch.figures()["blocks_over_ms"]["5"] == 0


async def test_the_probe_runs_once_started_and_stops() -> None:
    watch = LoopWatch()
    watch.start()
    for _ in range(200):
        if watch.wakeups >= 3:
            break
        await asyncio.sleep(0.01)
    assert watch.figures()["watching"] is True and watch.wakeups >= 3
    task = watch.task
    watch.stop()
    assert watch.task is None and task is not None
    await asyncio.sleep(0)
    assert task.cancelled() or task.done()


async def test_the_control_plane_starts_and_reads_the_probe(twin, control: httpx.AsyncClient) -> None:
    assert (await control.get("/loop")).json()["watching"] is False  # nothing runs until asked
    started = await control.post("/loop/reset")
    assert started.status_code == 200 and started.json()["watching"] is True
    assert started.json()["wakeups"] == 0
    figures = (await control.get("/loop")).json()
    assert set(figures) >= {"longest_block_ms", "longest_cpu_ms", "blocks_over_ms", "wakeups", "seconds"}
    twin.control_app.state.loop_watch.stop()


async def test_a_control_plane_without_a_probe_says_so(twin, control: httpx.AsyncClient) -> None:
    del twin.control_app.state.loop_watch
    assert (await control.get("/loop")).json() == {"watching": False}
    refused = await control.post("/loop/reset")
    assert refused.status_code == 404 and refused.json()["error"]["code"] == "not_found"
