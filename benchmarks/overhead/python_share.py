"""Where a run's own Python time goes: a py-spy GIL profile of ``seamline run``, by kind of work.

On a 2-CPU machine XLA computes on both cores, and every second the interpreter holds
the GIL (writing records, delivering events to monitors, tokenising, dispatching
steps) is taken from them. py-spy's ``--gil`` mode samples only the thread holding
the GIL, so the samples sum to the interpreter's own time; this script sorts them by
kind of work. A sample goes to the innermost frame of its stack that one of
:data:`KINDS` names (a record written inside a monitor's event is the sink's).

Record a profile (py-spy is not a seamline dependency: ``uv tool install py-spy``, or
pip into any venv), then read it:

    SEAMLINE_CORPUS=build/corpus-bench py-spy record -r 100 --gil --threads -f raw \\
        -o gil.txt -- .venv/bin/seamline run examples/pipelines/embed-docs-jsonl.yaml \\
        --set precision=bfloat16
    .venv/bin/python -m benchmarks.overhead.python_share gil.txt [--rate 100] [--out DIR]

Exit codes: 0 done; 2 a bad option or a file that is not py-spy's raw format.
"""

from __future__ import annotations

import argparse
import datetime
import gzip
import sys
import time
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json

KINDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("writing records (sink)", ("Sink.write_rows", "write_json_line", "PublishingSink.")),
    ("delivering events to monitors", ("MonitorHub.", "_Courier.")),
    ("tokenising and batching", ("Encoder.prepare", "TokenWindows.", "HostWork.")),
    ("reading documents (loader)", ("Loader.read", "Loader._load")),
    ("dispatching steps, fetching results", ("Compiled.__call__", "device_get", "CompiledSteps.")),
    ("verifying attention", ("verification.py",)),
    (
        "compiling, compile cache",
        ("compile_or_get_cached", "compiler.py", "StepCompiler.compile ("),
    ),
    ("loading weights", ("load_params", "safetensors")),
    ("importing modules", ("_find_and_load",)),
)
"""(kind, substrings of a py-spy frame that mark it), checked in this order per frame."""
OTHER = "everything else"


def kind_of(frames: Sequence[str]) -> str:
    """The kind of the innermost frame (the stack's last) that a kind names."""
    for frame in reversed(frames):
        for kind, marks in KINDS:
            if any(mark in frame for mark in marks):
                return kind
    return OTHER


def samples_by_kind(lines: Iterable[str], where: str) -> Counter[str]:
    """Sum py-spy raw lines (``frame;frame;... COUNT``) by kind; a line that is not one
    is a ValueError naming ``where`` and its line number."""
    counts: Counter[str] = Counter()
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if not stack or not count.isdigit():
            raise ValueError(f"{where}:{number}: not a py-spy raw line (frames;... COUNT)")
        counts[kind_of(stack.split(";"))] += int(count)
    return counts


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "profile", type=Path, help="py-spy record -f raw --gil output (gzipped if it ends .gz)"
    )
    parser.add_argument("--rate", type=int, default=100, help="py-spy's -r, samples a second")
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    if args.rate < 1:
        parser.error("--rate must be at least 1")
    require_folder(args.out)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    try:
        opener = gzip.open if args.profile.suffix == ".gz" else open
        with opener(args.profile, "rt", encoding="utf-8") as lines:
            counts = samples_by_kind(lines, str(args.profile))
    except (OSError, UnicodeDecodeError, ValueError) as err:
        parser.error(str(err))
    total = sum(counts.values())
    if not total:
        parser.error(f"{args.profile}: no samples")
    kinds = [
        {"kind": kind, "samples": n, "seconds": n / args.rate, "share": n / total}
        for kind, n in counts.most_common()
    ]
    print_table(
        f"the interpreter's own time, {total / args.rate:.1f} s ({total} samples at {args.rate}/s)",
        ("kind of work", "seconds", "share"),
        [(k["kind"], f"{k['seconds']:.2f}", f"{k['share']:.0%}") for k in kinds],
    )
    report = {
        "benchmark": "python_share",
        "profile": args.profile.name,
        "rate": args.rate,
        "seconds": total / args.rate,
        "kinds": kinds,
        **run_context(started_at, started, LoadAverages()),
    }
    print(f"wrote {write_json(args.out / 'python_share.json', report)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
