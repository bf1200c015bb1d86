"""Per-entity random streams derived from (seed, entity id).

Adding an entity never changes another's numbers, because each stream's seed depends only on the
world seed and that entity's id. Counter-based hashing (``hash_uniform``) gives random access:
the value for (key, t) is computed without drawing every earlier value.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np
import numpy.typing as npt


def stream_key(seed: int, entity_id: str) -> int:
    """A stable 64-bit key for (seed, entity id); independent of Python's hash randomisation."""
    digest = hashlib.blake2b(f"{seed}\x00{entity_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


class Streams:
    """The world's random streams: ``streams.get("sensor-0001")`` is that entity's own generator.

    ``generation`` counts the earlier runs on the same durable state: the generators (which mint
    the ids of what clients create) start elsewhere in each run, so a run after a restart never
    draws the ids the runs before it stored. ``key`` (an entity's fixed identity: its sensor
    noise, scene, optics) is the same in every run. Generation 0 is a fresh world.
    """

    def __init__(self, seed: int, generation: int = 0) -> None:
        self.seed = seed
        self.generation = generation
        self._streams: dict[str, np.random.Generator] = {}

    def get(self, entity_id: str) -> np.random.Generator:
        gen = self._streams.get(entity_id)
        if gen is None:
            name = f"{entity_id}\x00run{self.generation}" if self.generation else entity_id
            gen = np.random.Generator(np.random.PCG64(stream_key(self.seed, name)))
            self._streams[entity_id] = gen
        return gen

    def key(self, entity_id: str) -> int:
        return stream_key(self.seed, entity_id)

    def state(self) -> dict[str, Mapping[str, Any]]:
        return {eid: gen.bit_generator.state for eid, gen in self._streams.items()}

    def set_state(self, state: Mapping[str, Mapping[str, Any]]) -> None:
        for eid, st in state.items():
            self.get(eid).bit_generator.state = st


_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def hash_uniform(keys: npt.ArrayLike, counters: npt.ArrayLike) -> np.ndarray:
    """Uniform floats in [0, 1) from splitmix64 of (key, counter), vectorised over both."""
    k = np.asarray(keys, dtype=np.uint64)
    c = np.asarray(counters, dtype=np.int64).astype(np.uint64)
    with np.errstate(over="ignore"):
        z = k + (c + np.uint64(1)) * _GOLDEN
        z = (z ^ (z >> np.uint64(30))) * _M1
        z = (z ^ (z >> np.uint64(27))) * _M2
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * (1.0 / 9007199254740992.0)


def hash_normal(keys: npt.ArrayLike, counters: npt.ArrayLike) -> np.ndarray:
    """Standard normal floats from two hashed uniforms (Box-Muller), random access like ``hash_uniform``."""
    c = np.asarray(counters, dtype=np.int64)
    u1 = hash_uniform(keys, c * 2)
    u2 = hash_uniform(keys, c * 2 + 1)
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)
