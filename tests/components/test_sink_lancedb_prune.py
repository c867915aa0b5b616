"""``prune: true`` of the ``lancedb`` sink: what a run deletes or replaces is gone from disk.

Without it a deleted row stayed in the table's files: masked by a deletion file in the
newest version's own data file, whole in every older version (``checkout`` read it
back), and ``optimize`` left it there too (it rewrites a file only past 10% deleted).
With it, each publication compacts the table (writing it anew where rows were deleted)
before the manifest names its version, and removes every older version after.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.adapters.cli.main import app
from seamline.components.sinks import lancedb as lancedb_sink
from seamline.components.sinks._lance_table import unpruned
from seamline.components.sinks.lancedb import LanceDbSink
from seamline.contracts import OutputRecord, Shard
from tests.components.test_sink_lancedb import MANIFEST, sink, table
from tests.faults import kill_points
from tests.faults.component_scenarios import Ran, seamline
from tests.faults.test_path_cli import cli_in, one_line

if TYPE_CHECKING:
    from typer.testing import CliRunner

    from seamline.core.registry import Registry

MARKER = b"ZQX-personal-data-7731"


def holding(folder: Path, marker: bytes = MARKER) -> list[str]:
    """The files under ``folder`` whose bytes hold ``marker`` (as ``grep -rl`` finds them)."""
    return sorted(
        str(Path(root, name).relative_to(folder))
        for root, _, names in os.walk(folder)
        for name in names
        if marker in Path(root, name).read_bytes()
    )


def records(docs: list[str], marked: str | None = None) -> list[OutputRecord]:
    """One row per document, its text holding :data:`MARKER` for ``marked``."""
    vector = np.arange(1, 9, dtype=np.float32)
    return [
        OutputRecord(
            doc, 0, (0, 1), vector * (i + 1), {}, doc + (f" {MARKER.decode()}" * (doc == marked))
        )
        for i, doc in enumerate(docs)
    ]


RUN = "r"
"""The run id :func:`publish` publishes under."""


def publish(tmp_path: Path, rows: list[OutputRecord], **options: Any) -> None:
    out = sink(tmp_path, text=True, full_text_index=True, **options)
    out.start({**MANIFEST, "run_id": RUN})
    out.write(rows)
    out.close()


def pinned(tmp_path: Path, folder: str = "db") -> int:
    manifest = json.loads((tmp_path / folder / "emb.manifest.json").read_text(encoding="utf-8"))
    return int(manifest["outputs"]["table_version"])


def nearest(tmp_path: Path) -> Any:
    """The row nearest to a vector, through the reader ``seamline search`` uses: it reads
    the table at the version the manifest names, and refuses one no longer there."""
    from seamline.contracts.readback import published

    readers = published(tmp_path / "db" / "emb.lance", LanceDbSink)
    assert readers
    return readers[0].nearest(np.ones(8, np.float32), 1)


DOCS = [f"d{i:02}" for i in range(40)]


@pytest.mark.parametrize("mode", ["sync", "upsert"])
def test_prune_leaves_no_byte_of_a_deleted_or_replaced_row(tmp_path: Path, mode: str) -> None:
    """One document of 40 deleted (sync) or rewritten without the marker (upsert): the
    deletion masks 2.5% of a file, which LanceDB's compaction leaves as it is."""
    publish(tmp_path, records(DOCS, marked="d07"), mode=mode, prune=True)
    assert holding(tmp_path / "db")
    again = [d for d in DOCS if d != "d07"] if mode == "sync" else ["d07"]
    publish(tmp_path, records(again), mode=mode, prune=True)
    assert holding(tmp_path / "db") == [], "no file under the table holds the marker"
    found = table(tmp_path)
    assert oldest(found) == found.version == pinned(tmp_path)
    assert found.count_rows() == (39 if mode == "sync" else 40)
    assert nearest(tmp_path).rows, "the reader reads the version"
    fts = found.search(MARKER.decode(), query_type="fts").limit(5).to_list()
    assert fts == []


