"""The attention benchmark's child processes: one measurement, or the probe of the registry.

The driver starts each as ``python -m seamline.adapters.bench_attention.worker ...`` in
a fresh process, so that its peak memory is that of one (implementation, length)
and a crash or an out-of-memory kill costs one cell, not the sweep:

* ``measure IMPL LENGTH`` builds the inputs on the device, lowers and compiles the
  jitted attention ahead of time, warms it up, times ``--repeats`` calls, reads the
  peak memory, and then checks a few output rows against float64 NumPy;
  ``measure baseline LENGTH`` does everything but the attention, for the memory baseline;
* ``probe --lengths ...`` lists the registry's attention entries and each one's
  ``supports()`` answer for every length.

Each prints exactly one JSON line on stdout (the protocol); anything else a library
prints goes to stderr, which the driver keeps as the worker's log.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import inspect
import json
import platform
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any

from seamline.adapters.bench_attention.workload import (
    BATCH,
    CHECK_TOLERANCE,
    DEFAULT_DTYPE,
    DTYPES,
    GIB,
    HEAD_DIM,
    HEADS,
    REFERENCE_IMPLEMENTATION,
    ROOT,
    SEED,
    padding_of,
)
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.memory import peak_rss_bytes
from seamline.adapters.measure.protocol import protocol_stream, send
from seamline.adapters.measure.repeats import spread

BASELINE = "baseline"
"""The pseudo-implementation that measures everything but the attention."""
MEASURED_DISTRIBUTIONS = (
    "jax",
    "jaxlib",
    "numpy",
    "seamline-contracts",
    "seamline-core",
    "seamline-components",
)


def measured_versions() -> dict[str, str]:
    """Python and the installed versions of what a measurement depends on."""
    return {"python": platform.python_version(), **versions(*MEASURED_DISTRIBUTIONS)}


def source_of(cls: type) -> dict[str, Any]:
    """Which code was measured: the implementation's module file, its sha256 and mtime.

    The sweep takes minutes and the kernels may be edited meanwhile; the JSON must say
    which version each cell measured.
    """
    try:
        path = Path(inspect.getfile(cls))
        data = path.read_bytes()
    except (OSError, TypeError):
        return {}
    modified = datetime.datetime.fromtimestamp(path.stat().st_mtime, datetime.UTC)
    return {
        "file": str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path),
        "sha256": hashlib.sha256(data).hexdigest()[:16],
        "modified": modified.strftime("%Y-%m-%d %H:%M:%S UTC"),
    }


def attention_spec(
    length: int, causal: bool, masked: bool = True, dtype: str = DEFAULT_DTYPE
) -> Any:
    """The :class:`AttentionSpec` of the workload at ``length`` in ``dtype`` on this
    process's device: what ``supports()`` is asked (cudnn refuses float32, for one)."""
    import jax

    from seamline.contracts import AttentionSpec

    device = jax.devices()[0]
    return AttentionSpec(
        batch=BATCH,
        q_len=length,
        kv_len=length,
        num_heads=HEADS,
        num_kv_heads=HEADS,
        head_dim=HEAD_DIM,
        dtype=dtype,
        causal=causal,
        segmented=masked,
        platform=device.platform,
        device_kind=device.device_kind,
    )


def make_inputs(
    length: int, masked: bool = True, dtype: str = DEFAULT_DTYPE
) -> tuple[Any, Any, Any, Any]:
    """q, k, v ``[1, T, 12, 64]`` in ``dtype`` on the device, and ``[1, T]`` segment ids
    (all one segment without a mask: then only the reference check reads them).

    The same float32 draws whatever the dtype, cast on the device: a bfloat16 sweep
    measures the float32 sweep's inputs, rounded.
    """
    import jax
    import numpy as np

    rng = np.random.default_rng(SEED)
    shape = (BATCH, length, HEADS, HEAD_DIM)
    drawn = (jax.device_put(rng.standard_normal(shape, dtype=np.float32)) for _ in range(3))
    q, k, v = (x if str(x.dtype) == dtype else x.astype(dtype) for x in drawn)
    ids = np.ones((BATCH, length), np.int32)
    if masked:
        ids[:, length - padding_of(length) :] = 0
    segments = jax.device_put(ids)
    for array in (q, k, v, segments):
        array.block_until_ready()
    return q, k, v, segments


