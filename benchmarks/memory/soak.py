"""Soak: 200,000 short documents streamed through one ``seamline run``; is memory flat?

A pipeline that leaks a few bytes per document passes every test and every short
benchmark, then runs out of memory on the day it meets a real corpus (the story
seamline was started over: an unnoticed leak ran up the bill). This benchmark
streams many short documents through one ordinary ``seamline run`` of the default
pipeline -- its model, attention and sink; only the loader is swapped for a JSON
Lines file -- and watches the process from outside:

* **resident memory every batch**: the run logs every batch (``monitors.0.with.every=1``,
  JSON lines on stderr); on each ``batch done`` line this script reads the run's
  RSS (psutil). After warm-up (the first ``--warmup`` share of batches: imports,
  compilations, allocator pools) every reading must stay within ``--tolerance``
  (10 %) of the first reading after warm-up; the slope (MiB per 10,000 documents,
  least squares) is reported too, so a slow leak shows before it crosses the bound.
  A second thread samples RSS every 0.5 s for the whole process life, so the
  start-up and the publication at the end (the sink's commit and index builds,
  after the last batch) are seen too, though they are not judged.
* **throughput over time**: documents/s and tokens/s in 20 equal slices of the
  streaming part, and the last slice's rate against the first's after warm-up.
* **nothing lost**: the run's own reconciliation line (``read = written +
  dead-lettered + skipped by rule``) and the number of distinct ids in the
  published output are checked against the number of documents in the input.

The documents are single sentences (3 to 30 words) of the corpus ``make run``
embeds (Python's own documentation), drawn with a fixed seed, each with a unique
id. Results go to ``benchmarks/results/soak.json`` and ``soak.png`` (RSS and
throughput against documents processed).

    .venv/bin/python -m benchmarks.memory.soak [--documents 200000] [--warmup 0.05]
        [--tolerance 0.10] [--pipeline examples/pipelines/embed-docs.yaml]
        [--set PATH=VALUE ...] [--out benchmarks/results]

Exit codes: 0 memory stayed within the tolerance and nothing was lost; 1 it did not,
the run failed, or the output does not account for every document; 2 a bad option.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

from benchmarks.common.corpus import make_run_corpus
from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT, SEAMLINE
from benchmarks.common.seamline_work import SINK_SUFFIXES
from benchmarks.common.tables import print_table
from seamline.adapters.measure.host import host_info, versions
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr

PIPELINE = ROOT / "examples" / "pipelines" / "embed-docs.yaml"
SEED = 20261202
SLICES = 20
POLL_S = 0.5
MiB = 1 << 20
SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


# -- the input -----------------------------------------------------------------------------------


def sentences(corpus: Path) -> list[str]:
    """Every sentence of 3 to 30 words in the corpus, whitespace collapsed, sorted, unique."""
    found: set[str] = set()
    for path in sorted(corpus.glob("*.txt")):
        for sentence in SENTENCE_END.split(path.read_text(encoding="utf-8")):
            words = sentence.split()
            if 3 <= len(words) <= 30:
                found.add(" ".join(words))
    return sorted(found)


def short_documents(pool: Sequence[str], count: int, seed: int = SEED) -> Iterator[dict[str, str]]:
    """``count`` one-sentence documents drawn from ``pool``, ids ``soak-0000000``...

    Texts repeat (a few thousand sentences serve 200,000 documents); ids never do.
    """
    rng = random.Random(seed)
    for index in range(count):
        yield {"id": f"soak-{index:07d}", "text": rng.choice(pool)}


def write_input(path: Path, documents: Iterable[dict[str, str]]) -> int:
    """The documents as JSON lines at ``path``; how many were written."""
    count = 0
    with path.open("w", encoding="utf-8") as out:
        for document in documents:
            out.write(json.dumps(document, ensure_ascii=False) + "\n")
            count += 1
    return count


# -- watching the run ----------------------------------------------------------------------------


@dataclass
class BatchSample:
    """One ``batch done`` line of the run's log, and the run's RSS when it was read."""

    seconds: float
    """Since the process was started."""
    batch: int
    documents: int
    """Documents read and prepared when the batch was done (the producer thread runs a
    little ahead of the batches)."""
    tokens: int
    rss_bytes: int


@dataclass
class Watch:
    """What was seen of one ``seamline run``: its batches, an RSS timeline and its log."""

    batches: list[BatchSample] = field(default_factory=list)
    timeline: list[tuple[float, int]] = field(default_factory=list)
    """(seconds since start, RSS bytes) every ``POLL_S`` for the whole process life."""
    events: list[dict[str, Any]] = field(default_factory=list)
    """Every JSON log line but the batches', with ``at_seconds``: when it was read."""
    tail: list[str] = field(default_factory=list)
    """The last non-JSON lines of stderr (a failure's message)."""
    returncode: int | None = None
    seconds: float = 0.0