def test_without_prune_deleted_rows_stay_in_the_files_and_older_versions(tmp_path: Path) -> None:
    """The documented default: deleted means gone from the table's newest version only."""
    publish(tmp_path, records(DOCS, marked="d07"), mode="sync")
    first = table(tmp_path).version
    publish(tmp_path, records([d for d in DOCS if d != "d07"]), mode="sync")
    assert holding(tmp_path / "db")
    found = table(tmp_path)
    assert found.count_rows() == 39
    found.checkout(first)
    assert found.count_rows() == 40, "time travel reads the deleted row back"


def oldest(found: Any) -> int:
    return min(version["version"] for version in found.list_versions())


@pytest.mark.parametrize("index", [None, "ivf_pq", "hnsw"])
def test_appends_with_prune_keep_no_version_before_the_manifests(
    tmp_path: Path, index: str | None
) -> None:
    """Each append adds a small file; compacting them before the manifest means pruning
    after it compacts nothing (a version then, and the prune before it, would remove the
    one the manifest names). LanceDB optimizes a vector index after pruning: one more
    version of the same rows, pruned by the next publication."""
    vectors = np.random.default_rng(0).standard_normal((3, 300, 8)).astype(np.float32)
    options = {} if index is None else {"index": {"type": index, "num_partitions": 2}}
    for run in range(3):
        rows = [
            OutputRecord(f"r{run}-{i}", 0, (0, 1), vector, {}, f"text {i}")
            for i, vector in enumerate(vectors[run])
        ]
        publish(tmp_path, rows, mode="append", prune=True, **options)
        assert oldest(table(tmp_path)) == pinned(tmp_path)
    assert table(tmp_path).count_rows() == 900
    assert nearest(tmp_path).rows


def test_a_staged_sync_with_prune_erases_too(tmp_path: Path) -> None:
    """Parts published as one run (``publish_parts``): pruned once the manifest is out."""
    publish(tmp_path, records(DOCS, marked="d07"), mode="sync")

    def make() -> LanceDbSink:
        return sink(tmp_path, mode="sync", prune=True, text=True, full_text_index=True)

    kept = [d for d in DOCS if d != "d07"]
    make().begin_parts("run-1", 2, MANIFEST)
    for index, docs in enumerate([kept[:20], kept[20:]]):
        part = make().part("run-1", Shard(index, 2))
        assert part.recover(MANIFEST) is None
        part.write(records(docs))
        part.close()
    make().publish_parts("run-1", 2, MANIFEST)
    assert holding(tmp_path / "db") == []
    assert table(tmp_path).count_rows() == 39
    assert oldest(table(tmp_path)) == pinned(tmp_path)
    assert nearest(tmp_path).rows


