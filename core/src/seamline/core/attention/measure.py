"""Timing attention candidates on the exact shapes of a model call.

``select: measure`` picks, per shape signature, the fastest candidate that
serves it. Each candidate is timed alone, jitted behind its choke point
(:class:`~.checked.CheckedAttention`), on random inputs of exactly the specs the
model's call makes (:func:`~.verification.probe`): one warm-up call (which also
compiles), then up to :data:`REPEATS` timed calls, each to ``block_until_ready``,
stopping early once :data:`BUDGET_SECONDS` are spent (at least two timed calls).
The median is what counts; the fastest and slowest are kept to show the spread.
A median far above the fastest call (:func:`unsteady`) says the calls were slowed by
something else, as when other processes compete for the CPU: such timings rank this
run's candidates but are not kept in the tuning cache (3 runs at once saved ``native``
at 2.1, 4.5 and 2.4 ms, and a multi-threaded kernel 5x faster than it ranked fourth).
Self-attention probes pass one segment-id array for queries and keys, as a model
does, so kernels with a fast path for that case are timed on it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import jax

from seamline.contracts import Attention, AttentionSpec, SegmentIds
from seamline.core.attention.checked import CheckedAttention
from seamline.core.attention.verification import probe, probe_bias

REPEATS = 5
"""Timed calls per spec, at most."""
BUDGET_SECONDS = 2.0
"""Past this much timing per spec, stop repeating (long sequences take seconds a call)."""
UNSTEADY_RATIO = 2.0
"""A median this many times the fastest call is one slowed by contention, not the kernel:
at most half the calls may be slower than this and the median still steady."""
UNSTEADY_FLOOR = 50e-6
"""Seconds a median may exceed the fastest call by whatever the ratio (a call of a few
microseconds doubles on a timer's or a dispatch's jitter alone)."""


@dataclass(frozen=True, slots=True)
class Timing:
    """How long one candidate took for one model call's attention (summed over its specs)."""

    median: float
    fastest: float
    slowest: float
    calls: int
    """Timed calls per spec (the smallest over the specs)."""


def time_candidate(attention: Attention[Any], specs: Sequence[AttentionSpec]) -> Timing:
    """Time ``attention`` on a probe of every spec; the sums of the per-spec statistics."""
    medians, fastest, slowest, calls = [], [], [], []
    for spec in specs:
        seconds = _time_spec(attention, spec)
        medians.append(statistics.median(seconds))
        fastest.append(min(seconds))
        slowest.append(max(seconds))
        calls.append(len(seconds))
    return Timing(sum(medians), sum(fastest), sum(slowest), min(calls))


def unsteady(timing: Timing) -> bool:
    """Whether the calls of ``timing`` varied too much to be kept: its median more than
    :data:`UNSTEADY_RATIO` times its fastest call, and by more than :data:`UNSTEADY_FLOOR`."""
    slower = timing.median - timing.fastest
    return timing.median > UNSTEADY_RATIO * timing.fastest and slower > UNSTEADY_FLOOR


def _time_spec(attention: Attention[Any], spec: AttentionSpec) -> list[float]:
    q, k, v, segments = probe(spec)
    bias = probe_bias(spec, segments)
    checked = CheckedAttention(attention)
    shared = segments is not None and spec.q_len == spec.kv_len

    def call(q: jax.Array, k: jax.Array, v: jax.Array, *ids: jax.Array) -> jax.Array:
        if not ids:
            segment_ids = None
        elif shared:
            segment_ids = SegmentIds(ids[0], ids[0])  # one array, as self-attention has
        else:
            segment_ids = SegmentIds(ids[0], ids[1])
        return checked(q, k, v, segment_ids=segment_ids, causal=spec.causal, bias=bias)

    ids: tuple[jax.Array, ...] = ()
    if segments is not None:
        ids = (segments.q,) if shared else (segments.q, segments.kv)
    compiled = jax.jit(call)
    jax.block_until_ready(compiled(q, k, v, *ids))  # compile and warm up
    seconds: list[float] = []
    spent = 0.0
    while len(seconds) < REPEATS and (len(seconds) < 2 or spent < BUDGET_SECONDS):
        started = time.perf_counter()
        jax.block_until_ready(compiled(q, k, v, *ids))
        seconds.append(time.perf_counter() - started)
        spent += seconds[-1]
    return seconds
