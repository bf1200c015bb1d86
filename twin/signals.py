"""Procedural signals: a metric's value is a pure, vectorised function of (device key, metric, t).

Random access means a 30-day history costs nothing until asked for, and a whole fleet is
evaluated for one instant as one numpy batch.
"""

from __future__ import annotations

import numpy as np

from twin.fleet import SignalKind, SignalSpec
from twin.rng import hash_normal, hash_uniform

# Counter namespaces for the per-device parameters drawn by hashing (never by consuming a stream).
_P_MEAN, _P_AMP, _P_PHASE = 1, 2, 3
_P_WALK_OFFSET = 16  # + octave: where each octave's knot grid starts for a device
_NOISE_BASE = 1 << 40  # + milliseconds of sim time
_WALK_BASE = 1 << 56  # + (octave << 48) + knot index
_WALK_OCTAVE_SHIFT = 48
WALK_MAX_OCTAVES = 12
WALK_DEFAULT_FINEST = 1 / 1024
"""``random_walk`` without ``step_s`` wanders on scales from ``period / 1024`` up to ``period``."""


def metric_key(device_keys: np.ndarray, metric_index: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return device_keys ^ np.uint64((metric_index + 1) * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF)


def evaluate(spec: SignalSpec, keys: np.ndarray, t: np.ndarray | float, epoch: float) -> np.ndarray:
    """Values of ``spec`` for devices ``keys`` (uint64, shape (n,)) at sim times ``t``.

    ``t`` is a scalar or an array broadcastable against ``keys``; unix time is ``epoch + t``.
    """
    t = np.asarray(t, dtype=np.float64)
    level = 1.0 + spec.spread * (2.0 * hash_uniform(keys, _P_MEAN) - 1.0)
    mean = spec.mean * level
    amp = spec.amplitude * (1.0 + spec.spread * (2.0 * hash_uniform(keys, _P_AMP) - 1.0))
    unix = epoch + t
    if spec.kind is SignalKind.CONSTANT:
        value = mean + 0.0 * unix
    elif spec.kind is SignalKind.SINE:
        phase = 2.0 * np.pi * hash_uniform(keys, _P_PHASE)
        value = mean + amp * np.sin(2.0 * np.pi * unix / spec.period + phase)
    elif spec.kind is SignalKind.DIURNAL:
        # Peak mid-afternoon UTC, trough before dawn; a small per-device phase jitter (±1 h).
        jitter = (2.0 * hash_uniform(keys, _P_PHASE) - 1.0) * 3600.0
        value = mean + amp * np.sin(2.0 * np.pi * ((unix + jitter) % 86_400.0 - 9 * 3600.0) / 86_400.0)
    elif spec.kind is SignalKind.STEP:
        value = step_levels(spec, t) * level
    elif spec.kind is SignalKind.RANDOM_WALK:
        value = mean + amp * wander(spec, keys, t) if spec.amplitude else mean + 0.0 * unix
    else:  # pragma: no cover - exhaustive over SignalKind
        raise ValueError(f"unknown signal kind {spec.kind}")
    if spec.drift_per_day:
        value = value + spec.drift_per_day * t / 86_400.0
    if spec.noise:
        value = value + spec.noise * hash_normal(keys, _NOISE_BASE + np.floor(t * 1000.0).astype(np.int64))
    if spec.lo is not None or spec.hi is not None:
        value = np.clip(value, spec.lo, spec.hi)
    return np.round(value, spec.decimals)


def step_levels(spec: SignalSpec, t: np.ndarray) -> np.ndarray:
    """The ``step`` level at each sim time: ``mean`` before the first step, then each step's level
    from its time on (a binary search over the few step times, so any ``t`` costs the same)."""
    levels = np.array([spec.mean, *(level for _, level in spec.steps)], dtype=np.float64)
    at = np.array([when for when, _ in spec.steps], dtype=np.float64)
    return levels[np.searchsorted(at, t, side="right")]


def walk_scales(spec: SignalSpec) -> np.ndarray:
    """The knot spacings of the ``random_walk`` octaves, finest first, the last one ``period``.

    The finest is ``step_s`` (default ``period / 1024``) rounded to ``period / 2**n``; at most
    :data:`WALK_MAX_OCTAVES` octaves, so a finer ``step_s`` than ``period / 2048`` is coarsened.
    """
    finest = spec.step_s if spec.step_s else spec.period * WALK_DEFAULT_FINEST
    ratio = max(1.0, spec.period / finest)
    octaves = int(min(WALK_MAX_OCTAVES, max(1, round(np.log2(ratio)) + 1)))
    return spec.period / 2.0 ** np.arange(octaves - 1, -1, -1, dtype=np.float64)


def wander(spec: SignalSpec, keys: np.ndarray, t: np.ndarray) -> np.ndarray:
    """A Brownian-like wander with standard deviation about 1 that is still a pure function of t.

    Built as a sum of octaves ``k`` with knot spacing ``s_k`` (see :func:`walk_scales`): each octave
    linearly interpolates standard normal knots hashed from (device key, octave, knot index), on a
    grid shifted per device, and is weighted by ``sqrt(1.5 * s_k / sum(s))``. An octave changes by
    about ``Δ / s_k`` of its weight over a lag ``Δ`` shorter than ``s_k`` and is independent beyond
    it, so the variance of an increment over ``Δ`` grows roughly in proportion to ``Δ`` between the
    finest spacing and ``period``, and stops growing beyond ``period`` (the wander stays bounded,
    unlike a true random walk). Below the finest spacing the path is piecewise linear (increment
    variance grows like ``Δ²``). Cost: two knots per octave per (device, t) at most (see
    :func:`_knots`), no running sum.
    """
    scales = walk_scales(spec)
    weights = np.sqrt(1.5 * scales / scales.sum())
    total = np.zeros(np.broadcast_shapes(np.shape(keys), np.shape(t)), dtype=np.float64)
    for k, (scale, weight) in enumerate(zip(scales.tolist(), weights.tolist(), strict=True)):
        x = (t + hash_uniform(keys, _P_WALK_OFFSET + k) * scale) / scale
        knot = np.floor(x)
        frac = x - knot
        left, right = _knots(keys, _WALK_BASE + (k << _WALK_OCTAVE_SHIFT), knot.astype(np.int64))
        total += weight * (left + frac * (right - left))
    return total


def _knots(keys: np.ndarray, base: int, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The knots left and right of each point: ``hash_normal(keys, base + index)`` and ``+ 1``.

    When many times share a device (a block of ticks, one device's history) the knots they touch
    are few: each device's knots from its lowest to its highest index are hashed once into a table
    and gathered, with the same values as hashing every point (the same hash of the same inputs).
    """
    keys = np.asarray(keys)
    padded = np.shape(keys) if keys.ndim == index.ndim else (1,) * (index.ndim - keys.ndim) + np.shape(keys)
    t_axes = tuple(a for a, (kn, n) in enumerate(zip(padded, index.shape, strict=True)) if kn == 1 and n > 1)
    if t_axes:
        lo = index.min(axis=t_axes, keepdims=True)
        width = int((index.max(axis=t_axes, keepdims=True) - lo).max()) + 2
        if width * lo.size < index.size:
            offsets = np.arange(width, dtype=np.int64).reshape((width,) + (1,) * index.ndim)
            table = hash_normal(keys.reshape(padded), base + lo[None] + offsets)
            pos = (index - lo)[None]
            return (
                np.take_along_axis(table, pos, axis=0)[0],
                np.take_along_axis(table, pos + 1, axis=0)[0],
            )
    return hash_normal(keys, base + index), hash_normal(keys, base + index + 1)