def memory_analysis(compiled: Any) -> dict[str, int] | None:
    """XLA's own view of the executable's buffers, where the backend implements it."""
    try:
        stats = compiled.memory_analysis()
    except Exception:  # not every backend implements it
        return None
    if stats is None:
        return None
    fields = (
        "temp_size_in_bytes",
        "argument_size_in_bytes",
        "output_size_in_bytes",
        "alias_size_in_bytes",
        "generated_code_size_in_bytes",
        "peak_memory_in_bytes",
        "host_temp_size_in_bytes",
    )
    return {f: int(getattr(stats, f)) for f in fields if isinstance(getattr(stats, f, None), int)}


def device_peak_bytes() -> int | None:
    """The accelerator's own peak (GPU/TPU); None on the CPU, where RSS says it all."""
    import jax

    try:
        stats = jax.devices()[0].memory_stats()
    except Exception:
        return None
    if not stats:
        return None
    peak = stats.get("peak_bytes_in_use")
    return int(peak) if peak is not None else None


def reference_rows(q: Any, k: Any, v: Any, ids: Any, rows: list[int], causal: bool) -> Any:
    """Attention for a few query rows in float64 NumPy: a reference independent of ``native``."""
    import numpy as np

    q_np, k_np, v_np = (np.asarray(x)[0] for x in (q, k, v))
    seg = np.asarray(ids)[0]
    out = np.zeros((len(rows), HEADS, HEAD_DIM))
    positions = np.arange(seg.shape[0])
    for h in range(HEADS):
        keys = k_np[:, h, :].astype(np.float64)
        values = v_np[:, h, :].astype(np.float64)
        for r, row in enumerate(rows):
            allowed = seg == seg[row]
            if causal:
                allowed &= positions <= row
            if not allowed.any():
                continue
            scores = keys[allowed] @ q_np[row, h, :].astype(np.float64) / np.sqrt(HEAD_DIM)
            weights = np.exp(scores - scores.max())
            out[r, h] = weights @ values[allowed] / weights.sum()
    return out


def failure(error: BaseException, phase: str) -> dict[str, Any]:
    """A failed measurement as a result: out of memory (with the bytes asked for) or not."""
    text = f"{type(error).__name__}: {error}"
    result: dict[str, Any] = {"status": "failed", "phase": phase, "error": text[:2000]}
    if "RESOURCE_EXHAUSTED" in text or isinstance(error, MemoryError):
        result["status"] = "oom"
        asked = re.search(r"allocating (\d+) bytes", text)
        if asked:
            result["allocation_bytes"] = int(asked.group(1))
    return result