def test_a_staged_publication_leaves_its_problems_for_after_the_summary(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Parts published as one run (``publish_parts``, on the driver): a failed index build
    and a failed prune were raised from there, before the run's summary. Both now come
    from ``published_problem``, in one message, once the publication is complete."""
    from seamline.components.sinks import _lance_index

    def failing(*_: Any, **__: Any) -> None:
        raise RuntimeError("lance error: disk quota exceeded")

    publish(tmp_path, records(DOCS), mode="sync")

    def make() -> LanceDbSink:
        return sink(tmp_path, mode="sync", prune=True, text=True, full_text_index=True)

    make().begin_parts("run-1", 2, MANIFEST)
    for index, docs in enumerate([DOCS[:20], DOCS[20:-1]]):
        part = make().part("run-1", Shard(index, 2))
        part.write(records(docs))
        part.close()
    monkeypatch.setattr(_lance_index, "build_indexes", failing)
    monkeypatch.setattr(lancedb_sink, "prune_versions", failing)
    make().publish_parts("run-1", 2, MANIFEST)
    monkeypatch.undo()
    assert table(tmp_path).count_rows() == 39, "published"
    problem = make().published_problem("run-1")
    assert problem is not None
    unindexed, left_by_prune = problem.split(" Also, ")
    assert "but building its index failed: lance error: disk quota exceeded" in unindexed
    assert "pruning left older versions that still hold the rows" in left_by_prune
    assert make().published_problem(RUN) is None, "another run's publication: not this one's"


class Killed(BaseException):
    """The process is killed (nothing catches it)."""


def test_a_kill_while_pruning_leaves_the_published_version_and_the_next_run_prunes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    publish(tmp_path, records(DOCS, marked="d07"), mode="sync")
    kept = [d for d in DOCS if d != "d07"]

    def killed(*args: Any) -> None:
        raise Killed

    monkeypatch.setattr(lancedb_sink, "prune_versions", killed)
    with pytest.raises(Killed):
        publish(tmp_path, records(kept), mode="sync", prune=True)
    monkeypatch.undo()
    assert not (tmp_path / "db" / ".emb.lance.checkpoint").exists(), "the run was published"
    assert table(tmp_path).version == pinned(tmp_path), "the manifest's version is there"
    assert nearest(tmp_path).rows
    assert holding(tmp_path / "db"), "not yet pruned"
    publish(tmp_path, records(kept), mode="sync", prune=True)
    assert holding(tmp_path / "db") == []
    assert table(tmp_path).version == pinned(tmp_path)


def test_a_kill_after_compacting_before_the_manifest_is_undone_by_the_next_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compacting keeps every older version: the version the interrupted publication's
    checkpoint recorded is still there to restore."""
    publish(tmp_path, records(DOCS, marked="d07"), mode="sync", prune=True)
    before = pinned(tmp_path)

    def killed(*args: Any) -> None:
        raise Killed

    monkeypatch.setattr(lancedb_sink, "indexed_version", killed)
    with pytest.raises(Killed):
        publish(tmp_path, records(DOCS[:5]), mode="sync", prune=True)
    monkeypatch.undo()
    assert pinned(tmp_path) == before
    publish(tmp_path, records([d for d in DOCS if d != "d07"]), mode="sync", prune=True)
    assert table(tmp_path).count_rows() == 39
    assert holding(tmp_path / "db") == []


@pytest.fixture(scope="module")
def discovered() -> Registry:
    """The installed components and the fault fixtures, as ``seamline run`` finds them."""
    with kill_points.in_process_cli():
        from seamline.core.config.user import user_trust
        from seamline.core.registry import Registry

        return Registry.discover(user_trust())


PRUNE = ("--set", "sink.with.prune=true")


def published_then_deleted(cli: CliRunner, notes: Path) -> None:
    """The notes published once by ``pipeline.yaml``, then the customer's note removed."""
    assert seamline(cli, Path("pipeline.yaml")).exit_code == 0
    (notes / "customer.txt").unlink()


def pruned_after_a_deletion(cli: CliRunner, notes: Path, patch: Callable[[], None]) -> Ran:
    """:func:`published_then_deleted`, then ``patch`` applied and a run with ``prune``."""
    published_then_deleted(cli, notes)
    patch()
    return seamline(cli, Path("pipeline.yaml"), *PRUNE)


def notes_pipeline(tmp_path: Path) -> Path:
    """Four notes, one holding :data:`MARKER`, embedded by ``pipeline.yaml`` into a
    ``sync`` table; the notes' folder returned."""
    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a", "b", "c"):
        (notes / f"{name}.txt").write_text(f"note {name} about lance tables", encoding="utf-8")
    (notes / "customer.txt").write_text(f"{MARKER.decode()} lives here", encoding="utf-8")
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: notes\n"
        "loader: {use: text-files, with: {root: notes}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync, full_text_index: true}}\n",
        encoding="utf-8",
    )
    return notes


def test_erasing_a_document_for_good_as_the_docs_say(tmp_path: Path, discovered: Registry) -> None:
    """README's "Erasing documents for good": remove the input, run with sync and prune,
    then grep finds the text nowhere under the table, and search still answers."""
    notes = notes_pipeline(tmp_path)
    with cli_in(tmp_path, discovered) as cli:
        published_then_deleted(cli, notes)
        plain = seamline(cli, Path("pipeline.yaml"))
        assert plain.exit_code == 0, plain.stderr
        assert "1 deleted" in " ".join(plain.stdout.split())
        assert holding(tmp_path / "out"), "without prune the deleted text stays on disk"
        pruned = seamline(cli, Path("pipeline.yaml"), "--set", "sink.with.prune=true")
        assert pruned.exit_code == 0, pruned.stderr
        searched = cli.invoke(app, ["search", "out/emb.lance", "lance tables", "-k", "2"])
    assert holding(tmp_path / "out") == [], "no file under out/ holds the deleted text"
    assert searched.exit_code == 0, searched.stderr
    assert "about lance tables" in searched.stdout


