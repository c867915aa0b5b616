"""What soak.py judges and counts: RSS drift after warm-up, throughput slices, lost documents.

The benchmark itself streams 200,000 documents (minutes); these check its verdicts on
made-up readings, where the right answer is known, and run it once end to end on a
hundred documents (7 batches) so that a change to the run's log or output cannot silently
break it.
"""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks.memory import soak

MiB = 1 << 20


def batches(rss_mib: list[float], *, documents_per_batch: int = 10) -> list[soak.BatchSample]:
    """One batch a second, ``documents_per_batch`` documents and 100 tokens each."""
    return [
        soak.BatchSample(
            seconds=float(i + 1),
            batch=i + 1,
            documents=(i + 1) * documents_per_batch,
            tokens=100,
            rss_bytes=int(value * MiB),
        )
        for i, value in enumerate(rss_mib)
    ]


def test_flat_memory_after_a_warm_up_jump_is_flat() -> None:
    # 10 % warm-up: the first 2 of 20 batches, where compilation doubles the RSS.
    readings = [300.0, 600.0] + [1000.0, 1020.0, 990.0, 1050.0] * 4 + [1000.0, 1000.0]
    verdict = soak.judge(batches(readings), warmup=0.1, tolerance=0.10)
    assert verdict.warmup_batches == 2
    assert verdict.first_bytes == 1000 * MiB
    assert verdict.drift == pytest.approx(0.05)
    assert verdict.flat


def test_growth_past_the_bound_is_not_flat() -> None:
    readings = [1000.0 + 10 * i for i in range(20)]  # +190 MiB over 1000 MiB: 19 %
    verdict = soak.judge(batches(readings), warmup=0.0, tolerance=0.10)
    assert verdict.drift == pytest.approx(0.19)
    assert not verdict.flat
    # 10 MiB a batch of 10 documents: 10,000 MiB per 10,000 documents.
    assert verdict.slope_mib_per_10k_documents == pytest.approx(10_000)


def test_shrinking_past_the_bound_is_not_flat_either() -> None:
    verdict = soak.judge(batches([1000.0] * 10 + [850.0] * 10), warmup=0.0, tolerance=0.10)
    assert verdict.drift == pytest.approx(0.15)
    assert not verdict.flat


def test_too_few_batches_to_judge_is_an_error() -> None:
    with pytest.raises(ValueError, match="fewer than 2 to judge"):
        soak.judge(batches([1.0, 2.0]), warmup=0.5, tolerance=0.1)


def test_throughput_slices_cover_every_batch_once_at_the_right_rate() -> None:
    samples = batches([100.0] * 41, documents_per_batch=7)  # a batch a second
    slices = soak.throughput(samples, slices=4)
    assert [s.first_batch for s in slices] == [1, 11, 21, 31]
    assert [s.last_batch for s in slices] == [11, 21, 31, 41]
    assert all(s.documents_per_s == pytest.approx(7.0) for s in slices)
    assert all(s.tokens_per_s == pytest.approx(100.0) for s in slices)
    # the slices' documents add up to the streaming part's, without gaps or overlap
    counted = sum(s.documents_per_s * (s.last_batch - s.first_batch) for s in slices)
    assert counted == pytest.approx(samples[-1].documents - samples[0].documents)


def test_a_slowdown_shows_in_the_last_slice() -> None:
    samples = batches([100.0] * 21)
    for sample in samples[11:]:  # the second half takes two seconds a batch
        sample.seconds = 11 + 2 * (sample.batch - 11)
    first, last = soak.throughput(samples, slices=2)
    assert first.documents_per_s == pytest.approx(10.0)
    assert last.documents_per_s == pytest.approx(5.0)


LINE = "read {} = written {} + dead-lettered {} + skipped by rule {}"