def rss(process: Any) -> int | None:
    """The resident set size of a psutil process, or None once it has gone."""
    import psutil  # type: ignore[import-untyped]

    try:
        return int(process.memory_info().rss)
    except psutil.Error:
        return None


def read_log(stream: IO[str], started: float, process: Any, watch: Watch) -> None:
    """Parse the run's stderr as it comes: a batch line is sampled at once, others kept."""
    for line in stream:
        now = time.perf_counter() - started
        if not line.startswith("{"):
            watch.tail = [*watch.tail[-40:], line.rstrip("\n")]
            continue
        try:
            event = json.loads(line)
        except ValueError:
            watch.tail = [*watch.tail[-40:], line.rstrip("\n")]
            continue
        if event.get("event") != "batch done":
            watch.events.append({**event, "at_seconds": now})
            continue
        resident = rss(process)
        if resident is not None:
            watch.batches.append(
                BatchSample(
                    now,
                    int(event["batch"]),
                    int(event["documents"]),
                    int(event["tokens"]),
                    resident,
                )
            )


def poll(process: Any, started: float, watch: Watch, done: threading.Event) -> None:
    """RSS every ``POLL_S`` until the run ends: start-up and publication included."""
    while not done.wait(POLL_S):
        resident = rss(process)
        if resident is not None:
            watch.timeline.append((time.perf_counter() - started, resident))


def watch_run(argv: list[str], env: dict[str, str], stdout: Path) -> Watch:
    """Run ``argv`` to its end, sampling its memory every batch and every ``POLL_S``."""
    import psutil

    watch = Watch()
    with stdout.open("w", encoding="utf-8") as out:
        started = time.perf_counter()
        child = subprocess.Popen(
            argv, env=env, cwd=ROOT, stdout=out, stderr=subprocess.PIPE, text=True
        )
        process = psutil.Process(child.pid)
        done = threading.Event()
        poller = threading.Thread(target=poll, args=(process, started, watch, done), daemon=True)
        poller.start()
        assert child.stderr is not None
        read_log(child.stderr, started, process, watch)
        watch.returncode = child.wait()
        watch.seconds = time.perf_counter() - started
        done.set()
        poller.join()
    return watch


# -- judging -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """Whether RSS stayed within ``tolerance`` of its first reading after warm-up."""

    warmup_batches: int
    first_bytes: int
    min_bytes: int
    max_bytes: int
    last_bytes: int
    drift: float
    """The largest ``|rss - first| / first`` after warm-up."""
    slope_mib_per_10k_documents: float
    tolerance: float

    @property
    def flat(self) -> bool:
        return self.drift <= self.tolerance


def judge(batches: Sequence[BatchSample], warmup: float, tolerance: float) -> Verdict:
    """Judge the RSS readings of the batches after the first ``warmup`` share of them."""
    if not 0 <= warmup < 1:
        raise ValueError(f"warmup is a share of the batches, in [0, 1), not {warmup}")
    skip = math.ceil(warmup * len(batches))
    judged = batches[skip:]
    if len(judged) < 2:
        raise ValueError(f"{len(batches)} batches leave fewer than 2 to judge after warm-up")
    first = judged[0].rss_bytes
    values = [b.rss_bytes for b in judged]
    drift = max(abs(v - first) for v in values) / first
    documents = [b.documents for b in judged]
    # The least-squares slope; 0 where the documents count never moved (linear_regression
    # refuses a constant x).
    slope = 0.0
    if len(set(documents)) > 1:
        slope = statistics.linear_regression(documents, values).slope
    return Verdict(
        skip, first, min(values), max(values), values[-1], drift, slope * 10_000 / MiB, tolerance
    )


@dataclass(frozen=True)
class Slice:
    """One of ``SLICES`` equal runs of consecutive batches: its rates."""

    first_batch: int
    last_batch: int
    documents_from: int
    documents_to: int
    documents_per_s: float
    tokens_per_s: float


