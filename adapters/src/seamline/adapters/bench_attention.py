"""Attention implementations side by side: time and peak memory over sequence lengths.

Usage::

    .venv/bin/python benchmarks/attention.py [--max-length 16384] [--lengths 128,1024,...]
        [--implementations native,blockwise] [--repeats 3] [--causal] [--interpret]

Every attention implementation the registry discovers (kind ``attention``) is asked
``supports(spec)`` with the real :class:`AttentionSpec` (platform and device kind of
``jax.devices()[0]``); those that refuse are listed with their reasons. Each one that
accepts is timed over sequence lengths 128, 256, ..., ``--max-length`` with B=1,
12 heads, head dim 64, float32 self-attention whose last ~5% of tokens are padding
(segment ids: real tokens 1, padding 0), ``causal=False`` unless ``--causal``.

Every (implementation, length) runs in a fresh worker process of its own
(``--worker IMPL LENGTH``, one JSON line on stdout):

* the jitted attention is lowered and compiled ahead of time (compile seconds and
  XLA's ``memory_analysis()`` of the executable are recorded), called once to warm
  up, then timed over ``--repeats`` calls, each up to ``block_until_ready()``; the
  median is reported;
* **peak memory** is the worker's ``ru_maxrss`` minus that of a *baseline* worker for
  the same length (``--worker baseline LENGTH``), which imports everything, discovers
  the registry, builds the same inputs on the device and compiles and runs one trivial
  jitted op, but calls no attention: the difference is the attention's own working
  memory (its compile and its run);
* the worker runs under ``RLIMIT_AS`` (``--address-limit-gib``, default 24) and the
  driver watches its RSS with psutil, killing it above ``--memory-limit-gib`` (default
  20) or when the machine itself runs low on memory, and after ``--timeout`` seconds.
  A worker that fails is recorded as such; longer lengths of an implementation that
  ran out of memory or time are skipped.

After the timings each worker checks a few output rows against a float64 NumPy
reference computed in the worker (not against ``native``), and that no output is
NaN/inf; this does not count towards the peak.

The interpret-mode kernels (a Config with an ``interpret`` field that refuses this
platform otherwise: ``tpu-flash``, ``tpu-splash``, ``gpu-flash``) run only with
``--interpret``, as ``{"interpret": true}``, up to ``--interpret-max-length``.

Results go to ``OUT/attention.json`` and ``OUT/attention.png``.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

# Relative paths (results, logs, workers' working folder) are taken from where the
# benchmark is started; workers re-run this very file as a script.
ROOT = Path.cwd()
SCRIPT = Path(__file__).resolve()

BATCH = 1
HEADS = 12
HEAD_DIM = 64
DTYPE = "float32"
PAD_FRACTION = 0.05
SEED = 0
REFERENCE_IMPLEMENTATION = "native"
LOAD_WARNING = 1.5
GIB = 2**30
MIB = 2**20
POLL_SECONDS = 0.05
PAUSE_SECONDS = 0.5
"""Quiet time before each worker, so the previous one's threads and pages are gone."""
SYSTEM_RESERVE_GIB = 1.0
"""Kill a worker when the machine's available memory falls below this (shared machine)."""
CHECK_TOLERANCE = 1e-4
"""Largest absolute difference from the float64 reference rows that counts as agreeing."""
INTERPRET_CAPABLE = ("tpu-flash", "tpu-splash", "gpu-flash")

console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


def default_lengths(max_length: int) -> list[int]:
    lengths, length = [], 128
    while length <= max_length:
        lengths.append(length)
        length *= 2
    return lengths


def padding_of(length: int) -> int:
    """Padding tokens at the end of a sequence of ``length``: ~5%, at least one."""
    return max(1, round(PAD_FRACTION * length))


# -- the worker (one per implementation and length, and the baselines) ----------------------


def _peak_rss_bytes() -> int:
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024  # KiB on Linux


def _versions() -> dict[str, str]:
    from importlib import metadata

    found = {"python": platform.python_version()}
    for dist in (
        "jax",
        "jaxlib",
        "numpy",
        "seamline-contracts",
        "seamline-core",
        "seamline-components",
    ):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def _source(cls: type) -> dict[str, Any]:
    """Which code was measured: the implementation's module file, its sha256 and mtime."""
    import hashlib
    import inspect

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


def _spec(length: int, causal: bool) -> Any:
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
        dtype=DTYPE,
        causal=causal,
        segmented=True,
        platform=device.platform,
        device_kind=device.device_kind,
    )


def _inputs(length: int) -> tuple[Any, Any, Any, Any]:
    """q, k, v ``[1, T, 12, 64]`` float32 on the device, and ``[1, T]`` segment ids."""
    import jax
    import numpy as np

    rng = np.random.default_rng(SEED)
    shape = (BATCH, length, HEADS, HEAD_DIM)
    q, k, v = (jax.device_put(rng.standard_normal(shape, dtype=np.float32)) for _ in range(3))
    ids = np.ones((BATCH, length), np.int32)
    ids[:, length - padding_of(length) :] = 0
    segments = jax.device_put(ids)
    for array in (q, k, v, segments):
        array.block_until_ready()
    return q, k, v, segments


