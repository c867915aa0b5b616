"""Precision side by side: seamline in float32, bfloat16 and auto against sentence-transformers'
CPU backends (torch float32, OpenVINO, ONNX Runtime int8), whole processes, one run.

Six sides (eight on a GPU), each a fresh process per repeat, interleaved round by round:

* ``st-float32`` -- sentence-transformers on torch, float32: the reference every ratio
  and every embedding is compared against;
* ``st-openvino`` -- sentence-transformers' OpenVINO backend in its default
  configuration (OpenVINO chooses the inference precision: bfloat16 on a CPU with
  bfloat16 instructions, float32 elsewhere; each run records what the compiled model
  says, ``INFERENCE_PRECISION_HINT``);
* ``st-onnx-int8`` -- ONNX Runtime with sentence-transformers' own dynamic int8 recipe
  (``export_dynamic_quantized_onnx_model(model, "avx512_vnni", ...)``);
* ``st-float16``, ``st-bfloat16`` (only when ``--sides`` names them: they are for a GPU,
  ``benchmarks/device_check.sh``) -- the torch model cast to that precision, on the
  device ``$SEAMLINE_REFERENCE_DEVICE`` names (as every torch side);
* ``seamline-float32``, ``seamline-bfloat16``, ``seamline-auto`` -- ``seamline run`` of
  the pipeline (``embed-docs-jsonl.yaml``) with ``--set precision=NAME``, or, before the
  pipeline has a ``precision`` field, ``--set model.with.dtype=NAME`` (no ``auto`` then:
  that side is skipped and said so). ``--seamline-flag`` chooses; by default a
  ``seamline validate`` says whether ``precision`` is known.

The reference sides run ``_precision_reference`` in ``.venv-ref``
(``bash benchmarks/throughput/make_precision_ref.sh``); their OpenVINO and ONNX models are
exported once, untimed, into the run's temporary folder, as sentence-transformers advises
(``save_pretrained`` after the first export). seamline's compile cache is filled by an
untimed run of each seamline side, and its precision gate records live in the run's
temporary folder too: ``auto``'s untimed run measures the gate on this code and this
machine (a record left in the user's cache by an earlier build of the same version
would otherwise be reused), and its timed runs reuse that record. The reference sides
embed the text of every window seamline embedded (``text[span]``), so every side embeds
the same token sequences; a window that starts inside a word re-tokenizes to other
tokens and is left out of the comparisons (and counted), as in ``whole_run``.

Per side: documents/s over the whole process (median, fastest and slowest), model
tokens/s (the reference sides' ``encode`` call; seamline's steady state from its batch
log, every batch but the first of each length), useful FLOP/s (real tokens only, counted
as ``whole_run`` counts them) as a fraction of a JAX matmul of the side's precision
measured in the same run (float32, and bfloat16 inputs with float32 accumulation, as
the model's bfloat16 matmuls); and, against ``st-float32``'s vectors of the same windows,
the largest absolute difference, the cosine (least and median) and how many of each
window's 10 nearest neighbours among all the compared windows are kept (mean and worst;
ties count as kept).

    .venv/bin/python -m benchmarks.throughput.precision [--docs N] [--repeats 3]
        [--seamline-flag {detect,precision,dtype}] [--sides a,b,...] [--matmul-size 4096]
        [--pipeline PIPELINE] [--set PATH=VALUE ...] [--out benchmarks/results]

Exit codes: 0 done; 1 a side failed (its log is printed; the others are still
measured and written); 2 ``.venv-ref`` missing or a bad option.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from benchmarks.common.corpus import first_of_bench_corpus
from benchmarks.common.model_under_test import model_under_test
from benchmarks.common.options import add_run_options, require_folder
from benchmarks.common.paths import ROOT, SEAMLINE, module_command, timed_seamline_run
from benchmarks.common.seamline_work import WEIGHTS
from benchmarks.common.tables import print_table
from benchmarks.throughput.whole_run import (
    SideFailed,
    output_suffix,
    records,
    seamline_windows,
    steady_state,
)
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.adapters.measure.repeats import interleaved, spread
from seamline.core import neighbours_kept

DEFAULT_PIPELINE = ROOT / "examples" / "pipelines" / "embed-docs-jsonl.yaml"
REFERENCE_WORKER = "benchmarks.throughput._precision_reference"
REF_PYTHON = Path(
    os.environ.get("SEAMLINE_PRECISION_REF_PYTHON", ROOT / ".venv-ref" / "bin" / "python")
)
"""The reference sides' interpreter: ``.venv-ref`` unless ``SEAMLINE_PRECISION_REF_PYTHON``."""
REF_MISSING = (
    f"error: {REF_PYTHON} is missing: the reference sides need it; create it with "
    "`bash benchmarks/throughput/make_precision_ref.sh`"
)
REFERENCE = "st-float32"
REFERENCE_SIDES = {
    "st-float32": "torch",
    "st-openvino": "openvino",
    "st-onnx-int8": "onnx-int8",
    "st-float16": "torch-float16",
    "st-bfloat16": "torch-bfloat16",
}
"""Reference side -> the backend ``_precision_reference run`` embeds with."""
EXPORTED_SIDES = ("st-openvino", "st-onnx-int8")
"""The reference sides whose models ``_precision_reference prepare`` exports first."""
GPU_SIDES = ("st-float16", "st-bfloat16")
"""Half-precision torch sides, for a GPU (``$SEAMLINE_REFERENCE_DEVICE=cuda``): run only
when ``--sides`` names them."""
SEAMLINE_SIDES = {
    "seamline-float32": "float32",
    "seamline-bfloat16": "bfloat16",
    "seamline-auto": "auto",
}
"""seamline side -> the precision it asks for."""
SIDES = (*REFERENCE_SIDES, *SEAMLINE_SIDES)
DEFAULT_SIDES = tuple(side for side in SIDES if side not in GPU_SIDES)
NEIGHBOURS = 10
ROOFLINE_PRECISIONS = ("float32", "bfloat16")
FLAG_FORMS = ("detect", "precision", "dtype")

