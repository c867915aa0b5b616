"""What one compilation costs on this machine's JAX backend, under XLA flag variants.

Usage::

    python -m benchmarks.overhead.compile_cost [--variants default,no-autotune,...]
        [--batch 32] [--length 256] [--timeout 120] [--out DIR]

On the H200 (benchmarks/results/h200/) a single small attention took 8 s to compile in
a fresh process and a first ``seamline run`` compiled for minutes; on the CPU the same
programs take tens of milliseconds. This measures where such time goes, per program,
in a fresh process per variant (XLA reads its flags once, when the backend starts): the
backend's start (the
first ``jax.devices()``), then for each program the trace-and-lower time and the
backend's compile time (``jax.jit(f).lower(...)`` and ``.compile()``, timed apart), and
one call after it. The programs grow from an elementwise add to one encoder layer of the
model's shape (all-MiniLM-L6-v2: 12 heads of 32, hidden 384, feed-forward 1536) on
``--batch`` rows of ``--length`` tokens.

Variants (``XLA_FLAGS`` added to the environment's):

* ``default`` -- nothing added, as a user runs;
* ``no-autotune`` -- ``--xla_gpu_autotune_level=0``: XLA's GPU autotuning (it times
  candidate kernels for every matmul and fusion while compiling) off;
* ``no-triton-gemm`` -- ``--xla_gpu_enable_triton_gemm=false``: matmuls to cuBLAS only.

The GPU flags are ignored on a CPU (the variants then time the same thing: the spread
between them is the noise). Each variant runs once: compilation is a first-time cost,
and a second run in the same process would hit JAX's caches. Print a table; write
``compile_cost.json`` to ``--out`` (default ``benchmarks/results``).

It imports jax, numpy and the standard library only (no seamline, no rich: hence its own
plain table; ``benchmarks.common.paths`` is standard library too), so that
it runs on a GPU image where nothing is installed (``device_check.sh --phase compile``).

Exit codes: 0 done; 1 a variant's process failed or ran out of its ``--timeout`` (its output
is printed; the others are still measured); 2 a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT

VARIANTS = {
    "default": "",
    "no-autotune": "--xla_gpu_autotune_level=0",
    "no-triton-gemm": "--xla_gpu_enable_triton_gemm=false",
}
HEADS, HEAD_DIM, FEED_FORWARD = 12, 32, 1536
HIDDEN = HEADS * HEAD_DIM


def programs(batch: int, length: int) -> list[tuple[str, Callable[..., Any], list[Any]]]:
    """(name, function, inputs): the programs one variant compiles, smallest first."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    rng = np.random.default_rng(0)

    def put(*shape: int) -> Any:
        return jax.device_put(rng.normal(size=shape).astype(np.float32) * 0.05)

    x = put(batch, length, HIDDEN)
    heads = put(batch, length, HEADS, HEAD_DIM)
    weights = {
        "qkv": put(HIDDEN, 3 * HIDDEN),
        "out": put(HIDDEN, HIDDEN),
        "up": put(HIDDEN, FEED_FORWARD),
        "down": put(FEED_FORWARD, HIDDEN),
    }

    def norm(h: Any) -> Any:
        mean = h.mean(-1, keepdims=True)
        return (h - mean) * jax.lax.rsqrt(((h - mean) ** 2).mean(-1, keepdims=True) + 1e-12)

    def attention(q: Any, k: Any, v: Any) -> Any:
        scores = jnp.einsum("bqhd,bkhd->bhqk", q, k) / np.sqrt(HEAD_DIM)
        return jnp.einsum("bhqk,bkhd->bqhd", jax.nn.softmax(scores, axis=-1), v)

    def layer(w: dict[str, Any], h: Any) -> Any:
        q, k, v = jnp.split(h @ w["qkv"], 3, axis=-1)
        shape = (batch, length, HEADS, HEAD_DIM)
        mixed = attention(q.reshape(shape), k.reshape(shape), v.reshape(shape))
        h = norm(h + mixed.reshape(batch, length, HIDDEN) @ w["out"])
        return norm(h + jax.nn.gelu(h @ w["up"], approximate=False) @ w["down"])

    def six_layers(w: dict[str, Any], h: Any) -> Any:
        for _ in range(6):
            h = layer(w, h)
        return h

    return [
        ("add one (elementwise)", lambda a: a + 1.0, [x]),
        ("matmul [B*T,384]x[384,1536]", lambda a, b: a @ b, [x, weights["up"]]),
        ("attention (softmax)", attention, [heads, heads, heads]),
        ("encoder layer", layer, [weights, x]),
        ("six encoder layers", six_layers, [weights, x]),
    ]