def throughput(batches: Sequence[BatchSample], slices: int = SLICES) -> list[Slice]:
    """Documents/s and tokens/s over ``slices`` equal runs of batches, in order.

    A slice's time runs from the previous slice's last batch to its own last batch,
    so the slices together cover the streaming part without gaps or overlap (the
    first slice starts at the first batch: start-up and the first compilation are
    not in it).
    """
    if len(batches) < slices + 1:
        slices = max(1, len(batches) - 1)
    bounds = [round(i * (len(batches) - 1) / slices) for i in range(slices + 1)]
    result = []
    for start, end in itertools.pairwise(bounds):
        begin, finish = batches[start], batches[end]
        seconds = finish.seconds - begin.seconds
        tokens = sum(b.tokens for b in batches[start + 1 : end + 1])
        documents = finish.documents - begin.documents
        result.append(
            Slice(
                begin.batch,
                finish.batch,
                begin.documents,
                finish.documents,
                documents / seconds if seconds > 0 else 0.0,
                tokens / seconds if seconds > 0 else 0.0,
            )
        )
    return result


def compilations(watch: Watch) -> list[dict[str, Any]]:
    """Each compilation the run logged: when, how many documents had been read, its shape.

    Memory steps up when a new shape is compiled (its executable and buffers), so the
    report and the plot show where compilations fell against the RSS readings.
    """
    found = []
    for event in watch.events:
        if event.get("event") != "compiled":
            continue
        before = [b.documents for b in watch.batches if b.seconds <= event["at_seconds"]]
        found.append(
            {
                "seconds": event["at_seconds"],
                "documents": before[-1] if before else 0,
                "length": event.get("length"),
                "batch_size": event.get("batch_size"),
            }
        )
    return found


RECONCILIATION = re.compile(
    r"read (\d+) = written (\d+) \+ dead-lettered (\d+) \+ skipped by rule (\d+)"
)


def accounted(stdout: str, documents: int, output_ids: int | None) -> list[str]:
    """What does not add up: the run's reconciliation line and the output against the input.

    Every input document is valid, so all must be read and written, none set aside.
    """
    found = RECONCILIATION.search(stdout)
    if found is None:
        return ["the run printed no reconciliation line ('read N = written ...')"]
    read, written, dead, skipped = map(int, found.groups())
    problems = []
    if read != written + dead + skipped:
        problems.append(f"the run's counts do not reconcile: {found.group(0)}")
    if (read, written) != (documents, documents):
        problems.append(f"{found.group(0)}, for {documents} documents in the input")
    if output_ids is None:
        problems.append("this sink's output cannot be read back here to count its ids")
    elif output_ids != documents:
        problems.append(f"the output holds {output_ids} distinct ids, not {documents}")
    return problems


def distinct_ids(output: Path) -> int | None:
    """Distinct document ids in a run's published output, whichever sink wrote it."""
    if output.suffix == ".lance":
        import lancedb

        table = lancedb.connect(str(output.parent)).open_table(output.stem)
        return len(set(table.to_arrow().column("id").to_pylist()))
    if output.suffix == ".parquet":
        import pyarrow.parquet as pq

        return len(set(pq.read_table(output, columns=["id"]).column("id").to_pylist()))
    if output.suffix == ".jsonl":
        with output.open(encoding="utf-8") as lines:
            return len({json.loads(line)["id"] for line in lines if line.strip()})
    return None


# -- the report ----------------------------------------------------------------------------------