Vectors = npt.NDArray[np.floating[Any]]


def seamline_flag(form: str, precision: str) -> str:
    """The ``--set`` override that asks seamline for ``precision``: the pipeline's own
    ``precision`` field (issue 25), or, before it, the model's ``dtype``."""
    if form != "precision":
        return f"model.with.dtype={precision}"
    if precision == "bfloat16":  # asked for by name: measured also where it is emulated
        return "precision={use: bfloat16, require_native: false}"
    return f"precision={precision}"


def detect_flag_form(pipeline: Path) -> str:
    """``precision`` if ``seamline validate`` accepts ``--set precision=float32``, else
    ``dtype`` when it says the field is unknown (raises :class:`SideFailed` otherwise)."""
    done = subprocess.run(
        [str(SEAMLINE), "validate", str(pipeline), "--set", seamline_flag("precision", "float32")],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    if done.returncode == 0:
        return "precision"
    if "unknown field 'precision'" in done.stdout + done.stderr:
        return "dtype"
    raise SideFailed(
        f"seamline validate {pipeline} exited {done.returncode}:\n{done.stderr[-3000:]}"
    )


def chosen_precision(summary: dict[str, Any], asked: str) -> str:
    """The precision a seamline run computed in, as its summary says.

    The precision decision (``precision.chosen``, at the top or in the provenance) where
    the run records one; else the dtype in its attention signatures
    (``B2xTq256...:bfloat16:segments,cpu``); else what was asked.
    """
    for record in (summary.get("precision"), (summary.get("provenance") or {}).get("precision")):
        if isinstance(record, dict) and record.get("chosen"):
            return str(record["chosen"])
    dtypes = {key.split(":")[1] for key in summary.get("attention") or {} if key.count(":") >= 2}
    if len(dtypes) == 1:
        return str(dtypes.pop())
    return asked


def run_seamline(
    precision: str,
    form: str,
    corpus: Path,
    out: Path,
    cache: Path,
    pipeline: Path,
    overrides: Sequence[str],
    records: Path,
) -> dict[str, Any]:
    """One ``seamline run`` asking for ``precision``, timed from start to exit; its figures.

    ``cache``: the compile cache; ``records``: the precision gate's records.
    """
    env = {
        **os.environ,
        "SEAMLINE_CORPUS": str(corpus),
        "SEAMLINE_CACHE_DIR": str(cache),
        "SEAMLINE_PRECISION_DIR": str(records),
    }
    settings = [
        seamline_flag(form, precision),
        f"sink.with.path={out}",
        "monitors.0.with.every=1",  # every batch in the log, for the steady state
        *overrides,
    ]
    seconds, done = timed_seamline_run(
        pipeline, settings, env, flags=("--format", "json"), failure=SideFailed
    )
    events = [json.loads(line) for line in done.stderr.splitlines() if line.startswith("{")]
    summary: dict[str, Any] = next(
        (json.loads(line) for line in reversed(done.stdout.splitlines()) if line.startswith("{")),
        {},
    )
    return {
        "seconds": seconds,
        "precision": chosen_precision(summary, precision),
        "precision_decision": summary.get("precision")
        or (summary.get("provenance") or {}).get("precision"),
        "path": str(out),
        **steady_state(events),
    }


def run_reference(backend: str, texts: Path, out: Path, models: Path) -> dict[str, Any]:
    """One whole sentence-transformers process with ``backend``, timed from start to exit."""
    return {
        "path": str(out),
        **_reference_process("run", backend, str(texts), str(out), "--models", str(models)),
    }


def prepare_references(models: Path) -> dict[str, Any]:
    """Export the OpenVINO model and the int8 ONNX model into ``models`` (untimed)."""
    return _reference_process("prepare", str(models))


def _reference_process(*arguments: str) -> dict[str, Any]:
    started = time.perf_counter()
    done = subprocess.run(
        module_command(REFERENCE_WORKER, *arguments, python=REF_PYTHON),
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SideFailed(
            f"the reference ({' '.join(arguments[:2])}) exited {done.returncode}:\n"
            f"{done.stderr[-3000:]}"
        )
    reported: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {"seconds": seconds, **reported}


def matmul_rate(precision: str, size: int, repeats: int = 5) -> float:
    """GFLOP/s of a ``size``-cubed matmul in JAX, in a process of its own: float32 at full
    precision (as the model's float32 matmuls ask: on a GPU JAX's default rounds float32
    inputs to TF32, which would overstate the roofline; on a CPU the two are the same), or
    bfloat16 inputs accumulated in float32 (as the model's bfloat16 matmuls are)."""
    full = ", precision='highest'" if precision == "float32" else ""
    code = (
        "import time, jax, jax.numpy as jnp\n"
        f"a = jnp.ones(({size}, {size}), jnp.{precision})\n"
        f"f = jax.jit(lambda x: jnp.matmul(x, x, preferred_element_type=jnp.float32{full}))\n"
        "f(a).block_until_ready()\n"
        "best = float('inf')\n"
        f"for _ in range({repeats}):\n"
        "    t = time.perf_counter(); f(a).block_until_ready()\n"
        "    best = min(best, time.perf_counter() - t)\n"
        f"print(2 * {size}**3 / best / 1e9)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def agreement(reference: Vectors, other: Vectors, k: int = NEIGHBOURS) -> dict[str, Any]:
    """How far ``other``'s vectors are from ``reference``'s, row by row and for retrieval:
    the largest absolute difference of any component, the cosine of each row's two
    vectors (least and median), and the neighbours kept, as the precision gate counts
    them (``seamline.core.precision.gate.neighbours_kept``: ties count as kept)."""
    a, b = np.asarray(reference, np.float64), np.asarray(other, np.float64)
    if a.shape != b.shape or a.shape[0] < 2:
        raise ValueError(f"cannot compare {a.shape} with {b.shape}")
    cosine = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    k = min(k, a.shape[0] - 1)
    kept = neighbours_kept(a, b, k)
    return {
        "windows": int(a.shape[0]),
        "max_abs_difference": float(np.max(np.abs(a - b))),
        "cosine_min": float(cosine.min()),
        "cosine_median": float(np.median(cosine)),
        "neighbours": k,
        "neighbours_kept_mean": float(kept.mean()),
        "neighbours_kept_min": float(kept.min()),
    }


def ordered_vectors(output: list[dict[str, Any]], keys: list[tuple[str, int]]) -> Vectors:
    """A seamline run's vectors in the order of ``keys`` (document id, window index)."""
    found = {(r["id"], r["window"]): r["embedding"] for r in output}
    if set(found) != set(keys) or len(found) != len(keys):
        raise SideFailed(f"the run wrote {len(found)} windows, not the {len(keys)} expected")
    return np.asarray([found[key] for key in keys], np.float64)


def cpu_bf16_flags() -> list[str]:
    """The CPU's bfloat16, VNNI and AMX instruction flags (/proc/cpuinfo), for the record."""
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return []
    flags = next(
        (line.split(":", 1)[1].split() for line in text.splitlines() if line.startswith("flags")),
        [],
    )
    return sorted(f for f in flags if "bf16" in f or "vnni" in f or f.startswith(("amx", "avx512")))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_run_options(
        parser, DEFAULT_PIPELINE, "the pipeline seamline runs (its sink must be readable back)"
    )
    parser.add_argument(
        "--seamline-flag",
        choices=FLAG_FORMS,
        default="detect",
        help="how seamline is asked for a precision: --set precision=NAME, --set "
        "model.with.dtype=NAME (no auto side), or detect (precision if seamline knows it)",
    )
    parser.add_argument(
        "--sides",
        default=",".join(DEFAULT_SIDES),
        help=f"comma-separated sides to run (default all but {', '.join(GPU_SIDES)}, which "
        f"are for a GPU; {REFERENCE} always runs)",
    )
    parser.add_argument("--matmul-size", type=int, default=4096, help="the roofline's matmul")
    args = parser.parse_args(argv)
    if args.repeats < 1 or (args.docs is not None and args.docs < 2) or args.matmul_size < 64:
        parser.error("--repeats must be at least 1, --docs 2, --matmul-size 64")
    require_folder(args.out)
    chosen = [side.strip() for side in args.sides.split(",") if side.strip()]
    unknown = sorted(set(chosen) - set(SIDES))
    if unknown:
        parser.error(f"unknown sides {', '.join(unknown)}; the sides are {', '.join(SIDES)}")
    args.sides = [side for side in SIDES if side in chosen or side == REFERENCE]
    if not REF_PYTHON.is_file():
        print(REF_MISSING, file=sys.stderr)
        return 2
    args.model = model_under_test(args.pipeline, args.overrides)
    from seamline.components.models.weights import resolve_source

    if args.model.checkpoint != resolve_source(WEIGHTS):  # the reference sides' checkpoint
        print(
            f"error: {args.pipeline} embeds with {args.model.checkpoint}; the reference sides "
            "run all-MiniLM-L6-v2 only: use a pipeline of that model",
            file=sys.stderr,
        )
        return 2
    try:
        return measure_all(args)
    except SideFailed as failure:
        print(f"error: {failure}", file=sys.stderr)
        return 1


def measure_all(args: argparse.Namespace) -> int:
    load = LoadAverages()
    form = detect_flag_form(args.pipeline) if args.seamline_flag == "detect" else args.seamline_flag
    skipped: dict[str, str] = {}
    if form == "dtype" and "seamline-auto" in args.sides:
        args.sides.remove("seamline-auto")
        skipped["seamline-auto"] = (
            "seamline asked through model.with.dtype, which has no auto: the pipeline's "
            "precision field is not available (--seamline-flag dtype)"
        )
        say_to_stderr(f"seamline-auto skipped: {skipped['seamline-auto']}")
    suffix = output_suffix(args.pipeline)
    failures: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="seamline-precision-") as tmp:
        workdir = Path(tmp)
        corpus, documents = first_of_bench_corpus(args.docs, workdir)
        cache, models = workdir / "compile-cache", workdir / "models"

        def seamline(side: str, name: str) -> dict[str, Any]:
            out = workdir / f"{name}{suffix}"
            result = run_seamline(
                SEAMLINE_SIDES[side],
                form,
                corpus,
                out,
                cache,
                args.pipeline,
                args.overrides,
                records=workdir / "precision-records",
            )
            # As it happens, not only in the report: a run cut short by a time limit (a
            # device lease) still says what each side chose and where the time went.
            say_to_stderr(f"  {name}: {result['seconds']:.1f} s, ran in {result['precision']}")
            return result

        say_to_stderr(
            f"{documents} documents; seamline asked with --set "
            f"{seamline_flag(form, 'NAME')}; untimed runs to fill the compile cache"
        )
        warmups = {"seamline-float32": seamline("seamline-float32", "warmup-seamline-float32")}
        for side in args.sides:
            if side in SEAMLINE_SIDES and side not in warmups:
                try:
                    warmups[side] = seamline(side, f"warmup-{side}")
                except SideFailed as failure:
                    failures[side] = str(failure)
        output = records(Path(warmups["seamline-float32"]["path"]))
        windows, lengths, comparable = seamline_windows(corpus, output, args.model)
        texts = workdir / "texts.json"
        texts.write_text(json.dumps(windows), encoding="utf-8")
        prepared: dict[str, Any] = {}
        if any(side in EXPORTED_SIDES for side in args.sides):
            say_to_stderr("exporting the OpenVINO and int8 ONNX models (untimed)")
            prepared = prepare_references(models)

        def run(side: str) -> dict[str, Any]:
            if side in failures:
                return {"seconds": float("nan")}
            try:
                if side in REFERENCE_SIDES:
                    out = workdir / f"{side}.npy"
                    return run_reference(REFERENCE_SIDES[side], texts, out, models)
                return seamline(side, side)
            except SideFailed as failure:
                if side == REFERENCE:
                    raise
                failures[side] = str(failure)
                say_to_stderr(f"{side} failed; its other repeats are skipped")
                return {"seconds": float("nan")}

        rates = {p: [matmul_rate(p, args.matmul_size)] for p in ROOFLINE_PRECISIONS}
        sides = [side for side in args.sides if side not in failures]
        results = interleaved(sides, args.repeats, run, load, pause=1.0)
        for precision in ROOFLINE_PRECISIONS:
            rates[precision].append(matmul_rate(precision, args.matmul_size))
        keys = [(r["id"], r["window"]) for r in output]
        accuracy = compare_sides(results, keys, comparable, failures)
        load.finish()
    report = build_report(
        args, form, documents, windows, lengths, comparable, results, rates, accuracy, load
    )
    report.update(prepared=prepared, warmup=warmups, skipped=skipped, failed=failures)
    print_report(report)
    path = write_json(args.out / "precision.json", report)
    say_to_stderr(f"wrote {path}")
    for side, message in failures.items():
        print(f"error: {side} failed: {message}", file=sys.stderr)
    return 1 if failures else 0


def compare_sides(
    results: dict[str, list[dict[str, Any]]],
    keys: list[tuple[str, int]],
    comparable: list[bool],
    failures: dict[str, str],
) -> dict[str, dict[str, Any]]:
    """Each side's vectors of its last repeat against the reference's, over the windows
    whose text re-tokenizes to seamline's tokens."""
    mask = np.asarray(comparable)
    reference = np.load(results[REFERENCE][-1]["path"]).astype(np.float64)[mask]
    found: dict[str, dict[str, Any]] = {}
    for side, runs in results.items():
        if side in failures or side == REFERENCE:
            continue
        path = Path(runs[-1]["path"])
        if side in REFERENCE_SIDES:
            vectors = np.load(path).astype(np.float64)
        else:
            try:
                vectors = ordered_vectors(records(path), keys)
            except SideFailed as failure:
                failures[side] = str(failure)
                continue
        found[side] = agreement(reference, vectors[mask])
    return found


def build_report(
    args: argparse.Namespace,
    form: str,
    documents: int,
    windows: list[str],
    lengths: list[int],
    comparable: list[bool],
    results: dict[str, list[dict[str, Any]]],
    rates: dict[str, list[float]],
    accuracy: dict[str, dict[str, Any]],
    load: LoadAverages,
) -> dict[str, Any]:
    tokens, flops = sum(lengths), args.model.useful_flops(lengths)
    roofline = {precision: max(values) for precision, values in rates.items()}
    sides: dict[str, Any] = {}
    for side, all_runs in results.items():
        runs = [r for r in all_runs if r["seconds"] == r["seconds"]]  # NaN: a failed repeat
        if not runs:
            continue
        times = spread([r["seconds"] for r in runs])
        if side in REFERENCE_SIDES:
            model_rates = [tokens / r["encode_seconds"] for r in runs]
        else:
            model_rates = [r["steady_tokens_per_s"] for r in runs if r["steady_tokens_per_s"]]
        model_tokens_per_s = statistics.median(model_rates) if model_rates else None
        precision = runs[-1].get("precision")
        useful = (model_tokens_per_s or 0.0) * flops / tokens / 1e9
        sides[side] = {
            "precision": precision,
            **times,
            "docs_per_s": documents / times["median_s"],
            "model_tokens_per_s": model_tokens_per_s,
            "useful_gflops_model": useful,
            "of_roofline": useful / roofline[precision] if precision in roofline else None,
            "accuracy": accuracy.get(side),
            "runs": runs,
        }
    if REFERENCE in sides:
        reference = sides[REFERENCE]
        for side in sides.values():
            side["vs_reference"] = side["docs_per_s"] / reference["docs_per_s"]
            if side["model_tokens_per_s"] and reference["model_tokens_per_s"]:
                side["model_vs_reference"] = (
                    side["model_tokens_per_s"] / reference["model_tokens_per_s"]
                )
    return {
        "benchmark": "precision",
        "command": " ".join(["python -m benchmarks.throughput.precision", *sys.argv[1:]]),
        "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "pipeline": str(args.pipeline),
        "seamline_flag": seamline_flag(form, "NAME"),
        "documents": documents,
        "windows": len(windows),
        "windows_compared": sum(comparable),
        "windows_left_out": len(windows) - sum(comparable),
        "tokens": tokens,
        "useful_gflop": flops / 1e9,
        "matmul_size": args.matmul_size,
        "matmul_gflops": rates,
        "roofline_gflops": roofline,
        "cpu_flags": cpu_bf16_flags(),
        "sides": sides,
        "load": load.as_json(),
        "load_warning": load.exceeded,
        "host": host_info(),
        "versions": versions("jax", "jaxlib", "seamline-cpu-flash"),
    }


def print_report(report: dict[str, Any]) -> None:
    speed, close = [], []
    for name, side in report["sides"].items():
        rate, share = side["model_tokens_per_s"], side["of_roofline"]
        speed.append((
            name,
            str(side["precision"]),
            f"{side['median_s']:.1f} ({side['min_s']:.1f}-{side['max_s']:.1f})",
            f"{side['docs_per_s']:.1f}",
            f"{side.get('vs_reference', 0):.2f}x",
            f"{rate:,.0f}" if rate else "-",
            f"{side['useful_gflops_model']:.0f}" + (f" ({share:.0%})" if share else ""),
        ))  # fmt: skip
        found = side["accuracy"]
        if found:
            close.append((
                name,
                f"{found['max_abs_difference']:.2e}",
                f"{found['cosine_min']:.6f}",
                f"{found['cosine_median']:.7f}",
                f"{found['neighbours_kept_mean']:.1%} ({found['neighbours_kept_min']:.0%})",
            ))  # fmt: skip
    roofline = ", ".join(f"{p} {g:.0f}" for p, g in report["roofline_gflops"].items())
    print_table(
        f"{report['documents']} documents, {report['windows']} windows, {report['tokens']:,} "
        f"tokens; JAX {report['matmul_size']}^3 matmul GFLOP/s: {roofline}",
        ("side", "precision", "whole s (min-max)", "docs/s", "vs st-float32", "model tok/s",
         "useful GFLOP/s (of roofline)"),
        speed,
    )  # fmt: skip
    print_table(
        f"against {REFERENCE} over {report['windows_compared']} of {report['windows']} windows "
        f"({report['windows_left_out']} start inside a word and re-tokenize: left out)",
        ("side", "max |diff|", "cosine min", "cosine median",
         f"top-{NEIGHBOURS} kept mean (worst)"),
        close,
    )  # fmt: skip
    print(f"CPU flags for bfloat16/int8: {' '.join(report['cpu_flags']) or 'none'}")
    for line in describe_load(report["load"], report["load_warning"], os.cpu_count()):
        print(line)


if __name__ == "__main__":
    sys.exit(main())
