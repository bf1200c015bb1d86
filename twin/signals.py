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
_NOISE_BASE = 1 << 40


def metric_key(device_keys: np.ndarray, metric_index: int) -> np.ndarray:
    with np.errstate(over="ignore"):
        return device_keys ^ np.uint64((metric_index + 1) * 0x9E3779B97F4A7C15 & 0xFFFFFFFFFFFFFFFF)


def evaluate(spec: SignalSpec, keys: np.ndarray, t: np.ndarray | float, epoch: float) -> np.ndarray:
    """Values of ``spec`` for devices ``keys`` (uint64, shape (n,)) at sim times ``t``.

    ``t`` is a scalar or an array broadcastable against ``keys``; unix time is ``epoch + t``.
    """
    t = np.asarray(t, dtype=np.float64)
    mean = spec.mean * (1.0 + spec.spread * (2.0 * hash_uniform(keys, _P_MEAN) - 1.0))
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
    else:  # pragma: no cover - exhaustive over SignalKind
        raise ValueError(f"unknown signal kind {spec.kind}")
    if spec.drift_per_day:
        value = value + spec.drift_per_day * t / 86_400.0
    if spec.noise:
        value = value + spec.noise * hash_normal(keys, _NOISE_BASE + np.floor(t * 1000.0).astype(np.int64))
    if spec.lo is not None or spec.hi is not None:
        value = np.clip(value, spec.lo, spec.hi)
    return np.round(value, spec.decimals)
