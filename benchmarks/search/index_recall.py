"""Does the LanceDB index find what an exact search finds? Recall@k of the default pipeline's table.

``make run`` writes ``out/embeddings.lance`` with a vector index (see
``examples/pipelines/embed-docs.yaml``). This script embeds 100 queries with the
table's own model and attention, exactly as ``seamline search`` does, and asks the
table for the top ``k`` twice: through its vector index with the search settings the
sink recorded, and exactly (``--exact``: every row compared). It reports

* recall@k: the share of the exact top ``k`` (by document and window) that the index
  also returned, averaged over the queries, and its minimum;
* how many queries got the exact top ``k`` as a set;
* the median time of one search each way, and the load on the machine.

The queries are the first lines of 100 documents of the corpus (``build/corpus``,
evenly spaced in path order): module and function summaries and documentation
titles, questions the corpus can answer. The issue's target is recall@10 of at
least 0.95; the script says whether it is met.

    .venv/bin/python -m benchmarks.search.index_recall [--index out/embeddings.lance]
        [--corpus build/corpus] [--queries 100] [-k 10] [--out benchmarks/results]

Exit codes: 0 measured and the target met; 1 measured and the target missed; 2 no
such index or corpus (run ``make run`` first), or a bad option.
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from benchmarks.common.corpus import BUILT_CORPUS
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages, describe_load
from seamline.adapters.measure.output import write_json

if TYPE_CHECKING:
    from seamline.contracts.stored import StoredRow

TARGET = 0.95


def queries(corpus: Path, count: int) -> list[str]:
    """The first non-blank line of ``count`` documents, evenly spaced in path order."""
    files = sorted(corpus.glob("**/*.txt"))
    if not files:
        return []
    chosen = [files[i * len(files) // count] for i in range(min(count, len(files)))]
    lines = []
    for path in chosen:
        text = path.read_text(encoding="utf-8", errors="replace")
        first = next((line.strip() for line in text.splitlines() if line.strip()), path.stem)
        lines.append(first[:200])
    return lines


def table_queries(index: Path, corpus: Path, count: int) -> list[str] | None:
    """:func:`queries` for the table at ``index``; None (the error said on stderr) when the
    table or the corpus is missing: ``make run`` makes both."""
    if not index.is_dir():
        print(f"error: no LanceDB table at {index}: run `make run` first", file=sys.stderr)
        return None
    texts = queries(corpus, count)
    if not texts:
        print(f"error: no documents in {corpus}: run `make corpus` first", file=sys.stderr)
        return None
    return texts


def keys(rows: list[tuple[float, StoredRow]]) -> set[tuple[str, int]]:
    """The rows found, by document and window (scores left out: the index's may differ)."""
    return {(row.id, row.window) for _, row in rows}


def recall(found: set[tuple[str, int]], truth: set[tuple[str, int]]) -> float:
    """The share of the exact answer that the index also found (1.0 for an empty answer)."""
    return len(found & truth) / len(truth) if truth else 1.0


def measure_recall(index_path: Path, texts: list[str], k: int) -> dict[str, Any]:
    from seamline.adapters.search import QueryEncoder, open_index
    from seamline.core import Registry, user_trust

    index = open_index(index_path)
    registry = Registry.discover(user_trust())
    (reader,) = index.readers(registry)
    if not reader.filters:  # a reader with a query engine of its own: a vector index
        raise SystemExit(f"error: {index_path} is a {index.sink} index, not a LanceDB table")
    encode = QueryEncoder(registry, index)
    recalls: list[float] = []
    same = 0
    timings: dict[str, list[float]] = {"index": [], "exact": []}
    how = ""
    for text in texts:
        vector = encode(text)
        started = time.perf_counter()
        approximate = reader.nearest(vector, k)
        timings["index"].append(time.perf_counter() - started)
        started = time.perf_counter()
        exact = reader.nearest(vector, k, exact=True)
        assert approximate is not None  # a reader with a query engine answers
        assert exact is not None
        timings["exact"].append(time.perf_counter() - started)
        how = approximate.how
        found, truth = keys(approximate.rows), keys(exact.rows)
        recalls.append(recall(found, truth))
        same += found == truth
    shown = index_path.resolve()
    return {
        "index": str(shown.relative_to(ROOT) if shown.is_relative_to(ROOT) else shown),
        "searched": how,
        "settings": index.located.data["outputs"].get("index"),  # as recorded, for the report
        "queries": len(texts),
        "k": k,
        "mean_recall": statistics.fmean(recalls),
        "min_recall": min(recalls),
        "identical_top_k": same,
        "median_search_s": {side: statistics.median(times) for side, times in timings.items()},
        "attention": sorted(set(encode.chosen.values())),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, default=ROOT / "out" / "embeddings.lance")
    parser.add_argument("--corpus", type=Path, default=BUILT_CORPUS)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("-k", type=int, default=10)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.queries < 1 or args.k < 1:
        parser.error("--queries and -k must be at least 1")
    require_folder(args.out)
    texts = table_queries(args.index, args.corpus, args.queries)
    if texts is None:
        return 2
    load = LoadAverages()
    result = measure_recall(args.index, texts, args.k)
    load.finish()
    report = {
        "benchmark": "index_recall",
        "date": dt.date.today().isoformat(),
        "command": " ".join(
            [".venv/bin/python -m benchmarks.search.index_recall", *(argv or sys.argv[1:])]
        ),
        **result,
        "target": TARGET,
        "met": result["mean_recall"] >= TARGET,
        "load": {"start": load.start, "end": load.end},
        "host": host_info(),
        "versions": versions("lancedb", "pyarrow", "seamline-components", "jax"),
    }
    path = write_json(args.out / "index_recall.json", report)
    k = args.k
    print(f"{result['queries']} queries, top {k}, {result['searched']}")
    print(
        f"recall@{k}: mean {result['mean_recall']:.3f}, min {result['min_recall']:.2f}; "
        f"{result['identical_top_k']} of {result['queries']} queries got the exact top {k}"
    )
    times = result["median_search_s"]
    print(
        f"median search: {times['index'] * 1000:.1f} ms through the index, "
        f"{times['exact'] * 1000:.1f} ms exact"
    )
    verdict = "met" if report["met"] else "NOT met"
    print(f"target recall@{k} >= {TARGET}: {verdict}")
    for line in describe_load(report["load"], load.exceeded, os.cpu_count()):
        print(line)
    print(f"wrote {path}")
    return 0 if report["met"] else 1


if __name__ == "__main__":
    sys.exit(main())