def plot(
    batches: Sequence[BatchSample],
    verdict: Verdict,
    slices: Sequence[Slice],
    compiled: Sequence[dict[str, Any]],
    png: Path,
) -> None:
    """RSS against documents (tolerance band, compilations marked) over throughput."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (memory, rate) = plt.subplots(2, 1, figsize=(9, 6.5), sharex=True)
    documents = [b.documents for b in batches]
    memory.plot(documents, [b.rss_bytes / MiB for b in batches], lw=0.8, label="RSS")
    first = verdict.first_bytes / MiB
    warm = batches[verdict.warmup_batches].documents
    memory.axvspan(0, warm, color="0.9", zorder=0, label="warm-up (not judged)")
    memory.axhspan(
        first * (1 - verdict.tolerance),
        first * (1 + verdict.tolerance),
        xmin=0,
        color="tab:green",
        alpha=0.12,
        label=f"±{verdict.tolerance:.0%} of the first reading after warm-up",
    )
    for index, compilation in enumerate(compiled):
        memory.axvline(
            compilation["documents"],
            color="tab:orange",
            lw=0.6,
            ls=":",
            label="a compilation" if index == 0 else None,
        )
    memory.set_ylabel("resident memory (MiB)")
    memory.set_ylim(bottom=0)
    memory.legend(loc="lower right", fontsize="small")
    memory.set_title(
        f"seamline run, {documents[-1]:,} short documents: RSS drift "
        f"{verdict.drift:.1%} after warm-up, {verdict.slope_mib_per_10k_documents:+.2f} "
        "MiB per 10k documents"
    )
    rate.stairs(
        [s.documents_per_s for s in slices],
        [slices[0].documents_from, *(s.documents_to for s in slices)],
        baseline=None,
        label="documents/s",
    )
    rate.axvspan(0, warm, color="0.9", zorder=0)
    rate.set_ylabel("documents/s (per slice)")
    rate.set_xlabel("documents read")
    rate.set_ylim(bottom=0)
    figure.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(png, dpi=110)
    plt.close(figure)


def print_report(report: dict[str, Any]) -> None:
    verdict, slices = report["verdict"], report["throughput"]
    rows = [
        ("documents", f"{report['documents']:,}"),
        ("batches (warm-up, not judged)", f"{report['batches']:,} ({verdict['warmup_batches']})"),
        ("whole run", f"{report['seconds']:.1f} s"),
        ("RSS first after warm-up", f"{verdict['first_bytes'] / MiB:.1f} MiB"),
        ("RSS min / max / last", "{:.1f} / {:.1f} / {:.1f} MiB".format(
            verdict["min_bytes"] / MiB, verdict["max_bytes"] / MiB, verdict["last_bytes"] / MiB)),
        ("largest drift", f"{verdict['drift']:.2%} (bound {verdict['tolerance']:.0%})"),
        ("slope", f"{verdict['slope_mib_per_10k_documents']:+.3f} MiB per 10,000 documents"),
        ("RSS peak, whole process life", f"{report['peak_rss_bytes'] / MiB:.1f} MiB"),
        ("compilations (after warm-up)", "{} ({})".format(
            len(report["compilations"]), report["compilations_after_warmup"])),
        ("documents/s, first slice after warm-up", f"{report['first_rate']:.1f}"),
        ("documents/s, last slice", f"{slices[-1]['documents_per_s']:.1f}"),
        ("last / first", f"{report['rate_ratio']:.2f}x"),
    ]  # fmt: skip
    print_table("soak: one seamline run, memory and throughput", ["", "value"], rows)
    load = report["load"]
    print(
        "load average (1, 5, 15 min): start {}, end {}; {} CPUs".format(
            "/".join(f"{v:.2f}" for v in load["start"]),
            "/".join(f"{v:.2f}" for v in load["end"]),
            report["host"]["cpus"],
        )
    )
    for problem in report["problems"]:
        print(f"NOT ACCOUNTED: {problem}")
    print("memory: " + ("FLAT" if verdict["flat"] else "GREW BEYOND THE BOUND"))


# -- main ----------------------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--documents", type=int, default=200_000)
    parser.add_argument("--warmup", type=float, default=0.05, help="share of batches not judged")
    parser.add_argument("--tolerance", type=float, default=0.10, help="RSS bound after warm-up")
    parser.add_argument("--pipeline", type=Path, default=PIPELINE)
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="P=V")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--keep", type=Path, help="keep the input and output in this folder")
    parser.add_argument(
        "--replot", type=Path, metavar="JSON", help="redraw the PNG of a saved soak.json, no run"
    )
    args = parser.parse_args(argv)
    if args.replot is not None:
        return replot(args.replot)
    if args.documents < 100 or not 0 <= args.warmup < 1 or args.tolerance <= 0:
        parser.error("--documents at least 100, --warmup in [0, 1), --tolerance above 0")
    if not SEAMLINE.exists():
        parser.error(f"{SEAMLINE} is missing: run 'make setup' first")
    require_folder(args.out)
    if args.keep is not None:
        return soak(args, require_folder(args.keep, "--keep"))
    with tempfile.TemporaryDirectory(prefix="seamline-soak-") as name:
        return soak(args, Path(name))


def soak(args: argparse.Namespace, workdir: Path) -> int:
    say = say_to_stderr
    load = LoadAverages()
    pool = sentences(make_run_corpus(workdir)[0])
    input_path = workdir / "soak.jsonl"
    documents = write_input(input_path, short_documents(pool, args.documents))
    say(f"{documents:,} documents from {len(pool):,} sentences -> {input_path}")
    sink = _sink_of(args.pipeline, args.overrides)
    output = workdir / "out" / f"soak{SINK_SUFFIXES.get(sink or '', '.npy')}"
    argv = [
        str(SEAMLINE), "run", str(args.pipeline),
        "--set", f"loader={{use: jsonl, with: {{path: {json.dumps(str(input_path))}}}}}",
        *(item for override in args.overrides for item in ("--set", override)),
        "--set", f"sink.with.path={output}",  # after --set sink=...: the output is ours to read
        "--set", "monitors.0.with.every=1",  # every batch in the log: one RSS reading each
        "--verbose",  # the reconciliation line (read N = written ...) that accounted reads
    ]  # fmt: skip
    env = {**os.environ, "SEAMLINE_CACHE_DIR": str(workdir / "jax-cache")}
    say(f"running {' '.join(argv[1:3])} ... (minutes)")
    watch = watch_run(argv, env, workdir / "stdout.txt")
    load.finish()
    if watch.returncode != 0 or len(watch.batches) < 2:
        say(f"seamline run exited {watch.returncode}:\n" + "\n".join(watch.tail))
        return 1
    verdict = judge(watch.batches, args.warmup, args.tolerance)
    slices = throughput(watch.batches)
    judged_from = watch.batches[verdict.warmup_batches]
    after_warmup = [s for s in slices if s.first_batch >= judged_from.batch]
    first_rate = (after_warmup or slices)[0].documents_per_s
    stdout = (workdir / "stdout.txt").read_text(encoding="utf-8")
    problems = accounted(" ".join(stdout.split()), documents, distinct_ids(output))
    compiled = compilations(watch)
    late = [c for c in compiled if c["documents"] > judged_from.documents]
    report = {
        "documents": documents,
        "batches": len(watch.batches),
        "seconds": watch.seconds,
        "verdict": {**asdict(verdict), "flat": verdict.flat},
        "throughput": [asdict(s) for s in slices],
        "first_rate": first_rate,
        "rate_ratio": slices[-1].documents_per_s / first_rate if first_rate else 0.0,
        "peak_rss_bytes": max([verdict.max_bytes, *(r for _, r in watch.timeline)]),
        "problems": problems,
        "compilations": compiled,
        "compilations_after_warmup": len(late),
        "run_finished": next(e for e in watch.events if e.get("event") == "run finished"),
        "per_batch": [asdict(b) for b in watch.batches],
        "rss_timeline": watch.timeline,
        "command": " ".join(["python -m benchmarks.memory.soak", *sys.argv[1:]]),
        "pipeline": str(args.pipeline),
        "overrides": args.overrides,
        "load": {"start": load.start, "end": load.end},
        "host": host_info(),
        "versions": versions("seamline-core", "jax", "jaxlib", "lancedb"),
        "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(args.out / "soak.json", report)
    plot(watch.batches, verdict, slices, compiled, args.out / "soak.png")
    print_report(report)
    print(f"wrote {args.out / 'soak.json'} and {args.out / 'soak.png'}")
    return 0 if verdict.flat and not problems else 1


def replot(report_path: Path) -> int:
    """Draw ``soak.png`` beside a saved ``soak.json`` again, from the readings it holds."""
    report = json.loads(report_path.read_text(encoding="utf-8"))
    batches = [BatchSample(**sample) for sample in report["per_batch"]]
    verdict = report["verdict"]
    fields = {k: v for k, v in verdict.items() if k != "flat"}
    slices = [Slice(**piece) for piece in report["throughput"]]
    png = report_path.with_suffix(".png")
    plot(batches, Verdict(**fields), slices, report["compilations"], png)
    print(f"wrote {png}")
    return 0


def _sink_of(pipeline: Path, overrides: Sequence[str]) -> str | None:
    """The sink the run will use: the last ``sink.use=`` override, else the file's."""
    import yaml

    for override in reversed(overrides):
        key, _, value = override.partition("=")
        if key == "sink.use":
            return str(yaml.safe_load(value))
        if key == "sink":
            replaced = yaml.safe_load(value)
            return replaced.get("use") if isinstance(replaced, dict) else None
    sink = yaml.safe_load(pipeline.read_text(encoding="utf-8")).get("sink") or {}
    return sink.get("use") if isinstance(sink, dict) else None


if __name__ == "__main__":
    sys.exit(main())