@pytest.mark.parametrize(
    ("line", "ids", "problem"),
    [
        (LINE.format(500, 500, 0, 0), 500, None),
        (LINE.format(500, 499, 1, 0), 500, "for 500 documents in the input"),
        (LINE.format(499, 499, 0, 0), 500, "for 500 documents in the input"),
        (LINE.format(500, 500, 0, 1), 500, "do not reconcile"),
        (LINE.format(500, 500, 0, 0), 498, "holds 498 distinct ids, not 500"),
        (LINE.format(500, 500, 0, 0), None, "cannot be read back"),
        ("done embed-docs: 500 documents", 500, "no reconciliation line"),
    ],
)
def test_every_document_must_be_read_written_and_published_once(
    line: str, ids: int | None, problem: str | None
) -> None:
    problems = soak.accounted(f"done p: ... {line} first output after", 500, ids)
    if problem is None:
        assert problems == []
    else:
        assert len(problems) == 1, problems
        assert problem in problems[0], problems


class FakeProcess:
    def __init__(self) -> None:
        self.reads = 0

    def memory_info(self) -> Any:
        self.reads += 1
        return type("Info", (), {"rss": self.reads * MiB})()


def test_the_log_is_read_as_it_comes_one_rss_reading_per_batch() -> None:
    def batch(index: int, documents: int) -> str:
        fields = {"event": "batch done", "batch": index, "tokens": 50, "documents": documents}
        return json.dumps(fields) + "\n"

    stream = io.StringIO(
        "not json: a warning printed by a library\n"
        + json.dumps({"event": "compiled", "length": 64, "batch_size": 8})
        + "\n"
        + batch(1, 12)
        + batch(2, 30)
        + json.dumps({"event": "run finished", "documents": 30})
        + "\n"
    )
    watch = soak.Watch()
    process = FakeProcess()
    soak.read_log(stream, 0.0, process, watch)
    assert [(b.batch, b.documents, b.rss_bytes) for b in watch.batches] == [
        (1, 12, MiB),
        (2, 30, 2 * MiB),
    ]
    assert process.reads == 2, "RSS is read on batch lines only"
    assert [e["event"] for e in watch.events] == ["compiled", "run finished"]
    assert watch.tail == ["not json: a warning printed by a library"]
    (compiled,) = soak.compilations(watch)
    assert compiled["documents"] == 0, "compiled before the first batch was done"


def test_documents_are_short_unique_and_the_same_for_a_seed() -> None:
    pool = ["One short sentence here.", "Another one, a little longer than that."]
    documents = list(soak.short_documents(pool, 1000))
    assert len({d["id"] for d in documents}) == 1000
    assert {d["text"] for d in documents} == set(pool)
    assert documents == list(soak.short_documents(pool, 1000))


def test_a_small_soak_runs_end_to_end(tmp_path: Path) -> None:
    # The mechanics only: a hundred documents are too few for the memory to settle,
    # so the bound is set out of reach; what must hold is the accounting and the outputs.
    code = soak.main(
        ["--documents", "100", "--warmup", "0.2", "--tolerance", "100", "--out", str(tmp_path)]
    )
    report = json.loads((tmp_path / "soak.json").read_text(encoding="utf-8"))
    assert code == 0, report["problems"]
    assert report["problems"] == []
    assert report["run_finished"]["documents"] == 100
    assert len(report["per_batch"]) == report["batches"] == report["run_finished"]["batches"]
    assert report["compilations"], "the run's compilations are in the report"
    png = tmp_path / "soak.png"
    assert png.stat().st_size > 10_000
    png.unlink()
    assert soak.main(["--replot", str(tmp_path / "soak.json")]) == 0
    assert png.stat().st_size > 10_000, "the plot is drawn again from the saved readings"


@pytest.mark.parametrize(
    ("overrides", "sink"),
    [
        ([], "lancedb"),
        (["sink.use=parquet"], "parquet"),
        (["sink.use=parquet", "sink={use: jsonl, with: {path: x.jsonl}}"], "jsonl"),
        (["sink={use: jsonl, with: {path: x.jsonl}}", "sink.use=npy"], "npy"),
    ],
)
def test_the_sink_whose_output_is_counted_is_the_one_the_run_uses(
    overrides: list[str], sink: str
) -> None:
    assert soak._sink_of(soak.PIPELINE, overrides) == sink