def measure(batch: int, length: int) -> dict[str, Any]:
    """In this process: the backend's start, then each program's lower, compile and call."""
    started = time.perf_counter()
    import jax

    device = jax.devices()[0]
    backend_s = time.perf_counter() - started
    rows = []
    for name, function, inputs in programs(batch, length):
        t0 = time.perf_counter()
        lowered = jax.jit(function).lower(*inputs)
        t1 = time.perf_counter()
        compiled = lowered.compile()
        t2 = time.perf_counter()
        jax.block_until_ready(compiled(*inputs))
        t3 = time.perf_counter()
        rows.append({"program": name, "lower_s": t1 - t0, "compile_s": t2 - t1, "call_s": t3 - t2})
    return {
        "xla_flags_seen": os.environ.get("XLA_FLAGS", ""),
        "device": f"{device.platform}:{device.device_kind}",
        "jax": jax.__version__,
        "backend_start_s": backend_s,
        "programs": rows,
    }


def run_variant(name: str, batch: int, length: int, timeout: float) -> dict[str, Any]:
    """``measure`` in a fresh process with the variant's XLA flags, within ``timeout`` s."""
    environ = dict(os.environ)
    environ["XLA_FLAGS"] = " ".join(filter(None, [environ.get("XLA_FLAGS"), VARIANTS[name]]))
    environ.pop("JAX_COMPILATION_CACHE_DIR", None)  # every compilation really compiles
    command = [sys.executable, "-m", "benchmarks.overhead.compile_cost", "--worker"]
    command += ["--batch", str(batch), "--length", str(length)]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            env=environ,
            timeout=timeout,
            check=False,
            cwd=ROOT,
        )
    except subprocess.TimeoutExpired:
        print(f"variant {name}: out of time after {timeout:.0f} s")
        return {"variant": name, "failed": f"out of time after {timeout:.0f} s"}
    if done.returncode != 0:
        print(f"variant {name} failed ({done.returncode}):\n{done.stdout}{done.stderr}")
        return {"variant": name, "failed": done.returncode}
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    result.update(variant=name, xla_flags=VARIANTS[name], process_s=time.perf_counter() - started)
    return result


def print_table(results: list[dict[str, Any]]) -> None:
    measured = [r for r in results if "programs" in r]
    if not measured:
        return
    print(f"{measured[0]['device']}, jax {measured[0]['jax']}; seconds: lower + compile (call)")
    header = ["program"] + [r["variant"] for r in measured]
    lines = [["backend start"] + [f"{r['backend_start_s']:.2f}" for r in measured]]
    for index, row in enumerate(measured[0]["programs"]):
        cells = []
        for r in measured:
            p = r["programs"][index]
            cells.append(f"{p['lower_s']:.2f} + {p['compile_s']:.2f} ({p['call_s']:.3f})")
        lines.append([row["program"], *cells])
    lines.append(["whole process"] + [f"{r['process_s']:.1f}" for r in measured])
    widths = [max(len(line[i]) for line in [header, *lines]) for i in range(len(header))]
    for line in [header, *lines]:
        print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--length", type=int, default=256)
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds per variant")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        print(json.dumps(measure(args.batch, args.length)))
        return 0
    variants = [v for v in args.variants.split(",") if v]
    unknown = sorted(set(variants) - set(VARIANTS))
    if unknown or args.batch < 1 or args.length < 1:
        parser.error(
            f"unknown variants {unknown} (known: {', '.join(VARIANTS)})"
            if unknown
            else "--batch and --length must be at least 1"
        )
    require_folder(args.out)
    results = [run_variant(name, args.batch, args.length, args.timeout) for name in variants]
    print_table(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "compile_cost.json").write_text(json.dumps(results, indent=2) + "\n")
    return 1 if any("failed" in r for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())
