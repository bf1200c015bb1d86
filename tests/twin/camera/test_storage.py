"""Partition byte accounting: charge, release, free by owner, full partitions."""

from __future__ import annotations

import pytest

from hardware.ports.errors import StorageFull
from twin.camera.storage import DATA, ROOT, Storage
from twin.camera.wing import cameras_of
from twin.world import World


@pytest.fixture
def storage(world: World) -> Storage:
    return cameras_of(world)["cam-01"].storage


def test_layout_matches_the_device(storage: Storage) -> None:
    usage = {p.name: p for p in storage.usage()}
    assert usage[ROOT].mountpoint == "/" and usage[ROOT].is_system
    assert 3.2e9 < usage[ROOT].total < 3.4e9
    assert 52e9 < usage[DATA].total < 54e9
    assert 0 < usage[ROOT].used < usage[ROOT].total
    assert usage[DATA].free == usage[DATA].total - usage[DATA].used


def test_charge_and_free_by_owner(storage: Storage) -> None:
    before = storage.used(DATA)
    storage.charge(DATA, "image:a", 500_000_000)
    storage.charge(ROOT, "image:a", 1_000)
    storage.charge(DATA, "image:b", 7)
    assert storage.used(DATA) == before + 500_000_007
    assert storage.held("image:a") == 500_001_000
    assert storage.free("image:a") == 500_001_000
    assert storage.used(DATA) == before + 7
    assert storage.free("image:a") == 0


def test_partial_release(storage: Storage) -> None:
    storage.charge(DATA, "log", 100)
    assert storage.release(DATA, "log", 30) == 30
    assert storage.held("log", DATA) == 70
    assert storage.release(DATA, "log", 1_000) == 70
    assert storage.owners(DATA) == {}


def test_a_write_that_does_not_fit_raises_and_changes_nothing(storage: Storage) -> None:
    before = storage.used(ROOT)
    with pytest.raises(StorageFull) as err:
        storage.charge(ROOT, "big", storage.free_bytes(ROOT) + 1)
    assert err.value.details["partition"] == ROOT
    assert storage.used(ROOT) == before
    assert storage.held("big") == 0


def test_fill_leaves_root_full_until_logs_are_deleted(storage: Storage) -> None:
    taken = storage.fill(ROOT, "coredump")
    assert taken > 0 and storage.free_bytes(ROOT) == 0
    with pytest.raises(StorageFull):
        storage.charge(ROOT, "upload", 1)
    assert storage.free_prefix("core") == taken
    storage.charge(ROOT, "upload", 1)


def test_path_to_partition(storage: Storage) -> None:
    assert storage.partition_for("/data/aipc/x") == DATA
    assert storage.partition_for("/data") == DATA
    assert storage.partition_for("/database") == ROOT
    assert storage.partition_for("/var/log/syslog") == ROOT
    assert storage.charge_path("/data/x", "f", 10) == DATA


def test_state_round_trip(storage: Storage, world: World) -> None:
    storage.charge(DATA, "x", 123)
    state = storage.state()
    other = Storage(world, "cam-01")
    other.set_state(state)
    assert other.used(DATA) == storage.used(DATA)
    assert other.held("x") == 123
