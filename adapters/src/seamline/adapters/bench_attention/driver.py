"""The attention benchmark's driver: probe the registry, run every worker under watch, report.

Every (implementation, length) is measured in a fresh worker process
(:mod:`seamline.adapters.bench_attention.worker`), one after another, so that each owns
the memory it measures. The driver decides which cells run (``supports()`` answers, the
interpret-mode cap, and no longer lengths after an implementation ran out of memory or
time), watches each worker's memory and time with psutil, samples the load average,
and writes ``attention.json`` (and the PNG) with everything it saw.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from seamline.adapters.bench_attention.lifeline import dies_with_this_process
from seamline.adapters.bench_attention.report import describe_failure, peak_text, verdicts
from seamline.adapters.bench_attention.workload import (
    BATCH,
    DEFAULT_DTYPE,
    FAILED_STATUSES,
    GIB,
    HEAD_DIM,
    HEADS,
    MIB,
    PAD_FRACTION,
    REFERENCE_IMPLEMENTATION,
    ROOT,
    SYSTEM_RESERVE_GIB,
)
from seamline.adapters.measure.host import host_info
from seamline.adapters.measure.load import LoadAverages, load_now
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import Say

WORKER_MODULE = "seamline.adapters.bench_attention.worker"
"""Run with ``python -m``; named, not imported, so the driver's process stays light."""
MEASURE = [sys.executable, "-m", WORKER_MODULE, "measure"]
POLL_SECONDS = 0.05
PAUSE_SECONDS = 0.5
"""Quiet time before each worker, so the previous one's threads and pages are gone."""
SETUP_TIMEOUT_S = 300.0
"""The probe and the baselines get at least this long: they do not measure an attention."""
PROBE_MEMORY_LIMIT_GIB = 8.0

console = Console(stderr=True, width=None if sys.stderr.isatty() else 160)


@dataclass(frozen=True)
class Limits:
    """How long and how large one worker may grow before the watchdog kills it."""

    timeout: float
    memory_limit_gib: float


def _watchdog(rss: int, available: int, elapsed: float, limits: Limits) -> dict[str, Any] | None:
    """Why a worker must be killed now (its RSS, the machine's memory, time), or None."""
    if rss > limits.memory_limit_gib * GIB:
        return {
            "status": "oom",
            "error": f"RSS {rss / GIB:.1f} GiB passed --memory-limit-gib "
            f"{limits.memory_limit_gib:g} (killed by the watchdog)",
            "limit_gib": limits.memory_limit_gib,
        }
    if available < SYSTEM_RESERVE_GIB * GIB:
        return {
            "status": "oom",
            "error": f"the machine had {available / GIB:.2f} GiB available left at "
            f"RSS {rss / GIB:.1f} GiB (killed by the watchdog to spare other processes)",
            "limit_gib": round(rss / GIB, 1),
        }
    if elapsed > limits.timeout:
        return {"status": "timeout", "error": f"still running after {limits.timeout:g} s"}
    return None