def _memory_analysis(compiled: Any) -> dict[str, int] | None:
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


def _device_peak_bytes() -> int | None:
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


def _reference_rows(q: Any, k: Any, v: Any, ids: Any, rows: list[int], causal: bool) -> Any:
    """Attention for a few query rows in float64 NumPy: an independent reference."""
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


def run_worker(
    name: str, length: int, config: dict[str, Any], repeats: int, causal: bool
) -> dict[str, Any]:
    """Time one implementation at one length in this process (``name == "baseline"``: none)."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from seamline.contracts import SegmentIds
    from seamline.core.registry import Registry

    result: dict[str, Any] = {"implementation": name, "length": length, "config": config}
    started = time.perf_counter()
    registry = Registry.discover()  # imports every attention module, in the baseline too
    spec = _spec(length, causal)
    attention: Any = registry.create(
        "attention", REFERENCE_IMPLEMENTATION if name == "baseline" else name, config
    )
    support = attention.supports(spec)
    result["spec"] = spec.signature()
    result["source"] = _source(type(attention))
    result["device"] = str(jax.devices()[0])
    q, k, v, segments = _inputs(length)
    result["setup_s"] = time.perf_counter() - started
    result["rss_after_inputs_bytes"] = _peak_rss_bytes()
    if name == "baseline":
        # Bring up the compiler and the runtime once, so their one-off cost is not charged
        # to the attention: a trivial jitted op over the same inputs.
        jax.jit(lambda a, b, c: a + b + c)(q, k, v).block_until_ready()
        result.update(status="ok", peak_rss_bytes=_peak_rss_bytes())
        return result
    if not support:
        result.update(status="refused", reasons=list(support.reasons))
        return result

    def attend(q: Any, k: Any, v: Any, segments: Any) -> Any:
        return attention(q, k, v, segment_ids=SegmentIds(segments, segments), causal=causal)

    phase = "compile"
    try:
        t0 = time.perf_counter()
        lowered = jax.jit(attend).lower(q, k, v, segments)
        t1 = time.perf_counter()
        compiled = lowered.compile()
        t2 = time.perf_counter()
        result["lower_s"] = t1 - t0
        result["compile_s"] = t2 - t1
        result["xla_memory"] = _memory_analysis(compiled)
        result["rss_after_compile_bytes"] = _peak_rss_bytes()
        phase = "warm-up"
        t0 = time.perf_counter()
        out = compiled(q, k, v, segments)
        out.block_until_ready()
        result["warmup_s"] = time.perf_counter() - t0
        result["rss_after_warmup_bytes"] = _peak_rss_bytes()
        phase = "timed calls"
        times = []
        for _ in range(repeats):
            del out  # hold one output at a time
            t0 = time.perf_counter()
            out = compiled(q, k, v, segments)
            out.block_until_ready()
            times.append(time.perf_counter() - t0)
    except Exception as error:  # any failure is a result, not a crash
        text = f"{type(error).__name__}: {error}"
        result.update(status="failed", phase=phase, error=text[:2000])
        if "RESOURCE_EXHAUSTED" in text or isinstance(error, MemoryError):
            result["status"] = "oom"
            asked = re.search(r"allocating (\d+) bytes", text)
            if asked:
                result["allocation_bytes"] = int(asked.group(1))
        result["peak_rss_bytes"] = _peak_rss_bytes()
        return result
    result["peak_rss_bytes"] = _peak_rss_bytes()
    result["device_peak_bytes"] = _device_peak_bytes()
    result["times_s"] = times
    result["median_s"] = statistics.median(times)
    result["min_s"] = min(times)
    result["status"] = "ok"

    # Checks, after the peak was read: NaN/inf anywhere, and a few rows against float64.
    out_np = np.asarray(out)
    result["output_shape"] = list(out_np.shape)
    result["nonfinite_outputs"] = int(out_np.size - np.isfinite(out_np).sum())
    first_pad = length - padding_of(length)
    rows = sorted({0, 1, length // 2, first_pad - 1, first_pad, length - 1})
    reference = _reference_rows(q, k, v, segments, rows, causal)
    got = out_np[0, rows].astype(np.float64)
    error_max = float(np.nanmax(np.abs(got - reference))) if np.isfinite(got).all() else None
    result["check"] = {
        "rows": rows,
        "max_abs_error_vs_float64": error_max,
        "agrees": error_max is not None and error_max <= CHECK_TOLERANCE,
        "dtype": str(out.dtype),
        "shape_ok": out.shape == q.shape and out.dtype == jnp.float32,
    }
    return result


def worker_main(args: argparse.Namespace) -> int:
    """``--worker IMPL LENGTH``: print one JSON line (stdout is the protocol, logs to stderr)."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # stray prints must not corrupt the protocol line
    if args.address_limit_gib:
        limit = int(args.address_limit_gib * GIB)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    name, length = args.worker[0], int(args.worker[1])
    config = json.loads(args.config) if args.config else {}
    try:
        result = run_worker(name, length, config, args.repeats, args.causal)
    except MemoryError as error:
        result = {"implementation": name, "length": length, "status": "oom", "error": str(error)}
    result["address_limit_gib"] = args.address_limit_gib
    proto.write(json.dumps(result) + "\n")
    proto.flush()
    return 0


