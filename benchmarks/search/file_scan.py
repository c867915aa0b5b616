"""An exact search of a file output (Parquet, JSON Lines, npy): this tree against a baseline.

::

    .venv/bin/python -m benchmarks.search.file_scan OUTPUT [OUTPUT ...] [--baseline REV]
        [--rounds 5] [--queries 1] [-k 10] [--out benchmarks/results]

An output without a query engine is scanned whole for each search. Each round runs,
for each ``OUTPUT``, one process of the baseline (``REV``'s sources, checked out into a
temporary git worktree and put first on ``PYTHONPATH``) and one of this tree, one after
the other (interleaved, so a busy machine slows both alike). A process opens the output
with :func:`seamline.api.open_index`, searches for each of ``--queries`` queries once (the
model built, the query's shape compiled, the file cached), then times each again
(``find(q, k)``, and ``find(q, k, per_document=True)``). The report
gives, for each output, the median seconds a search of each side, their spread, and the
ratio baseline / this tree; results go to ``results/file_scan.json``.

The outputs the figures in docs/python.md came from: 300,000 documents of 8 to 14 words
embedded by ``tests/golden/family/bge-cls`` (``max_length: 128``) into a parquet and a
jsonl sink (``seamline run`` of a pipeline with that model and each sink).

Exit codes: 0 measured; 2 an output that is not there, or a bad option.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json

SOURCES = ("contracts/src", "core/src", "adapters/src", "components/src")
"""The baseline's sources put first on PYTHONPATH (the attention kernels, built in place, are this
tree's: their build is not in a fresh worktree)."""
QUERIES = ("release meeting review", "python exception traceback", "vector index memory")

TIMER = """
import json, sys, time
from seamline.api import open_index
output, k, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
queries = json.loads(sys.argv[4])
timed = {"rows": [], "per_document": []}
with open_index(output) as index:
    for query in queries[:count]:  # the model built, each query's shape compiled, untimed
        first = index.find(query, k)
    for query in queries[:count]:
        for kind in ("rows", "per_document"):
            started = time.perf_counter()
            found = index.find(query, k, per_document=kind == "per_document")
            timed[kind].append(time.perf_counter() - started)
            timed.setdefault("hits_" + kind, []).append(
                [(hit.doc_id, hit.window, hit.score) for hit in found.hits]
            )
print(json.dumps({"how": first.how, **timed}))
"""


def side(python: Path, output: Path, k: int, queries: int, path: str | None) -> dict[str, Any]:
    """One process's timings (a baseline's with ``path`` first on ``PYTHONPATH``)."""
    env = dict(os.environ)
    if path is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [path, env.get("PYTHONPATH")]))
    done = subprocess.run(
        [str(python), "-c", TIMER, str(output), str(k), str(queries), json.dumps(QUERIES)],
        capture_output=True,
        text=True,
        check=False,
        env=env,
    )
    if done.returncode:
        raise SystemExit(f"a search of {output} failed: {done.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def measure(outputs: list[Path], baseline: Path, args: argparse.Namespace) -> dict[str, Any]:
    python = Path(sys.executable)
    base_path = os.pathsep.join(str(baseline / source) for source in SOURCES)
    report: dict[str, Any] = {}
    for output in outputs:
        times: dict[str, dict[str, list[float]]] = {
            "baseline": {"rows": [], "per_document": []},
            "this tree": {"rows": [], "per_document": []},
        }
        same = True
        for _ in range(args.rounds):
            old = side(python, output, args.k, args.queries, base_path)
            new = side(python, output, args.k, args.queries, None)
            same = same and all(
                old["hits_" + kind] == new["hits_" + kind] for kind in times["baseline"]
            )
            for name, found in (("baseline", old), ("this tree", new)):
                for kind in times[name]:
                    times[name][kind] += found[kind]
        report[str(output)] = {
            "how": new["how"],
            "same_hits": same,
            **{
                kind: {
                    name: {
                        "median_s": statistics.median(times[name][kind]),
                        "min_s": min(times[name][kind]),
                        "max_s": max(times[name][kind]),
                    }
                    for name in times
                }
                | {
                    "baseline_over_this": statistics.median(times["baseline"][kind])
                    / statistics.median(times["this tree"][kind])
                }
                for kind in ("rows", "per_document")
            },
        }
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("outputs", type=Path, nargs="+")
    parser.add_argument(
        "--baseline", default="main", help="the git revision to compare with (before the change)"
    )
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--queries", type=int, default=1)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.k < 1 or not 1 <= args.queries <= len(QUERIES):
        parser.error(f"--rounds and -k must be at least 1, --queries 1 to {len(QUERIES)}")
    require_folder(args.out)  # before anything else: a bad --out loses no measurement
    missing = [str(output) for output in args.outputs if not output.exists()]
    if missing:
        print(
            f"error: no output at {', '.join(missing)}: make it first (see --help)",
            file=sys.stderr,
        )
        return 2
    load = LoadAverages()
    with tempfile.TemporaryDirectory(prefix="file-scan-") as folder:
        tree = Path(folder) / "baseline"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(tree), args.baseline],
            cwd=ROOT,
            check=True,
        )
        try:
            result = measure(args.outputs, tree, args)
        finally:
            subprocess.run(
                ["git", "worktree", "remove", "--force", str(tree)], cwd=ROOT, check=False
            )
    load.finish()
    report = {
        "benchmark": "file_scan",
        "date": dt.date.today().isoformat(),
        "command": " ".join(
            [".venv/bin/python -m benchmarks.search.file_scan", *(argv or sys.argv[1:])]
        ),
        "baseline": args.baseline,
        "k": args.k,
        "rounds": args.rounds,
        "queries": args.queries,
        "outputs": result,
        "host": host_info(),
        "versions": versions("pyarrow", "numpy", "seamline-components"),
        "load": {"start": load.start, "end": load.end},
    }
    path = write_json(args.out / "file_scan.json", report)
    for output, found in result.items():
        for kind in ("rows", "per_document"):
            old, new = found[kind]["baseline"], found[kind]["this tree"]
            print(
                f"{output} ({kind}, k={args.k}, same hits: {found['same_hits']}): baseline "
                f"{old['median_s']:.2f} s, this tree {new['median_s']:.2f} s "
                f"({found[kind]['baseline_over_this']:.1f}x)"
            )
    for line in describe_load(report["load"], load.exceeded, os.cpu_count()):
        print(line)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
