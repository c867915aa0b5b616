"""What the call-time NaN check costs: a compiled step with and without its finite flag.

Usage::

    .venv/bin/python -m benchmarks.overhead.finite_check [--batch 32] [--length 64] [--repeats 200]

A step of the tests' toy model (hashed ids, one layer of 4 heads of 8 over the
``native`` reference attention, mean pooled) is compiled twice: returning its
outputs alone, and returning them with ``jnp.isfinite(outputs).all()`` beside them,
as :class:`seamline.core.attention.steps.CompiledSteps` compiles every step. Calls
alternate between the two (outputs fetched to NumPy; with the flag, both in one
``jax.device_get``, the flag read as a bool, as the step's caller does), and
the medians and their difference are printed. The toy model's compute is tiny, so
the difference is an upper bound on the check's share of a real model's step.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from seamline.contracts import SegmentIds
from seamline.contracts.kernel_kit import reference_attention


def toy_apply(params: Any, arrays: dict[str, jax.Array]) -> jax.Array:
    x = jnp.take(params["table"], arrays["ids"], axis=0)
    b, t, _ = x.shape
    heads = x.reshape(b, t, 4, 8)
    seg = arrays["mask"]
    out = reference_attention(heads, heads, heads, segment_ids=SegmentIds(seg, seg))
    weights = seg[..., None].astype(jnp.float32)
    return (out.reshape(b, t, 32) * weights).sum(1) / jnp.maximum(weights.sum(1), 1.0)


def flagged(params: Any, arrays: dict[str, jax.Array]) -> tuple[jax.Array, jax.Array]:
    outputs = toy_apply(params, arrays)
    return outputs, jnp.isfinite(outputs).all()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=200)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    params = {"table": jnp.asarray(rng.normal(size=(97, 32)), jnp.float32)}
    arrays = {
        "ids": jnp.asarray(rng.integers(0, 97, (args.batch, args.length)), jnp.int32),
        "mask": jnp.ones((args.batch, args.length), jnp.int32),
    }
    plain = jax.jit(toy_apply).lower(params, arrays).compile()
    checked = jax.jit(flagged).lower(params, arrays).compile()

    def call_plain() -> None:
        np.asarray(plain(params, arrays))

    def call_checked() -> None:
        outputs, finite = jax.device_get(checked(params, arrays))  # one fetch, as steps.py
        np.asarray(outputs)
        assert bool(finite)

    calls: dict[str, Callable[[], None]] = {"plain": call_plain, "checked": call_checked}
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(10):  # warm up
        for call in calls.values():
            call()
    for _ in range(args.repeats):
        for name, call in calls.items():
            started = time.perf_counter()
            call()
            times[name].append(time.perf_counter() - started)
    median = {name: statistics.median(values) * 1e6 for name, values in times.items()}
    extra = median["checked"] - median["plain"]
    print(
        f"toy step {args.batch}x{args.length} on {jax.devices()[0].platform}: "
        f"plain {median['plain']:.1f} us, with the finite flag {median['checked']:.1f} us: "
        f"{extra:+.1f} us ({extra / median['plain']:+.1%}), median of {args.repeats}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
