"""The hostile corpus through every loader: the run goes on, and the summary reconciles.

Each kind in :mod:`tests.hostile.corpus` must come out as the corpus says: written,
set aside with an error record that names its stage, its reason and where it came
from (so it can be found and re-run), or not read at all. The run's summary must
account for every item read, and the output files are counted independently of the
summary: ``read = written + dead-lettered + skipped by rule``.
"""

from __future__ import annotations

import signal
from collections import Counter
from typing import TYPE_CHECKING, Any

import pytest

from tests.hostile.corpus import DEAD, NOT_READ, SKIPPED, WRITTEN, Corpus, build
from tests.hostile.outcomes import NAME, ROOT_ONLY, render
from tests.hostile.run import LOADERS, Result, registry, run
from tests.outcome_tables import comparable, out_of_date, page_block

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import FrameType

HANG_LIMIT_S = 300
"""A FIFO that is opened for reading blocks until a writer comes: fail, do not hang."""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Corpus:
    return build(tmp_path_factory.mktemp("hostile"))


@pytest.fixture(scope="module")
def results(corpus: Corpus, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    def hung(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"the hostile corpus run took over {HANG_LIMIT_S}s: something hangs")

    previous = signal.signal(signal.SIGALRM, hung)
    signal.alarm(HANG_LIMIT_S)
    try:
        yield {name: run(corpus, name, tmp_path_factory.mktemp(name)) for name in LOADERS}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


@pytest.mark.parametrize("loader", LOADERS)
def test_the_summary_reconciles_with_what_the_files_hold(
    corpus: Corpus, results: dict[str, Result], loader: str
) -> None:
    result = results[loader]
    summary = result.summary
    written = {line["id"] for line in result.records}
    stages = Counter(line["stage"] for line in result.errors)
    assert summary.counts.read == corpus.items(loader)  # every item, counted by the corpus
    assert summary.counts.documents == len(written)
    assert summary.counts.failed_documents == stages["load"] + stages["prepare"]
    assert summary.counts.skipped_documents == stages["skip"]
    assert summary.counts.read == len(written) + len(result.errors)
    assert summary.counts.reconciles
    line = summary.counts.reconciliation()
    assert line == (
        f"read {summary.counts.read} = written {len(written)} + dead-lettered "
        f"{summary.counts.failed_documents} + skipped by rule {summary.counts.skipped_documents}"
    )


@pytest.mark.parametrize("loader", LOADERS)
def test_each_hostile_kind_has_its_outcome(
    corpus: Corpus, results: dict[str, Result], loader: str
) -> None:
    result = results[loader]
    written = {line["id"] for line in result.records}
    errors = {line["id"]: line for line in result.errors}
    for case in corpus.of(loader):
        for doc_id in case.ids:
            if case.outcome == WRITTEN:
                assert doc_id in written, case.kind
                assert doc_id not in errors, (case.kind, errors.get(doc_id))
            elif case.outcome in (DEAD, SKIPPED):
                assert doc_id not in written, case.kind
                error = errors[doc_id]
                assert error["stage"] == case.stage, (case.kind, error)
                assert case.reason in error["reason"], (case.kind, error)
    kinds = {case.kind for case in corpus.cases}
    outcomes = Counter(case.outcome for case in corpus.cases)
    assert len(kinds) >= 20
    assert set(outcomes) == {WRITTEN, DEAD, SKIPPED, NOT_READ}


@pytest.mark.parametrize("loader", LOADERS)
def test_no_two_records_a_reader_cannot_tell_apart(results: dict[str, Result], loader: str) -> None:
    result = results[loader]
    keys = Counter((line["id"], line["window"]) for line in result.records)
    assert [key for key, count in keys.items() if count > 1] == []
    errors = Counter(line["id"] for line in result.errors)
    assert [key for key, count in errors.items() if count > 1] == []


def test_each_dead_lettered_line_names_the_line_to_rerun(
    corpus: Corpus, results: dict[str, Result]
) -> None:
    """An error record's path and line find the very line that was set aside."""
    errors = {line["id"]: line for line in results["jsonl"].errors}
    cases = [case for case in corpus.of("jsonl") if case.outcome in (DEAD, SKIPPED)]
    assert cases
    for case in cases:
        error = errors[case.ids[0]]
        where = error["metadata"]
        if error["stage"] == "prepare":  # read fine: the orchestrator adds the loader's cursor
            assert where["cursor"] == str(case.line)
            continue
        assert where["path"] == str(corpus.jsonl_path.absolute())
        assert where["line"] == case.line
        assert error["reason"].startswith(f"line {case.line}: ")


def test_each_set_aside_file_names_its_path(corpus: Corpus, results: dict[str, Result]) -> None:
    errors = results["text-files"].errors
    assert errors
    for error in errors:
        assert error["metadata"]["path"] == str(corpus.files_root.absolute() / error["id"])


def test_each_set_aside_row_names_its_place(corpus: Corpus, results: dict[str, Result]) -> None:
    """A parquet error record's file, row group and row find the very row set aside."""
    errors = [line for line in results["parquet"].errors if line["stage"] == "load"]
    rows = [line for line in errors if "row" in line["metadata"]]
    assert len(rows) == len(errors) - 1, "all but the file that is not Parquet name a row"
    for error in rows:
        where = error["metadata"]
        assert where["file"].startswith(str(corpus.parquet_root))
        assert error["reason"].startswith(f"row {where['row']} of row group {where['row_group']}: ")


def test_nan_metadata_is_written_as_null(results: dict[str, Result]) -> None:
    (record,) = [line for line in results["jsonl"].records if line["id"] == "nan"]
    assert record["metadata"] == {"score": None}


def test_the_docs_table_is_the_one_this_run_renders(
    corpus: Corpus, results: dict[str, Result]
) -> None:
    """docs/reliability.md shows what the code does: ``python -m tests.outcomes`` regenerates it."""
    rendered = render(corpus, results, corpus.files_root.parent)
    # The one row that depends on running as root or not is not held to the page.
    assert comparable(page_block(NAME), [ROOT_ONLY]) == comparable(rendered, [ROOT_ONLY]), (
        out_of_date(NAME)
    )


def test_the_tests_and_the_table_read_one_list_of_loaders() -> None:
    """The list was written twice (here and in outcomes.py): a loader added to one was
    tested but missing from the table, or the other way round."""
    from tests.hostile import outcomes

    assert outcomes.LOADERS is LOADERS
    assert set(registry().names("loader")) == set(LOADERS)
