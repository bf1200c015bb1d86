"""The clock driver: step mode, realtime with a speed factor (on a fake wall clock), waits."""

from __future__ import annotations

import asyncio

import pytest

from hardware.ports.errors import InvalidInput, Unavailable
from hardware.ports.types import ClockMode
from twin.clock import Anchor, SimClock
from twin.world import World


class FakeWall:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def test_step_mode_moves_only_when_told(world: World) -> None:
    wall = FakeWall()
    clock = SimClock(world, mode=ClockMode.STEP, wall=wall)
    wall.t += 100
    clock.tick()
    assert world.env.now == 0
    clock.advance(3600)
    assert world.env.now == 3600
    assert clock.now() == world.epoch + 3600
    clock.run_to(4000)
    assert world.env.now == 4000


def test_realtime_speed_60_moves_a_minute_per_wall_second(world: World) -> None:
    wall = FakeWall()
    clock = SimClock(world, mode=ClockMode.REALTIME, speed=60, wall=wall)
    for _ in range(100):
        wall.t += 0.01
        clock.tick()
    assert world.env.now == pytest.approx(60.0)


def test_pause_freezes_time_and_resume_does_not_jump(world: World) -> None:
    wall = FakeWall()
    clock = SimClock(world, speed=2, wall=wall)
    wall.t += 1
    clock.tick()
    clock.pause()
    wall.t += 50
    clock.tick()
    assert world.env.now == pytest.approx(2)
    clock.resume()
    wall.t += 1
    clock.tick()
    assert world.env.now == pytest.approx(4)


def test_speed_change_keeps_time_continuous(world: World) -> None:
    wall = FakeWall()
    clock = SimClock(world, speed=1, wall=wall)
    wall.t += 10
    clock.tick()
    clock.set_speed(10)
    wall.t += 1
    clock.tick()
    assert world.env.now == pytest.approx(20)


@pytest.mark.parametrize("bad", [0, -1])
def test_bad_speed_is_refused(world: World, bad: float) -> None:
    with pytest.raises(InvalidInput):
        SimClock(world, mode=ClockMode.STEP).set_speed(bad)


def test_going_back_in_time_is_refused(world: World) -> None:
    clock = SimClock(world, mode=ClockMode.STEP)
    clock.advance(10)
    with pytest.raises(InvalidInput):
        clock.run_to(5)
    with pytest.raises(InvalidInput):
        clock.advance(-1)


async def test_many_waiters_finish_after_one_advance(world: World) -> None:
    clock = SimClock(world, mode=ClockMode.STEP)
    done: list[float] = []

    async def waiter() -> None:
        await clock.sleep(5)
        done.append(world.env.now)

    tasks = [asyncio.create_task(waiter()) for _ in range(100)]
    await asyncio.sleep(0)
    assert done == []
    clock.advance(5)
    await asyncio.gather(*tasks)
    assert done == [5.0] * 100


async def test_wait_returns_the_event_value(world: World) -> None:
    clock = SimClock(world, mode=ClockMode.STEP)
    event = world.env.timeout(2, value="moved")
    task = asyncio.create_task(clock.wait(event))
    await asyncio.sleep(0)
    clock.advance(2)
    assert await task == "moved"


async def test_background_waits_do_not_count_as_waiting(world: World) -> None:
    """A stream's keep-alive must not make a step-mode runner move time; a request's wait does."""
    clock = SimClock(world, mode=ClockMode.STEP)
    keepalive = asyncio.create_task(clock.sleep(30, background=True))
    await asyncio.sleep(0)
    assert not clock.waiting
    request = asyncio.create_task(clock.sleep(5))
    await asyncio.sleep(0)
    assert clock.waiting
    clock.advance(5)
    await request
    assert not clock.waiting and not keepalive.done()
    world.reset()
    clock.rebased()
    with pytest.raises(Unavailable):
        await keepalive  # a reset fails background waits too


async def test_reset_fails_pending_waiters(world: World) -> None:
    clock = SimClock(world, mode=ClockMode.STEP)
    task = asyncio.create_task(clock.sleep(5))
    await asyncio.sleep(0)
    world.reset()
    clock.rebased()
    with pytest.raises(Unavailable):
        await task


async def test_a_crashing_process_does_not_stop_the_clock(world: World) -> None:
    def boom(env):
        yield env.timeout(1)
        raise RuntimeError("model bug")

    world.env.process(boom(world.env))
    clock = SimClock(world, mode=ClockMode.STEP)
    clock.advance(10)
    assert world.env.now == 10
    assert clock.errors == 1


def test_a_shared_anchor_takes_over_at_its_wall_time(world: World) -> None:
    wall = FakeWall()
    clock = SimClock(world, mode=ClockMode.STEP, wall=wall)
    clock.follow(Anchor(sim_at=0.0, wall_at=wall.t + 0.05, speed=10, paused=False))
    clock.tick()
    assert world.env.now == 0 and clock.mode is ClockMode.STEP  # not yet: still where it was
    wall.t += 0.05 + 2.0
    clock.tick()
    assert clock.mode is ClockMode.REALTIME
    assert world.env.now == pytest.approx(20.0)


def test_a_paused_anchor_stops_every_follower_at_the_same_sim_time(world: World) -> None:
    wall = FakeWall()
    clock = SimClock(world, mode=ClockMode.REALTIME, speed=1, wall=wall)
    first = Anchor(sim_at=0.0, wall_at=wall.t, speed=4, paused=False)
    clock.follow(first)
    wall.t += 1.0
    clock.tick()  # on the first anchor: 4 s
    pause_at = wall.t + 0.5
    clock.follow(Anchor(sim_at=first.sim_time(pause_at), wall_at=pause_at, speed=4, paused=True))
    wall.t += 0.3
    clock.tick()
    assert world.env.now == pytest.approx(5.2)  # the old course until the pause's wall time
    wall.t += 5
    clock.tick()
    assert world.env.now == 6.0 and clock.paused  # exactly the anchor's sim time, then held
    resume_at = wall.t + 0.05
    clock.follow(Anchor(sim_at=6.0, wall_at=resume_at, speed=10, paused=False))
    wall.t = resume_at + 1.0
    clock.tick()
    assert world.env.now == pytest.approx(16.0) and clock.speed == 10 and not clock.paused


def test_an_anchor_with_no_speed_is_refused(world: World) -> None:
    clock = SimClock(world, wall=FakeWall())
    with pytest.raises(InvalidInput):
        clock.follow(Anchor(0.0, 0.0, 0.0, False))