def test_versions_pruning_leaves_fail_the_run_and_the_publication_stands(
    tmp_path: Path, discovered: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """LanceDB prunes by age, not by number: a version stamped after the clock's now (a
    clock set back since, or ahead then) is kept. That run erased nothing and said "1
    deleted", exit 0. Here LanceDB is made to keep every older version, as it does then.

    The run prints its summary (text, and ``--format json``'s document), the counts of
    what it deleted included, and then fails: raised while publishing, the failure lost
    them, and the next run found nothing more to delete (tR2 F1)."""
    from lancedb.table import LanceTable

    optimize = LanceTable.optimize

    def behind(self: LanceTable, **options: Any) -> Any:  # nothing is old enough to go
        return optimize(self, **{**options, "cleanup_older_than": timedelta(days=1)})

    notes = notes_pipeline(tmp_path)
    with cli_in(tmp_path, discovered) as cli:
        pruned = pruned_after_a_deletion(
            cli, notes, lambda: monkeypatch.setattr(LanceTable, "optimize", behind)
        )
        (notes / "a.txt").unlink()
        as_json = seamline(cli, Path("pipeline.yaml"), *PRUNE, "--format", "json")
        monkeypatch.undo()
        assert pruned.exit_code == 2, pruned.stderr
        assert "documents in the output: 0 added, 0 replaced, 1 deleted" in pruned.stdout
        message = one_line(pruned)
        assert message.startswith(
            "error: lancedb sink: the rows are published in 'out/emb.lance' ("
        )
        assert "pruning left older versions that still hold the rows" in message
        assert "Run again with prune" in message
        assert as_json.exit_code == 2, as_json.stderr
        assert json.loads(as_json.stdout)["changes"]["deleted"] == 1, as_json.stdout
        assert "pruning left older versions" in one_line(as_json)
        found = written(tmp_path / "out")
        assert found.version == pinned(tmp_path, "out"), "the publication stands"
        assert found.count_rows("id = 'customer.txt'") == 0
        assert oldest(found) < found.version, "the older versions are still there"
        again = seamline(cli, Path("pipeline.yaml"), *PRUNE)
        assert again.exit_code == 0, again.stderr
    assert oldest(written(tmp_path / "out")) == pinned(tmp_path, "out")
    assert holding(tmp_path / "out") == []


def written(folder: Path) -> Any:
    """The table ``emb`` in ``folder`` (a pipeline's ``out/emb.lance``)."""
    import lancedb

    return lancedb.connect(str(folder)).open_table("emb")


def test_the_message_names_the_versions_ahead_of_the_clock_and_the_fix() -> None:
    now = datetime(2026, 12, 7, 7, 0, 0)
    message = unpruned("'out/emb.lance'", 5, {1: now + timedelta(hours=2), 2: now}, now)
    assert "(version 5)" in message
    assert "1 (written 2026-12-07 09:00:00), 2 (written 2026-12-07 07:00:00)" in message
    assert "2 of them written after this machine's clock now says it is" in message
    assert "Fix the clock, or run again with prune once it has passed 2026-12-07 09:00:00" in (
        message
    )
    behind = unpruned("'t'", 3, {1: now - timedelta(hours=1)}, now)
    assert "LanceDB kept them. Run again with prune" in behind


@pytest.mark.skipif(shutil.which("faketime") is None, reason="needs faketime (apt: faketime)")
def test_a_version_written_with_the_clock_ahead_is_not_reported_pruned(tmp_path: Path) -> None:
    """The finding as it was met: the first publication under ``faketime +2h``."""
    script = (
        "import sys; from pathlib import Path; "
        "from tests.components.test_sink_lancedb_prune import DOCS, publish, records; "
        "publish(Path(sys.argv[1]), records(DOCS, marked='d07'), mode='sync')"
    )
    ahead = subprocess.run(
        ["faketime", "-f", "+2h", sys.executable, "-c", script, str(tmp_path)],
        cwd=Path(__file__).resolve().parents[2],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert ahead.returncode == 0, ahead.stderr
    publish(tmp_path, records([d for d in DOCS if d != "d07"]), mode="sync", prune=True)
    problem = sink(tmp_path, prune=True).published_problem(RUN)
    assert problem is not None, "versions left by pruning are the run's problem"
    assert "of them written after this machine's clock now says" in problem
    assert "Fix the clock" in problem
    assert table(tmp_path).version == pinned(tmp_path)


def test_an_index_that_fails_to_build_fails_the_run_once_its_summary_is_out(
    tmp_path: Path, discovered: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A failed index build was raised from the sink's ``close``: the run ended with the
    error alone, its summary lost (what it published, the counts a ``sync`` measured only
    then), though the rows were published. Now the manifest records the failure, and the
    run fails with it after the summary, as a clock-kept version does (above)."""
    from seamline.components.sinks import _lance_index

    def failing(*_: Any, **__: Any) -> None:
        raise RuntimeError("lance error: disk quota exceeded")

    notes = notes_pipeline(tmp_path)
    with cli_in(tmp_path, discovered) as cli:
        monkeypatch.setattr(_lance_index, "build_indexes", failing)
        first = seamline(cli, Path("pipeline.yaml"))
        (notes / "customer.txt").unlink()
        as_json = seamline(cli, Path("pipeline.yaml"), "--format", "json")
        monkeypatch.undo()
        searched = cli.invoke(app, ["search", "out/emb.lance", "lance tables", "-k", "1"])
        again = seamline(cli, Path("pipeline.yaml"))
    assert first.exit_code == 2, first.stderr
    assert "4 added, 0 replaced, 0 deleted" in " ".join(first.stdout.split()), first.stdout
    assert one_line(first) == (
        "error: lancedb sink: the rows are published in 'out/emb.lance', but building its "
        "index failed: lance error: disk quota exceeded. Fix the index settings and run "
        "again; until then a search scans every row"
    )
    assert as_json.exit_code == 2, as_json.stderr
    assert json.loads(as_json.stdout)["changes"]["deleted"] == 1, as_json.stdout
    assert "but building its index failed" in one_line(as_json)
    assert searched.exit_code == 0, searched.stderr
    assert "about lance tables" in searched.stdout, "the publication stands, unindexed"
    assert again.exit_code == 0, again.stderr
    manifest = json.loads((tmp_path / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    assert "index_failure" not in manifest["outputs"], "the run that built them says nothing"
    assert [index.index_type for index in written(tmp_path / "out").list_indices()] == ["FTS"]


def test_pruning_that_fails_fails_the_run_once_its_summary_is_out(
    tmp_path: Path, discovered: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An error while removing the older versions was raised from the sink's ``close``,
    after the manifest was out: the summary, with what the ``sync`` deleted, was lost. Now
    it is logged, and the versions it left fail the run after the summary."""

    def refused(*_: Any, **__: Any) -> None:
        raise OSError(13, "Permission denied", "out/emb.lance/_versions")

    notes = notes_pipeline(tmp_path)
    with cli_in(tmp_path, discovered) as cli:
        pruned = pruned_after_a_deletion(
            cli, notes, lambda: monkeypatch.setattr(lancedb_sink, "prune_versions", refused)
        )
        monkeypatch.undo()
        left = oldest(written(tmp_path / "out"))
        again = seamline(cli, Path("pipeline.yaml"), *PRUNE)
    assert pruned.exit_code == 2, pruned.stderr
    assert "0 added, 0 replaced, 1 deleted" in " ".join(pruned.stdout.split()), pruned.stdout
    warned, failed = [line for line in pruned.stderr.splitlines() if line.strip()]
    assert "removing its older versions failed" in warned
    assert "Permission denied" in warned
    assert failed.startswith("error: lancedb sink: the rows are published in 'out/emb.lance' (")
    assert "pruning left older versions that still hold the rows" in failed
    assert left < pinned(tmp_path, "out"), "the older versions were left"
    assert again.exit_code == 0, again.stderr
    assert oldest(written(tmp_path / "out")) == pinned(tmp_path, "out")
    assert holding(tmp_path / "out") == []