def run_watched(argv: list[str], limits: Limits, log: Path) -> dict[str, Any]:
    """Run one worker under the psutil watchdog; return its JSON line or what went wrong."""
    import psutil  # type: ignore[import-untyped]

    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with tempfile.TemporaryFile("w+") as stdout, log.open("w") as stderr:
        started = time.perf_counter()
        process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env=env,
            stdout=stdout,
            stderr=stderr,
            preexec_fn=dies_with_this_process(),  # and if the driver is killed outright
        )
        watched = psutil.Process(process.pid)
        sampled_peak = 0
        killed: dict[str, Any] | None = None
        try:
            while process.poll() is None:
                try:
                    rss = watched.memory_info().rss
                except psutil.Error:
                    rss = 0
                sampled_peak = max(sampled_peak, rss)
                available = psutil.virtual_memory().available
                killed = _watchdog(rss, available, time.perf_counter() - started, limits)
                if killed:
                    break
                time.sleep(POLL_SECONDS)
        finally:  # the watchdog's kill, or a stop's (Ctrl-C, SIGTERM): no worker outlives it
            _end(process)
        wall = time.perf_counter() - started
        stdout.seek(0)
        lines = [line for line in stdout.read().splitlines() if line.startswith("{")]
    common = {
        "wall_s": wall,
        "sampled_peak_rss_bytes": sampled_peak,
        "load_average_after": load_now(),
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


def _end(process: subprocess.Popen[Any]) -> None:
    """Kill ``process`` unless it has ended, and wait for it.

    A stop of the driver (a SIGTERM, a Ctrl-C sent to it alone) left the loop of
    :func:`run_watched` without a kill: the worker ran on, adopted by init, with no
    watchdog and no timeout (those were the driver's).
    """
    if process.poll() is None:
        process.kill()
    process.wait()


def probe(
    lengths: Sequence[int],
    causal: bool,
    log_dir: Path,
    timeout: float,
    masked: bool = True,
    dtype: str = DEFAULT_DTYPE,
) -> dict[str, Any]:
    """Ask a worker process what the registry holds and what each attention supports."""
    argv = [sys.executable, "-m", WORKER_MODULE, "probe", "--lengths", ",".join(map(str, lengths))]
    if causal:
        argv.append("--causal")
    if not masked:
        argv.append("--no-mask")
    argv += ["--dtype", dtype]
    result = run_watched(argv, Limits(timeout, PROBE_MEMORY_LIMIT_GIB), log_dir / "probe.log")
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


def _not_planned(run: dict[str, Any], length: int) -> dict[str, Any]:
    """The cell of a length the plan left out: beyond the interpret cap, or refused."""
    if run["max_length_cap"] and length > run["max_length_cap"]:
        reason = f"interpret mode capped at {run['max_length_cap']}"
    else:
        reason = "; ".join(run["refused_lengths"].get(str(length), ["not asked"]))
    return {"status": "skipped", "reason": reason}


def _after_running_out(
    rows: dict[str, dict[str, Any]], lengths: Sequence[int], length: int
) -> dict[str, Any] | None:
    """A skipped cell if a shorter length already ran out of memory or time; else None."""
    failed = [
        (n, rows[str(n)])
        for n in lengths
        if n < length and rows.get(str(n), {}).get("status") in ("oom", "timeout")
    ]
    if not failed:
        return None
    n, earlier = failed[-1]
    return {"status": "skipped", "reason": f"{earlier['status']} at {n} already"}


def _progress_line(name: str, result: dict[str, Any], address_limit_gib: float) -> str:
    if result.get("status") != "ok":
        return f"  {name:<12} {describe_failure(result, address_limit_gib)}"
    check = result.get("check", {})
    flag = "" if check.get("agrees") and not result["nonfinite_outputs"] else "  [red]!"
    temp = (result.get("xla_memory") or {}).get("temp_size_in_bytes")
    return (
        f"  {name:<12} {1e3 * result['median_s']:>10,.1f} ms  "
        f"peak {peak_text(result.get('peak_mib')):>9} MiB  "
        f"XLA temp {temp / MIB if temp is not None else float('nan'):>9,.0f} MiB  "
        f"compile {result['compile_s']:.2f} s  "
        f"err {check.get('max_abs_error_vs_float64')}{flag}"
    )


@dataclass(frozen=True)
class Sweep:
    """What one sweep measures and under which limits: the options of the command."""

    lengths: tuple[int, ...]
    implementations: tuple[str, ...] | None
    repeats: int
    causal: bool
    masked: bool
    dtype: str
    interpret: bool
    interpret_max_length: int
    long_repeats: int
    long_from: int
    timeout: float
    memory_limit_gib: float
    address_limit_gib: float

    def repeats_at(self, length: int) -> int:
        """Timed calls at ``length``: fewer from ``long_from`` tokens on (each takes long)."""
        return self.long_repeats if length >= self.long_from else self.repeats

    def worker_flags(self) -> list[str]:
        """The options every ``measure`` worker of this sweep is started with."""
        flags = ["--address-limit-gib", str(self.address_limit_gib)]
        if self.causal:
            flags.append("--causal")
        if not self.masked:
            flags.append("--no-mask")
        flags += ["--dtype", self.dtype]
        return flags

    def record(self) -> dict[str, Any]:
        """The ``config`` of ``attention.json``: the workload, the options and the method."""
        return {
            "lengths": list(self.lengths),
            "batch": BATCH,
            "heads": HEADS,
            "kv_heads": HEADS,
            "head_dim": HEAD_DIM,
            "dtype": self.dtype,
            "causal": self.causal,
            "segments": (
                f"real tokens 1, the last {PAD_FRACTION:.0%} (at least 1) padding 0"
                if self.masked
                else "none (no mask)"
            ),
            "repeats": self.repeats,
            "long_repeats": self.long_repeats,
            "long_from": self.long_from,
            "interpret": self.interpret,
            "interpret_max_length": self.interpret_max_length,
            "timeout_s": self.timeout,
            "memory_limit_gib": self.memory_limit_gib,
            "address_limit_gib": self.address_limit_gib,
            "system_reserve_gib": SYSTEM_RESERVE_GIB,
            "peak_memory": "worker peak RSS (VmHWM) minus the same-length baseline worker's peak "
            "(baseline: imports, registry, inputs on the device, one trivial jitted op)",
            "timing": "AOT-compiled jit of the attention, one warm-up call, then the median of "
            "the timed calls, each up to block_until_ready()",
        }


@dataclass
class Cells:
    """What the workers measured: each implementation's cell per length, the baselines, and
    the load after each length."""

    results: dict[str, dict[str, dict[str, Any]]]
    baselines: dict[str, dict[str, Any]]
    loads: dict[str, list[float]]


def run_benchmark(
    lengths: Sequence[int],
    implementations: Sequence[str] | None = None,
    repeats: int = 3,
    out_dir: Path = Path("benchmarks") / "results",
    *,
    causal: bool = False,
    masked: bool = True,
    dtype: str = DEFAULT_DTYPE,
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
    ``dtype`` is that of q, k and v (one of ``DTYPES``).
    """
    say = log or console.print
    sweep = Sweep(
        tuple(sorted(set(lengths))),
        tuple(implementations) if implementations else None,
        repeats,
        causal,
        masked,
        dtype,
        interpret,
        interpret_max_length,
        long_repeats,
        long_from,
        timeout,
        memory_limit_gib,
        address_limit_gib,
    )
    out_dir.mkdir(parents=True, exist_ok=True)
    load = LoadAverages(say=say)
    started = datetime.datetime.now(datetime.UTC)
    sweep_started = time.perf_counter()
    log_dir = Path(tempfile.mkdtemp(prefix="seamline-attention-bench-"))
    say(f"probing the registry and supports() (worker logs in {log_dir})...")
    probed = probe(sweep.lengths, causal, log_dir, max(timeout, SETUP_TIMEOUT_S), masked, dtype)
    say(f"platform {probed['platform']} ({probed['device_kind']})")
    try:
        runs, skipped = _plan(probed, sweep, say)
    except NotRegistered:
        shutil.rmtree(log_dir, ignore_errors=True)  # nothing ran: no log worth keeping
        raise
    cells = _measure_every_length(sweep, runs, log_dir, load, say)
    load.finish()
    report = _report(sweep, probed, runs, skipped, cells, load, started)
    report["wall_s"] = time.perf_counter() - sweep_started
    for name, hashes in report["source_changed_during_sweep"].items():
        say(f"[yellow]warning: {name}'s source changed during the sweep ({len(hashes)} versions)")
    _tidy_logs(report, log_dir, say)
    say(f"wrote {write_json(out_dir / 'attention.json', report)}")
    if plot:
        _draw(report, out_dir / "attention.png", say)
    return report


def _tidy_logs(report: dict[str, Any], log_dir: Path, say: Say) -> None:
    """Remove the worker logs of a sweep whose workers all did their job (each sweep left a
    folder in the temporary directory, hundreds of them built up), and their paths from
    the report; keep them, and say where, when a worker failed, so its log can be read.
    A sweep that stops on an exception keeps them too: its first line named the folder."""
    rows = report["results"].values()
    cells = [*report["baselines"].values(), *(cell for row in rows for cell in row.values())]
    failed = sum(cell.get("status") in FAILED_STATUSES for cell in cells)
    if failed:
        say(f"[yellow]worker logs kept in {log_dir} ({failed} worker(s) failed)")
        return
    shutil.rmtree(log_dir, ignore_errors=True)
    for cell in cells:
        cell.pop("log", None)


class NotRegistered(ValueError):
    """``--implementations`` names an attention no entry point registers: a usage error,
    raised before anything is measured or written. It was a "not run" line and an empty
    sweep written over the last results (``benchmarks/results/attention.json`` by
    default), exit code 1."""

    def __init__(self, unknown: Sequence[str], known: Sequence[str]) -> None:
        from seamline.core import did_you_mean

        names = ", ".join(f"{n!r}{did_you_mean(n, known)}" for n in unknown)
        super().__init__(
            f"--implementations: no attention registered as {names}; registered: "
            f"{', '.join(known) or 'none'}"
        )


def _plan(
    probed: dict[str, Any], sweep: Sweep, say: Say
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The implementations that run, and why every other one does not; said as it goes."""
    runs, skipped = plan_implementations(
        probed, sweep.implementations, sweep.lengths, sweep.interpret, sweep.interpret_max_length
    )
    for name, reasons in skipped.items():
        say(f"  not run: {name}: {'; '.join(reasons)}")
    if sweep.implementations:
        known = sorted(e["name"] for e in probed["entries"])
        unknown = sorted(set(sweep.implementations) - set(known))
        if unknown:
            raise NotRegistered(unknown, known)
    say(f"  running: {', '.join(r['name'] for r in runs) or 'nothing'}")
    return runs, skipped


def _measure_every_length(
    sweep: Sweep, runs: list[dict[str, Any]], log_dir: Path, load: LoadAverages, say: Say
) -> Cells:
    """Every length in turn: its baseline, then each implementation planned there."""
    cells = Cells({r["name"]: {} for r in runs}, {}, {})
    for length in sweep.lengths:
        todo = _due_at(length, sweep, runs, cells.results)
        if not todo:
            continue
        time.sleep(PAUSE_SECONDS)
        cells.baselines[str(length)] = baseline = _baseline(sweep, length, log_dir, say)
        for run in todo:
            time.sleep(PAUSE_SECONDS)
            result = _measure_cell(sweep, run, length, baseline, log_dir)
            cells.results[run["name"]][str(length)] = result
            say(_progress_line(run["name"], result, sweep.address_limit_gib))
        cells.loads[str(length)] = load.after_round()
    return cells


def _due_at(
    length: int,
    sweep: Sweep,
    runs: list[dict[str, Any]],
    results: dict[str, dict[str, dict[str, Any]]],
) -> list[dict[str, Any]]:
    """The implementations to measure at ``length``; the others get their skipped cell."""
    todo = []
    for run in runs:
        rows = results[run["name"]]
        if length not in run["lengths"]:
            rows[str(length)] = _not_planned(run, length)
        elif skip := _after_running_out(rows, sweep.lengths, length):
            rows[str(length)] = skip
        else:
            todo.append(run)
    return todo


def _baseline(sweep: Sweep, length: int, log_dir: Path, say: Say) -> dict[str, Any]:
    """The worker that does everything but the attention at ``length``: the memory floor."""
    baseline = run_watched(
        [*MEASURE, "baseline", str(length), *sweep.worker_flags()],
        Limits(max(sweep.timeout, SETUP_TIMEOUT_S), sweep.memory_limit_gib),
        log_dir / f"baseline-{length}.log",
    )
    rss = baseline.get("peak_rss_bytes")
    described = f"{rss / MIB:,.0f} MiB" if rss else describe_failure(baseline, 0)
    say(f"length {length:>6}: baseline {described}")
    return baseline


def _measure_cell(
    sweep: Sweep, run: dict[str, Any], length: int, baseline: dict[str, Any], log_dir: Path
) -> dict[str, Any]:
    """One implementation at one length in its own worker; its peaks over the baseline's."""
    name = run["name"]
    argv = [*MEASURE, name, str(length), "--repeats", str(sweep.repeats_at(length))]
    argv += sweep.worker_flags()
    if run["config"]:
        argv += ["--config", json.dumps(run["config"])]
    limits = Limits(sweep.timeout, sweep.memory_limit_gib)
    result = run_watched(argv, limits, log_dir / f"{name}-{length}.log")
    base_rss = baseline.get("peak_rss_bytes")
    if result.get("status") == "ok" and base_rss:
        result["peak_mib"] = (result["peak_rss_bytes"] - base_rss) / MIB
        result["compile_peak_mib"] = (result["rss_after_compile_bytes"] - base_rss) / MIB
    return result


def _report(
    sweep: Sweep,
    probed: dict[str, Any],
    runs: list[dict[str, Any]],
    skipped: dict[str, list[str]],
    cells: Cells,
    load: LoadAverages,
    started: datetime.datetime,
) -> dict[str, Any]:
    """``attention.json``: the machine, the probe, the plan, every cell, and the verdicts."""
    report: dict[str, Any] = {
        "benchmark": "attention",
        "date": started.strftime("%Y-%m-%d %H:%M UTC"),
        "finished": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "host": host_info(),
        "platform": probed["platform"],
        "device_kind": probed["device_kind"],
        "device": probed["device"],
        "versions": probed["versions"],
        "load_average": {"start": load.start, "end": load.end, "after_each_length": cells.loads},
        "load_warning": load.exceeded,
        "config": sweep.record(),
        "probe": probed["entries"],
        "implementations": [
            {k: r[k] for k in ("name", "config", "lengths", "interpret", "max_length_cap")}
            for r in runs
        ],
        "not_run": skipped,
        "source_changed_during_sweep": _sources_changed(cells.results),
        "baselines": cells.baselines,
        "results": cells.results,
    }
    report["verdicts"] = verdicts(report)
    return report


def _sources_changed(results: dict[str, dict[str, dict[str, Any]]]) -> dict[str, list[str]]:
    """Implementations whose source file changed between their cells (sha256 per cell)."""
    changed = {}
    for name, rows in results.items():
        hashes = {r["source"]["sha256"] for r in rows.values() if r.get("source")}
        if len(hashes) > 1:
            changed[name] = sorted(hashes)
    return changed


def _draw(report: dict[str, Any], png: Path, say: Callable[[str], None]) -> None:
    """The PNG, if matplotlib can draw it: the numbers matter more than the picture."""
    try:
        from seamline.adapters.bench_attention.plot import plot_report

        plot_report(report, png)
        say(f"wrote {png}")
    except Exception as error:
        say(f"[yellow]skipped the plot: {error!r}")