def check_output(
    out: Any,
    q: Any,
    k: Any,
    v: Any,
    segments: Any,
    causal: bool,
    masked: bool = True,
    dtype: str = DEFAULT_DTYPE,
) -> dict[str, Any]:
    """NaN/inf anywhere, and six rows (first, second, middle, around the padding, last)
    against the float64 reference, within ``CHECK_TOLERANCE[dtype]``. Done after the peak
    was read: it does not count."""
    import jax.numpy as jnp
    import numpy as np

    length = int(q.shape[1])
    out_np = np.asarray(out)
    if out_np.dtype != np.float32:  # bfloat16 (ml_dtypes) widens exactly to float32
        out_np = out_np.astype(np.float32)
    first_pad = length - padding_of(length) if masked else length - 1
    rows = sorted({0, 1, length // 2, first_pad - 1, first_pad, length - 1})
    reference = reference_rows(q, k, v, segments, rows, causal)
    got = out_np[0, rows].astype(np.float64)
    error_max = float(np.nanmax(np.abs(got - reference))) if np.isfinite(got).all() else None
    return {
        "output_shape": list(out_np.shape),
        "nonfinite_outputs": int(out_np.size - np.isfinite(out_np).sum()),
        "check": {
            "rows": rows,
            "max_abs_error_vs_float64": error_max,
            "tolerance": CHECK_TOLERANCE[dtype],
            "agrees": error_max is not None and error_max <= CHECK_TOLERANCE[dtype],
            "dtype": str(out.dtype),
            "shape_ok": out.shape == q.shape and out.dtype == q.dtype == jnp.dtype(dtype),
        },
    }


def measure(
    name: str,
    length: int,
    config: dict[str, Any],
    repeats: int,
    causal: bool,
    masked: bool = True,
    dtype: str = DEFAULT_DTYPE,
) -> dict[str, Any]:
    """Time one implementation at one length in this process (``name == "baseline"``: none).

    ``masked``: segment ids with the last 5 % padding; otherwise no mask at all.
    ``dtype``: that of q, k and v (the baseline holds the same inputs).
    """
    import jax

    from seamline.contracts import SegmentIds
    from seamline.core import Registry, user_trust

    result: dict[str, Any] = {"implementation": name, "length": length, "config": config}
    started = time.perf_counter()
    # Imports every attention module the user trusts, in the baseline too.
    registry = Registry.discover(user_trust())
    spec = attention_spec(length, causal, masked, dtype)
    attention: Any = registry.create(
        "attention", REFERENCE_IMPLEMENTATION if name == BASELINE else name, config
    )
    support = attention.supports(spec)
    result["spec"] = spec.signature()
    result["source"] = source_of(type(attention))
    result["device"] = str(jax.devices()[0])
    q, k, v, segments = make_inputs(length, masked, dtype)
    result["setup_s"] = time.perf_counter() - started
    result["rss_after_inputs_bytes"] = peak_rss_bytes()
    if name == BASELINE:
        # Bring up the compiler and the runtime once, so their one-off cost is not charged
        # to the attention: a trivial jitted op over the same inputs.
        jax.jit(lambda a, b, c: a + b + c)(q, k, v).block_until_ready()
        result.update(status="ok", peak_rss_bytes=peak_rss_bytes())
        return result
    if not support:
        result.update(status="refused", reasons=list(support.reasons))
        return result

    def attend(q: Any, k: Any, v: Any, segments: Any) -> Any:
        ids = SegmentIds(segments, segments) if masked else None
        return attention(q, k, v, segment_ids=ids, causal=causal)

    timed = time_calls(jax.jit(attend), (q, k, v, segments), repeats, result)
    if timed is None:
        return result
    out, times = timed
    result.update(
        peak_rss_bytes=peak_rss_bytes(), device_peak_bytes=device_peak_bytes(), times_s=times
    )
    result.update(spread(times), status="ok")
    result.update(check_output(out, q, k, v, segments, causal, masked, dtype))
    return result


def time_calls(
    jitted: Any, inputs: tuple[Any, ...], repeats: int, result: dict[str, Any]
) -> tuple[Any, list[float]] | None:
    """Lower and compile ``jitted`` ahead of time, warm it up, time ``repeats`` calls.

    What each phase took and the peak after it go into ``result``; returns the last
    output and the timed calls' seconds, or None when a phase failed (then ``result``
    says which, and why: any failure is a result, not a crash).
    """
    phase = "compile"
    try:
        t0 = time.perf_counter()
        lowered = jitted.lower(*inputs)
        t1 = time.perf_counter()
        compiled = lowered.compile()
        result["lower_s"] = t1 - t0
        result["compile_s"] = time.perf_counter() - t1
        result["xla_memory"] = memory_analysis(compiled)
        result["rss_after_compile_bytes"] = peak_rss_bytes()
        phase = "warm-up"
        t0 = time.perf_counter()
        out = compiled(*inputs)
        out.block_until_ready()
        result["warmup_s"] = time.perf_counter() - t0
        result["rss_after_warmup_bytes"] = peak_rss_bytes()
        phase = "timed calls"
        times = []
        for _ in range(repeats):
            del out  # hold one output at a time
            t0 = time.perf_counter()
            out = compiled(*inputs)
            out.block_until_ready()
            times.append(time.perf_counter() - t0)
    except Exception as error:  # any failure is a result, not a crash
        result.update(failure(error, phase), peak_rss_bytes=peak_rss_bytes())
        return None
    return out, times


def probe_registry(
    lengths: list[int], causal: bool, masked: bool = True, dtype: str = DEFAULT_DTYPE
) -> dict[str, Any]:
    """The registry's attention entries and each one's ``supports()`` answer per length,
    for inputs in ``dtype``.

    An implementation whose ``Config`` has an ``interpret`` field is asked a second time
    with ``{"interpret": true}``, so the driver can say what ``--interpret`` would add.
    """
    import jax

    from seamline.core import Registry, user_trust

    registry = Registry.discover(user_trust())
    device = jax.devices()[0]
    entries = []
    for info in registry.entries("attention"):
        entry: dict[str, Any] = {
            "name": info.name,
            "status": info.status,
            "reason": info.reason,
            "distribution": info.distribution,
            "version": info.version,
            "contract_version": info.contract_version,
            "target": info.target,
        }
        if info.usable and info.cls is not None:
            entry["source"] = source_of(info.cls)
            entry["configs"] = []
            configs: list[dict[str, Any]] = [{}]
            if "interpret" in info.cls.Config.model_fields:
                configs.append({"interpret": True})
            for config in configs:
                answers: dict[str, Any] = {}
                try:
                    attention: Any = registry.create("attention", info.name, config)
                    for length in lengths:
                        spec = attention_spec(length, causal, masked, dtype)
                        support = attention.supports(spec)
                        answers[str(length)] = {"ok": bool(support), "reasons": support.reasons}
                    entry["configs"].append({"config": config, "supports": answers})
                except Exception as error:  # a broken plugin is a finding
                    entry["configs"].append({"config": config, "error": f"{error!r}"[:1000]})
        entries.append(entry)
    return {
        "platform": device.platform,
        "device_kind": device.device_kind,
        "device": str(device),
        "versions": measured_versions(),
        "entries": entries,
    }


def parse_arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="One attention benchmark worker (internal).")
    commands = parser.add_subparsers(dest="command", required=True)
    one = commands.add_parser("measure", help="one implementation at one length")
    one.add_argument("implementation", help=f"a registered attention, or {BASELINE!r}")
    one.add_argument("length", type=int)
    one.add_argument("--repeats", type=int, default=3)
    one.add_argument("--causal", action="store_true")
    one.add_argument("--no-mask", action="store_true", help="no segment ids (no padding)")
    one.add_argument("--dtype", choices=DTYPES, default=DEFAULT_DTYPE, help="of q, k and v")
    one.add_argument("--config", default="", help="the implementation's config, as JSON")
    one.add_argument("--address-limit-gib", type=float, default=0.0, help="RLIMIT_AS; 0: none")
    probe = commands.add_parser("probe", help="the registry's attention entries, supports()")
    probe.add_argument("--lengths", required=True, help="comma-separated")
    probe.add_argument("--causal", action="store_true")
    probe.add_argument("--no-mask", action="store_true")
    probe.add_argument("--dtype", choices=DTYPES, default=DEFAULT_DTYPE)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_arguments(argv)
    proto = protocol_stream()
    if args.command == "probe":
        lengths = [int(x) for x in args.lengths.split(",")]
        message = probe_registry(lengths, args.causal, not args.no_mask, args.dtype)
    else:
        if args.address_limit_gib:
            limit = int(args.address_limit_gib * GIB)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        config = json.loads(args.config) if args.config else {}
        try:
            message = measure(
                args.implementation,
                args.length,
                config,
                args.repeats,
                args.causal,
                not args.no_mask,
                args.dtype,
            )
        except MemoryError as error:
            message = {
                "implementation": args.implementation,
                "length": args.length,
                "status": "oom",
                "error": str(error),
            }
        message["address_limit_gib"] = args.address_limit_gib
    send(proto, message)
    return 0


if __name__ == "__main__":
    sys.exit(main())