def probe_main(args: argparse.Namespace) -> int:
    """``--probe``: the registry's attention entries and each one's ``supports()`` answers."""
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    import jax

    from seamline.core.registry import Registry

    registry = Registry.discover()
    lengths = [int(x) for x in args.lengths.split(",")]
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
            entry["source"] = _source(info.cls)
            entry["configs"] = []
            configs: list[dict[str, Any]] = [{}]
            if "interpret" in info.cls.Config.model_fields:
                configs.append({"interpret": True})
            for config in configs:
                answers: dict[str, Any] = {}
                try:
                    attention: Any = registry.create("attention", info.name, config)
                    for length in lengths:
                        support = attention.supports(_spec(length, args.causal))
                        answers[str(length)] = {"ok": support.ok, "reasons": list(support.reasons)}
                    entry["configs"].append({"config": config, "supports": answers})
                except Exception as error:  # a broken plugin is a finding
                    entry["configs"].append({"config": config, "error": f"{error!r}"[:1000]})
        entries.append(entry)
    message = {
        "platform": device.platform,
        "device_kind": device.device_kind,
        "device": str(device),
        "versions": _versions(),
        "entries": entries,
    }
    proto.write(json.dumps(message) + "\n")
    return 0


# -- the driver -----------------------------------------------------------------------------


def _run_subprocess(
    argv: list[str],
    *,
    timeout: float,
    memory_limit_gib: float,
    log: Path,
) -> dict[str, Any]:
    """Run one worker under the psutil watchdog; return its JSON line or what went wrong."""
    import psutil  # type: ignore[import-untyped]

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryFile("w+") as stdout, log.open("w") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(argv, cwd=ROOT, env=env, stdout=stdout, stderr=stderr)
        watched = psutil.Process(process.pid)
        sampled_peak = 0
        killed: dict[str, Any] | None = None
        while process.poll() is None:
            elapsed = time.perf_counter() - started
            try:
                rss = watched.memory_info().rss
            except psutil.Error:
                rss = 0
            sampled_peak = max(sampled_peak, rss)
            available = psutil.virtual_memory().available
            if rss > memory_limit_gib * GIB:
                killed = {
                    "status": "oom",
                    "error": f"RSS {rss / GIB:.1f} GiB passed --memory-limit-gib "
                    f"{memory_limit_gib:g} (killed by the watchdog)",
                    "limit_gib": memory_limit_gib,
                }
            elif available < SYSTEM_RESERVE_GIB * GIB:
                killed = {
                    "status": "oom",
                    "error": f"the machine had {available / GIB:.2f} GiB available left at "
                    f"RSS {rss / GIB:.1f} GiB (killed by the watchdog to spare other processes)",
                    "limit_gib": round(rss / GIB, 1),
                }
            elif elapsed > timeout:
                killed = {"status": "timeout", "error": f"still running after {timeout:g} s"}
            if killed:
                process.kill()
                process.wait()
                break
            time.sleep(POLL_SECONDS)
        wall = time.perf_counter() - started
        stdout.seek(0)
        lines = [line for line in stdout.read().splitlines() if line.startswith("{")]
    common = {
        "wall_s": wall,
        "sampled_peak_rss_bytes": sampled_peak,
        "load_average_after": list(os.getloadavg()),
        "log": str(log),
    }
    if killed:
        return {**killed, **common}
    if process.returncode == 0 and lines:
        return {**json.loads(lines[-1]), **common}
    tail = log.read_text(errors="replace")[-3000:]
    status = "failed"
    if re.search(r"bad_alloc|MemoryError|RESOURCE_EXHAUSTED|Cannot allocate memory", tail):
        status = "oom"
    return {
        "status": status,
        "error": f"worker exited with code {process.returncode}: {tail.strip()[-800:]}",
        **common,
    }


def probe(lengths: Sequence[int], causal: bool, log_dir: Path, timeout: float) -> dict[str, Any]:
    argv = [sys.executable, str(SCRIPT), "--probe", "--lengths", ",".join(map(str, lengths))]
    if causal:
        argv.append("--causal")
    result = _run_subprocess(argv, timeout=timeout, memory_limit_gib=8, log=log_dir / "probe.log")
    if "entries" not in result:
        raise RuntimeError(f"the probe worker failed: {result.get('error')}")
    return result


def plan_implementations(
    probed: dict[str, Any],
    wanted: Sequence[str] | None,
    lengths: Sequence[int],
    interpret: bool,
    interpret_max_length: int,
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Which implementations run, with which config and up to which length; and who refused."""
    runs: list[dict[str, Any]] = []
    skipped: dict[str, list[str]] = {}
    for entry in probed["entries"]:
        name = entry["name"]
        if wanted and name not in wanted:
            continue
        if entry["status"] != "ok":
            skipped[name] = [f"registry status {entry['status']}: {entry['reason']}"]
            continue
        chosen = None
        reasons: list[str] = []
        for option in entry.get("configs", []):
            config = option["config"]
            if "error" in option:
                reasons.append(f"with {json.dumps(config)}: {option['error']}")
                continue
            answers = option["supports"]
            ok = [n for n in lengths if answers[str(n)]["ok"]]
            refusals = sorted({r for a in answers.values() if not a["ok"] for r in a["reasons"]})
            if config.get("interpret") and not interpret:
                if ok:
                    reasons.append('{"interpret": true} would serve: run with --interpret')
                continue
            if ok:
                limit = interpret_max_length if config.get("interpret") else max(lengths)
                chosen = {
                    "name": name,
                    "config": config,
                    "lengths": [n for n in ok if n <= limit],
                    "refused_lengths": {
                        str(n): answers[str(n)]["reasons"] for n in lengths if n not in ok
                    },
                    "interpret": bool(config.get("interpret")),
                    "max_length_cap": limit if config.get("interpret") else None,
                }
                break
            label = f"with {json.dumps(config)}: " if config else ""
            reasons.extend(f"{label}{reason}" for reason in refusals)
        if chosen:
            runs.append(chosen)
        else:
            skipped[name] = reasons or ["refused every length"]
    runs.sort(key=lambda r: (r["name"] != REFERENCE_IMPLEMENTATION, r["name"]))
    return runs, skipped


def _describe_failure(result: dict[str, Any], address_limit_gib: float) -> str:
    status = result.get("status")
    if status == "oom":
        limit = result.get("limit_gib") or address_limit_gib
        asked = result.get("allocation_bytes")
        more = f" (asked for {asked / GIB:.1f} GiB at once)" if asked else ""
        return f"did not run: out of memory at {limit:g} GiB{more}"
    if status == "timeout":
        return "did not run: timeout"
    if status == "skipped":
        return f"skipped: {result.get('reason', '')}"
    if status == "refused":
        return f"refused: {'; '.join(result.get('reasons', []))}"
    return f"did not run: {status}: {str(result.get('error', ''))[:200]}"


def run_benchmark(
    lengths: Sequence[int],
    implementations: Sequence[str] | None = None,
    repeats: int = 3,
    out_dir: Path = Path("benchmarks") / "results",
    *,
    causal: bool = False,
    interpret: bool = False,
    interpret_max_length: int = 1024,
    long_repeats: int = 1,
    long_from: int = 32768,
    timeout: float = 300.0,
    memory_limit_gib: float = 20.0,
    address_limit_gib: float = 24.0,
    plot: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Run the sweep; write ``attention.json`` (and the PNG) to ``out_dir``; return the report.

    ``repeats`` timed calls per (implementation, length), ``long_repeats`` from
    ``long_from`` tokens on. ``implementations`` None means every one discovered.
    """
    say = log or console.print
    lengths = sorted(set(lengths))
    out_dir.mkdir(parents=True, exist_ok=True)
    load_start = list(os.getloadavg())
    if load_start[0] > LOAD_WARNING:
        say(f"[yellow]warning: 1-minute load average {load_start[0]:.2f} > {LOAD_WARNING}")
    started = datetime.datetime.now(datetime.UTC)
    sweep_started = time.perf_counter()
    log_dir = Path(tempfile.mkdtemp(prefix="seamline-attention-bench-"))
    say(f"probing the registry and supports() (worker logs in {log_dir})...")
    probed = probe(lengths, causal, log_dir, max(timeout, 300.0))
    say(f"platform {probed['platform']} ({probed['device_kind']})")
    runs, skipped = plan_implementations(
        probed, implementations, lengths, interpret, interpret_max_length
    )
    for name, reasons in skipped.items():
        say(f"  not run: {name}: {'; '.join(reasons)}")
    if implementations:
        unknown = set(implementations) - {e["name"] for e in probed["entries"]}
        for name in sorted(unknown):
            skipped[name] = ["not registered"]
            say(f"  not run: {name}: not registered")
    say(f"  running: {', '.join(r['name'] for r in runs) or 'nothing'}")

    me = [sys.executable, str(SCRIPT)]
    flags = ["--address-limit-gib", str(address_limit_gib)]
    if causal:
        flags.append("--causal")
    results: dict[str, dict[str, dict[str, Any]]] = {r["name"]: {} for r in runs}
    baselines: dict[str, dict[str, Any]] = {}
    loads: dict[str, list[float]] = {}
    for length in lengths:
        todo = [r for r in runs if length in r["lengths"]]
        for run in runs:
            if length not in run["lengths"]:
                if run["max_length_cap"] and length > run["max_length_cap"]:
                    reason = f"interpret mode capped at {run['max_length_cap']}"
                else:
                    reason = "; ".join(run["refused_lengths"].get(str(length), ["not asked"]))
                results[run["name"]][str(length)] = {"status": "skipped", "reason": reason}
        todo_now = []
        for run in todo:
            failed = [
                (n, results[run["name"]][str(n)])
                for n in lengths
                if n < length
                and results[run["name"]].get(str(n), {}).get("status") in ("oom", "timeout")
            ]
            if failed:
                n, earlier = failed[-1]
                results[run["name"]][str(length)] = {
                    "status": "skipped",
                    "reason": f"{earlier['status']} at {n} already",
                }
                continue
            todo_now.append(run)
        if not todo_now:
            continue
        reps = long_repeats if length >= long_from else repeats
        time.sleep(PAUSE_SECONDS)
        baseline = _run_subprocess(
            [*me, "--worker", "baseline", str(length), *flags],
            timeout=max(timeout, 300.0),
            memory_limit_gib=memory_limit_gib,
            log=log_dir / f"baseline-{length}.log",
        )
        baselines[str(length)] = baseline
        base_rss = baseline.get("peak_rss_bytes")
        say(
            f"length {length:>6}: baseline "
            + (f"{base_rss / MIB:,.0f} MiB" if base_rss else _describe_failure(baseline, 0))
        )
        for run in todo_now:
            name = run["name"]
            time.sleep(PAUSE_SECONDS)
            argv = [*me, "--worker", name, str(length), "--repeats", str(reps), *flags]
            if run["config"]:
                argv += ["--config", json.dumps(run["config"])]
            result = _run_subprocess(
                argv,
                timeout=timeout,
                memory_limit_gib=memory_limit_gib,
                log=log_dir / f"{name}-{length}.log",
            )
            if result.get("status") == "ok" and base_rss:
                result["peak_mib"] = (result["peak_rss_bytes"] - base_rss) / MIB
                result["compile_peak_mib"] = (result["rss_after_compile_bytes"] - base_rss) / MIB
            results[name][str(length)] = result
            if result.get("status") == "ok":
                check = result.get("check", {})
                flag = "" if check.get("agrees") and not result["nonfinite_outputs"] else "  [red]!"
                temp = (result.get("xla_memory") or {}).get("temp_size_in_bytes")
                say(
                    f"  {name:<12} {1e3 * result['median_s']:>10,.1f} ms  "
                    f"peak {result.get('peak_mib', float('nan')):>9,.0f} MiB  "
                    f"XLA temp {temp / MIB if temp is not None else float('nan'):>9,.0f} MiB  "
                    f"compile {result['compile_s']:.2f} s  "
                    f"err {check.get('max_abs_error_vs_float64')}{flag}"
                )
            else:
                say(f"  {name:<12} {_describe_failure(result, address_limit_gib)}")
        loads[str(length)] = list(os.getloadavg())
    load_end = list(os.getloadavg())
    changed = {}
    for name, rows in results.items():
        hashes = {r["source"]["sha256"] for r in rows.values() if r.get("source")}
        if len(hashes) > 1:
            changed[name] = sorted(hashes)
            say(
                f"[yellow]warning: {name}'s source changed during the sweep "
                f"({len(hashes)} versions)"
            )
    all_loads = [load_start[0], load_end[0], *(x[0] for x in loads.values())]
    report: dict[str, Any] = {
        "benchmark": "attention",
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "finished": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": {
            "machine": platform.machine(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
        },
        "platform": probed["platform"],
        "device_kind": probed["device_kind"],
        "device": probed["device"],
        "versions": probed["versions"],
        "wall_s": time.perf_counter() - sweep_started,
        "load_average": {"start": load_start, "end": load_end, "after_each_length": loads},
        "load_warning": max(all_loads) > LOAD_WARNING,
        "config": {
            "lengths": list(lengths),
            "batch": BATCH,
            "heads": HEADS,
            "kv_heads": HEADS,
            "head_dim": HEAD_DIM,
            "dtype": DTYPE,
            "causal": causal,
            "segments": f"real tokens 1, the last {PAD_FRACTION:.0%} (at least 1) padding 0",
            "repeats": repeats,
            "long_repeats": long_repeats,
            "long_from": long_from,
            "interpret": interpret,
            "interpret_max_length": interpret_max_length,
            "timeout_s": timeout,
            "memory_limit_gib": memory_limit_gib,
            "address_limit_gib": address_limit_gib,
            "system_reserve_gib": SYSTEM_RESERVE_GIB,
            "peak_memory": "worker ru_maxrss minus the same-length baseline worker's ru_maxrss "
            "(baseline: imports, registry, inputs on the device, one trivial jitted op)",
            "timing": "AOT-compiled jit of the attention, one warm-up call, then the median of "
            "the timed calls, each up to block_until_ready()",
        },
        "probe": probed["entries"],
        "implementations": [
            {k: r[k] for k in ("name", "config", "lengths", "interpret", "max_length_cap")}
            for r in runs
        ],
        "not_run": skipped,
        "source_changed_during_sweep": changed,
        "baselines": baselines,
        "results": results,
    }
    report["verdicts"] = verdicts(report)
    json_path = out_dir / "attention.json"
    json_path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    say(f"wrote {json_path}")
    if plot:
        png = out_dir / "attention.png"
        try:
            plot_report(report, png)
            say(f"wrote {png}")
        except Exception as error:  # the numbers matter more
            say(f"[yellow]skipped the plot: {error!r}")
    return report


# -- reporting ------------------------------------------------------------------------------


def _ok(report: dict[str, Any], name: str, length: int) -> dict[str, Any] | None:
    result = report["results"].get(name, {}).get(str(length))
    return result if result and result.get("status") == "ok" else None


def _why_not(report: dict[str, Any], name: str, length: int) -> str:
    if name not in report["results"]:
        return f"{name} did not run ({'; '.join(report['not_run'].get(name, ['not asked']))})"
    result = report["results"][name].get(str(length))
    if result is None:
        return f"{name} was not run at {length}"
    return f"{name}: {_describe_failure(result, report['config']['address_limit_gib'])}"


def verdicts(report: dict[str, Any]) -> list[str]:
    """The three targets, as sentences that start with yes, no or n/a."""
    lines = []
    native_8k, block_8k = _ok(report, "native", 8192), _ok(report, "blockwise", 8192)
    if native_8k and block_8k and "peak_mib" in native_8k and "peak_mib" in block_8k:
        x, y = block_8k["peak_mib"], native_8k["peak_mib"]
        lines.append(
            f"at 8192, blockwise peak memory <= 1/8 of native's: {'yes' if x <= y / 8 else 'no'} "
            f"({x:,.0f} / {y:,.0f} MiB = 1/{y / x if x > 0 else float('inf'):.1f})"
        )
        ratio = block_8k["median_s"] / native_8k["median_s"]
        fastest = block_8k["min_s"] / native_8k["min_s"]
        lines.append(
            f"at 8192, blockwise no slower than native: {'yes' if ratio <= 1.0 else 'no'} "
            f"(time ratio {ratio:.2f}: median {1e3 * block_8k['median_s']:,.0f} ms / "
            f"{1e3 * native_8k['median_s']:,.0f} ms; fastest call against fastest call "
            f"{fastest:.2f})"
        )
    else:
        missing = "; ".join(
            _why_not(report, n, 8192)
            for n, r in (("native", native_8k), ("blockwise", block_8k))
            if not r
        )
        lines.append(f"at 8192, blockwise peak memory <= 1/8 of native's: n/a ({missing})")
        lines.append(f"at 8192, blockwise no slower than native: n/a ({missing})")
    block_32k = _ok(report, "blockwise", 32768)
    if block_32k and "peak_mib" in block_32k:
        mib = block_32k["peak_mib"]
        first = (
            f"at 32768, blockwise within 2 GiB: {'yes' if mib <= 2048 else 'no'} ({mib:,.0f} MiB)"
        )
    else:
        first = f"at 32768, blockwise within 2 GiB: n/a ({_why_not(report, 'blockwise', 32768)})"
    cap = f"native in {report['config']['address_limit_gib']:g} GiB"
    native_32k = report["results"].get("native", {}).get("32768")
    if native_32k and native_32k.get("status") == "ok":
        second = f"{cap}: ran ({native_32k.get('peak_mib', float('nan')):,.0f} MiB)"
    elif native_32k and native_32k.get("status") in ("oom", "timeout", "failed"):
        second = f"{cap}: could not ({_why_not(report, 'native', 32768)})"
    elif (
        native_32k
        and native_32k.get("status") == "skipped"
        and "already" in str(native_32k.get("reason"))
    ):
        second = f"{cap}: could not (not tried: {native_32k['reason']})"
    else:
        second = f"{cap}: n/a ({_why_not(report, 'native', 32768)})"
    lines.append(f"{first}; {second}")
    return lines


def _cell(result: dict[str, Any] | None) -> tuple[str, str]:
    if result is None:
        return "", ""
    status = result.get("status")
    if status == "ok":
        mark = "" if result.get("check", {}).get("agrees", True) else " !"
        peak = result.get("peak_mib")
        return (
            f"{1e3 * result['median_s']:,.1f}{mark}",
            f"{peak:,.0f}" if peak is not None else "?",
        )
    short = {"oom": "OOM", "timeout": "timeout", "skipped": "-", "refused": "refused"}
    return short.get(str(status), "error"), ""


def print_report(report: dict[str, Any], out: Console | None = None) -> None:
    """The results table, the notes under it and the verdicts."""
    names = [r["name"] for r in report["implementations"]]
    if out is None:
        columns = 1 + 4 * len(names)  # length; ms, MiB and two ratios per implementation
        out = Console(width=None if console.is_terminal else max(160, 11 * columns + 10))
    config = report["config"]
    load = report["load_average"]
    table = Table(
        title=f"attention, B={config['batch']} N={config['heads']} H={config['head_dim']} "
        f"{config['dtype']}, segments{', causal' if config['causal'] else ''}, "
        f"{report['platform']} ({report['date']}; median ms of {config['repeats']} calls, "
        f"{config['long_repeats']} from {config['long_from']}; peak MiB over baseline)"
    )
    table.add_column("length", justify="right")
    reference = REFERENCE_IMPLEMENTATION if REFERENCE_IMPLEMENTATION in names else None
    for name in names:
        table.add_column(f"{name}\nms", justify="right")
        table.add_column(f"{name}\nMiB", justify="right")
        if reference and name != reference:
            table.add_column("time\nvs native", justify="right")
            table.add_column("mem\nvs native", justify="right")
    for length in config["lengths"]:
        row = [str(length)]
        base = _ok(report, reference, length) if reference else None
        for name in names:
            result = report["results"][name].get(str(length))
            row.extend(_cell(result))
            if reference and name != reference:
                mine = _ok(report, name, length)
                if mine and base:
                    row.append(f"{mine['median_s'] / base['median_s']:.2f}x")
                    if base.get("peak_mib") and mine.get("peak_mib") is not None:
                        row.append(f"{mine['peak_mib'] / base['peak_mib']:.3f}x")
                    else:
                        row.append("")
                else:
                    row.extend(["", ""])
        table.add_row(*row)
    out.print(table)

    xla = Table(title="compile seconds and XLA's temp buffer (memory_analysis), MiB")
    xla.add_column("length", justify="right")
    for name in names:
        xla.add_column(f"{name}\ncompile s", justify="right")
        xla.add_column(f"{name}\nXLA temp", justify="right")
    for length in config["lengths"]:
        row = [str(length)]
        for name in names:
            mine = _ok(report, name, length)
            temp = ((mine or {}).get("xla_memory") or {}).get("temp_size_in_bytes")
            row.append(f"{mine['compile_s']:.2f}" if mine else "")
            row.append(f"{temp / MIB:,.0f}" if temp is not None else "")
        xla.add_row(*row)
    out.print(xla)

    for name in names:
        for length, result in report["results"][name].items():
            status = result.get("status")
            if status in ("oom", "timeout", "failed"):
                out.print(
                    f"{name} at {length}: {_describe_failure(result, config['address_limit_gib'])}"
                )
            elif status == "ok":
                check = result.get("check", {})
                if not check.get("agrees") or result.get("nonfinite_outputs"):
                    out.print(
                        f"[red]{name} at {length}: output check failed: max |error| vs float64 "
                        f"reference {check.get('max_abs_error_vs_float64')}, "
                        f"{result.get('nonfinite_outputs')} non-finite outputs"
                    )
    for name, reasons in report["not_run"].items():
        out.print(f"not run: {name}: {'; '.join(reasons)}")
    for name, hashes in report.get("source_changed_during_sweep", {}).items():
        out.print(
            f"[bold yellow]warning: {name}'s source file changed during the sweep "
            f"(sha256 {', '.join(hashes)}): its rows mix versions"
        )
    out.print(
        f"load average (1, 5, 15 min): start {_load(load['start'])}, end {_load(load['end'])}; "
        f"{report['host']['cpus']} CPUs"
    )
    if report["load_warning"]:
        out.print(
            f"[bold yellow]warning: the 1-minute load average exceeded {LOAD_WARNING}: other "
            "processes competed for the CPUs, so absolute times are inflated"
        )
    for line in report["verdicts"]:
        out.print(f"[bold]{line}")


def _load(values: list[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def plot_report(report: dict[str, Any], png: Path) -> None:
    """Two log-log panels, time and peak memory against length; failures marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory

    config = report["config"]
    lengths = config["lengths"]
    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(13, 5.4))
    failures: list[tuple[int, int, str, str, int | None]] = []  # index, length, label, text, asked
    for index, entry in enumerate(report["implementations"]):
        name = entry["name"]
        color = f"C{index}"
        label = name + (" (interpret)" if entry["interpret"] else "")
        rows = report["results"][name]
        ok = sorted((int(n), r) for n, r in rows.items() if r.get("status") == "ok")
        if ok:
            xs = [n for n, _ in ok]
            ax_time.plot(xs, [1e3 * r["median_s"] for _, r in ok], "o-", color=color, label=label)
            mem = [(n, r["peak_mib"]) for n, r in ok if r.get("peak_mib", 0) > 0]
            if mem:
                ax_mem.plot(*zip(*mem, strict=True), "o-", color=color, label=label)
        for n, r in rows.items():
            if r.get("status") in ("oom", "timeout", "failed"):
                text = {"oom": "OOM", "timeout": "timeout"}.get(r["status"], "error")
                failures.append((index, int(n), label, text, r.get("allocation_bytes")))
    for ax in (ax_time, ax_mem):
        ax.set_xscale("log", base=2)
        ax.set_xlim(min(lengths) / 1.4, max(lengths) * 1.4)
        ax.set_xticks(lengths, [str(n) for n in lengths], fontsize=7)
        ax.minorticks_off()
        if ax.lines:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")
    if ax_mem.lines:
        limits = [(2048.0, "2 GiB", "grey")]
        if config["address_limit_gib"]:
            cap = config["address_limit_gib"]
            limits.append((cap * 1024, f"{cap:g} GiB address-space cap (RLIMIT_AS)", "red"))
        watchdog = config["memory_limit_gib"]
        limits.append((watchdog * 1024, f"{watchdog:g} GiB RSS watchdog", "darkorange"))
        low, high = ax_mem.get_ylim()
        asked = [1.1 * f[4] / MIB for f in failures if f[4]]
        ax_mem.set_ylim(low, max(high, *(1.6 * mib for mib, _, _ in limits), *asked))
        for mib, text, color in limits:
            ax_mem.axhline(mib, color=color, ls=":", lw=1)
            ax_mem.annotate(
                text,
                (0.01, mib),
                xycoords=("axes fraction", "data"),
                fontsize=7,
                va="bottom",
                color=color,
            )
    for ax in (ax_time, ax_mem):
        ax.autoscale(False)  # the failure marks must not move the data's limits
        edge = blended_transform_factory(ax.transData, ax.transAxes)
        stacked: dict[int, int] = {}
        for index, length, label, text, asked_bytes in failures:
            color = f"C{index}"
            shift = 0
            if ax is ax_mem and asked_bytes:
                # Out of memory with a known request: mark what it asked for, in MiB.
                point, trans = (length, asked_bytes / MIB), ax.transData
                text = f"{text} (asked {asked_bytes / GIB:.1f} GiB)"
                shift = -11 * stacked.get(length, 0)  # labels at one length stack downwards
                stacked[length] = stacked.get(length, 0) + 1
            else:
                point, trans = (length, 0.95 - 0.06 * index), edge
            ax.plot(*point, "x", color=color, ms=10, mew=2.5, transform=trans)
            ax.annotate(
                f"{label}: {text}",
                point,
                xycoords=trans,
                xytext=(-9, shift),
                textcoords="offset points",
                ha="right",
                va="center",
                fontsize=8,
                color=color,
            )
    for ax, title, unit in (
        (ax_time, "median time per call (compile excluded)", "ms"),
        (ax_mem, "peak memory over the baseline process (RSS)", "MiB"),
    ):
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower right", fontsize=8)
    load = report["load_average"]
    fig.suptitle(
        f"seamline attention: B={config['batch']}, {config['heads']} heads, "
        f"head dim {config['head_dim']}, {config['dtype']}, segments"
        f"{', causal' if config['causal'] else ''}, {report['platform']} - {report['date']}, "
        f"load {load['start'][0]:.2f} -> {load['end'][0]:.2f}",
        fontsize=10,
    )
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _parse_lengths(text: str) -> list[int]:
    lengths = [int(x) for x in text.replace(" ", "").split(",") if x]
    if not lengths or min(lengths) < 1:
        raise argparse.ArgumentTypeError("lengths must be positive integers")
    return lengths


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--max-length",
        type=int,
        default=16384,
        help="longest power of two from 128 (default 16384)",
    )
    parser.add_argument("--lengths", type=_parse_lengths, help="comma-separated, overrides")
    parser.add_argument(
        "--implementations", help="comma-separated names (default: every one discovered)"
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed calls per length (default 3)")
    parser.add_argument(
        "--long-repeats",
        type=int,
        default=1,
        help="timed calls at 32768 tokens and more (default 1)",
    )
    parser.add_argument("--long-from", type=int, default=32768, help=argparse.SUPPRESS)
    parser.add_argument("--causal", action="store_true", help="causal=True (default False)")
    parser.add_argument(
        "--interpret", action="store_true", help='run interpret-mode kernels ({"interpret": true})'
    )
    parser.add_argument(
        "--interpret-max-length", type=int, default=1024, help="cap for interpret mode (1024)"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        help="seconds per worker, start-up included (default 300)",
    )
    parser.add_argument(
        "--memory-limit-gib",
        type=float,
        default=20.0,
        help="watchdog: kill a worker above this RSS (default 20)",
    )
    parser.add_argument(
        "--address-limit-gib",
        type=float,
        default=24.0,
        help="RLIMIT_AS of each worker (default 24; 0: none)",
    )
    parser.add_argument(
        "--out", type=Path, default=Path("benchmarks") / "results", help="results folder"
    )
    parser.add_argument("--no-plot", action="store_true", help="do not draw the PNG")
    parser.add_argument("--worker", nargs=2, metavar=("IMPL", "LENGTH"), help=argparse.SUPPRESS)
    parser.add_argument("--config", help=argparse.SUPPRESS)
    parser.add_argument("--probe", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        return worker_main(args)
    if args.probe:
        args.lengths = ",".join(map(str, args.lengths))
        return probe_main(args)
    if args.repeats < 1 or args.long_repeats < 1:
        parser.error("--repeats and --long-repeats must be at least 1")
    lengths = args.lengths or default_lengths(args.max_length)
    wanted = [n.strip() for n in args.implementations.split(",")] if args.implementations else None
    report = run_benchmark(
        lengths,
        wanted,
        args.repeats,
        args.out,
        causal=args.causal,
        interpret=args.interpret,
        interpret_max_length=args.interpret_max_length,
        long_repeats=args.long_repeats,
        long_from=args.long_from,
        timeout=args.timeout,
        memory_limit_gib=args.memory_limit_gib,
        address_limit_gib=args.address_limit_gib,
        plot=not args.no_plot,
    )
    print_report(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
