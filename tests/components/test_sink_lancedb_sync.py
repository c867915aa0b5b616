"""``mode: sync`` of the ``lancedb`` sink: the table holds exactly this input, in one commit.

New documents added, changed ones replaced (every window: a document now shorter
keeps no stale window), documents no longer in the input deleted, a document set
aside by a failure left as it was; and the counts of each, measured from the rows.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.components.sinks.lancedb import LanceDbSink
from seamline.contracts import DocumentError, OutputRecord, Shard, UserError
from tests.components.test_sink_lancedb import (
    MANIFEST,
    Died,
    die_after_the_table_commit,
    sink,
    table,
)
from tests.components.test_sink_staged_columnar import lance
from tests.faults import kill_points
from tests.faults.component_scenarios import seamline
from tests.faults.test_path_cli import cli_in

if TYPE_CHECKING:
    from seamline.core.registry import Registry

VECTOR = np.arange(8, dtype=np.float32)


def windows(doc: str, count: int, value: float) -> list[OutputRecord]:
    return [
        OutputRecord(doc, i, (i, i + 1), VECTOR * value, {}, f"{doc}/{i}") for i in range(count)
    ]


def manifest(run_id: str) -> dict[str, Any]:
    return {**MANIFEST, "run_id": run_id}


def sync(
    tmp_path: Path,
    records: list[OutputRecord],
    errors: list[DocumentError] = (),
    older_versions: bool = False,
    **options: Any,
) -> dict[str, int] | None:
    """One whole run with ``mode: sync``; the counts it reports (of documents only, unless
    ``older_versions``: test_sink_lancedb_older_versions.py)."""
    out = sink(tmp_path, mode="sync", **options)
    out.start(manifest("r"))
    out.write(records)
    for error in errors:
        out.write_error(error)
    out.close()
    changes = sink(tmp_path).published_changes("r")
    return dict(changes) if older_versions and changes is not None else documents(changes)


def documents(changes: Mapping[str, int] | None) -> dict[str, int] | None:
    """The counts of documents in ``changes``, without what older versions keep (None: none)."""
    found = {k: v for k, v in (changes or {}).items() if not k.startswith("older_versions")}
    return found or None


def rows(tmp_path: Path) -> list[tuple[str, int, float]]:
    found = table(tmp_path).search().limit(None).to_list()
    return sorted((r["id"], r["window_index"], float(r["embedding"][1])) for r in found)


def counts(**kinds: int) -> dict[str, int]:
    """The counts a sync reports, those not given 0."""
    return {
        kind: kinds.get(kind, 0) for kind in ("added", "replaced", "unchanged", "deleted", "kept")
    }


def test_sync_adds_replaces_and_deletes_in_one_commit_and_counts_each(tmp_path: Path) -> None:
    first = windows("a", 3, 1) + windows("b", 1, 1) + windows("c", 2, 1)
    assert sync(tmp_path, first) == counts(added=3)
    before = table(tmp_path).version
    # "a" changed and now has one window fewer; "b" is the same; "c" is gone; "d" is new.
    assert sync(tmp_path, windows("a", 2, 2) + windows("b", 1, 1) + windows("d", 1, 3)) == counts(
        added=1, replaced=1, unchanged=1, deleted=1
    )
    assert rows(tmp_path) == [("a", 0, 2.0), ("a", 1, 2.0), ("b", 0, 1.0), ("d", 0, 3.0)]
    assert table(tmp_path).version == before + 1, "added, replaced and deleted in one commit"
    published = json.loads((tmp_path / "db" / "emb.manifest.json").read_text())
    assert published["outputs"]["changes"] == counts(added=1, replaced=1, unchanged=1, deleted=1)


def test_a_document_whose_windows_spans_or_vectors_alone_changed_is_replaced(
    tmp_path: Path,
) -> None:
    sync(tmp_path, windows("a", 2, 1) + windows("b", 1, 1) + windows("c", 1, 1))
    shifted = [OutputRecord("b", 0, (0, 2), VECTOR, {}, "b/0")]  # same vector, other span
    nudged = [OutputRecord("c", 0, (0, 1), VECTOR + 1e-6, {}, "c/0")]  # only the vector
    assert sync(tmp_path, windows("a", 1, 1) + shifted + nudged) == counts(replaced=3)
    assert rows(tmp_path) == [("a", 0, 1.0), ("b", 0, 1.0), ("c", 0, np.float32(1 + 1e-6))]


def test_a_document_set_aside_by_a_failure_keeps_its_rows_a_skipped_one_loses_them(
    tmp_path: Path,
) -> None:
    sync(tmp_path, windows("a", 2, 1) + windows("failed", 2, 1) + windows("blank", 1, 1))
    # "failed" could not be read; "blank" is now empty (skipped by a rule); "new" failed and
    # was never in the table; "a" was embedded (one window now), and an error record of a
    # duplicate of it (another input with its id) does not hold its new rows back.
    errors = [
        DocumentError("failed", "unreadable", stage="load"),
        DocumentError("blank", "blank document", stage="skip"),
        DocumentError("new", "cannot prepare", stage="prepare"),
        DocumentError("a", "duplicate id 'a'", stage="load"),
    ]
    changes = sync(tmp_path, windows("a", 1, 2), errors)
    assert changes == counts(replaced=1, deleted=1, kept=1)
    assert rows(tmp_path) == [("a", 0, 2.0), ("failed", 0, 1.0), ("failed", 1, 1.0)]


def test_a_load_failure_naming_no_document_of_the_table_holds_every_deletion_back(
    tmp_path: Path,
) -> None:
    """A line the loader could not read far enough to know its id is set aside under its
    place (``in.jsonl:2``); the documents it stands for are missing from the run, and a
    sync deleted their rows as if they had been removed."""
    sync(tmp_path, windows("a", 2, 1) + windows("b", 2, 1) + windows("c", 1, 1))
    unread = [DocumentError("in.jsonl:2", "not valid UTF-8", stage="load")]
    changes = sync(tmp_path, windows("a", 1, 2), unread)
    assert changes == {**counts(replaced=1), "held": 2}
    assert rows(tmp_path) == [("a", 0, 2.0), ("b", 0, 1.0), ("b", 1, 1.0), ("c", 0, 1.0)], (
        "b and c kept; a replaced, its second window gone (as upsert does)"
    )
    # Once the input reads cleanly, the next sync deletes what is really gone.
    assert sync(tmp_path, windows("a", 1, 2)) == counts(unchanged=1, deleted=2)
    assert rows(tmp_path) == [("a", 0, 2.0)]


def test_failures_that_name_documents_do_not_hold_deletions_back(tmp_path: Path) -> None:
    # A load failure of a document the table holds keeps that one's rows only; a failure to
    # prepare names its document (the loader read it), new or not.
    sync(tmp_path, windows("a", 1, 1) + windows("b", 1, 1) + windows("c", 1, 1))
    errors = [DocumentError("b", "unreadable"), DocumentError("new", "no", stage="prepare")]
    assert sync(tmp_path, windows("a", 1, 1), errors) == counts(unchanged=1, deleted=1, kept=1)
    assert rows(tmp_path) == [("a", 0, 1.0), ("b", 0, 1.0)]


def test_a_run_that_embedded_nothing_but_could_not_read_a_line_changes_nothing(
    tmp_path: Path,
) -> None:
    sync(tmp_path, windows("a", 1, 1) + windows("b", 1, 1))
    before = table(tmp_path).version
    assert sync(tmp_path, [], [DocumentError("in.jsonl:1", "bad JSON")]) == {
        **counts(),
        "held": 2,
    }
    assert rows(tmp_path) == [("a", 0, 1.0), ("b", 0, 1.0)]
    assert table(tmp_path).version in (before, before + 1), "no row changed"


def test_a_sync_without_rows_deletes_every_document_but_those_set_aside(tmp_path: Path) -> None:
    sync(tmp_path, windows("a", 1, 1) + windows("b", 2, 1))
    changes = sync(tmp_path, [], [DocumentError("b", "unreadable")])
    assert changes == counts(deleted=1, kept=1)
    assert rows(tmp_path) == [("b", 0, 1.0), ("b", 1, 1.0)]


def test_a_run_that_embedded_nothing_never_empties_the_table(tmp_path: Path) -> None:
    # Every document is blank now (skipped by a rule): a sync would delete every row.
    sync(tmp_path, windows("a", 1, 1) + windows("b", 2, 1))
    before = table(tmp_path).version
    skipped = [DocumentError(doc, "blank document", stage="skip") for doc in ("a", "b")]
    with pytest.raises(UserError) as refused:
        sync(tmp_path, [], skipped)
    message = str(refused.value)
    assert "embedded no document (2 skipped by a rule" in message
    assert "0 set aside by a failure" in message
    assert "delete all 2 documents" in message
    assert "nothing was changed" in message
    assert "mode: overwrite" in message
    assert table(tmp_path).version == before
    assert rows(tmp_path) == [("a", 0, 1.0), ("b", 0, 1.0), ("b", 1, 1.0)]
    # The fix it names empties the table, as asked.
    out = sink(tmp_path, mode="overwrite")
    out.start(manifest("o"))
    out.close()
    assert rows(tmp_path) == []


def test_sync_refuses_a_table_of_another_model_before_any_work(tmp_path: Path) -> None:
    sync(tmp_path, windows("a", 1, 1))
    other = {**MANIFEST, "model": {"use": "bert-encoder", "with": {"weights": "other"}}}
    with pytest.raises(UserError, match=r"cannot sync into .*another model configuration"):
        sink(tmp_path, mode="sync").start(other)
    assert rows(tmp_path) == [("a", 0, 1.0)]


def test_counts_are_only_those_of_the_run_that_published(tmp_path: Path) -> None:
    sync(tmp_path, windows("a", 1, 1))
    assert sink(tmp_path).published_changes("another-run") is None
    overwrite = sink(tmp_path)
    overwrite.start(manifest("r2"))
    overwrite.write(windows("a", 1, 1))
    overwrite.close()
    assert documents(sink(tmp_path).published_changes("r2")) is None, "overwrite counts none"


@pytest.mark.parametrize("resume", [False, True], ids=["fresh-run", "resumed"])
def test_a_sync_that_died_while_publishing_is_undone_and_then_applied_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, resume: bool
) -> None:
    sync(tmp_path, windows("a", 2, 1) + windows("b", 1, 1))
    again = windows("a", 1, 2) + windows("c", 1, 3)
    dying = sink(tmp_path, mode="sync")
    dying.start(manifest("r"))
    dying.write(again[:1])
    dying.commit("c1")
    dying.write(again[1:])
    die_after_the_table_commit(dying, monkeypatch)
    with pytest.raises(Died):
        dying.close()
    assert rows(tmp_path) == [("a", 0, 2.0), ("c", 0, 3.0)], "deleted, not yet done"
    monkeypatch.undo()

    out = sink(tmp_path, mode="sync")
    if resume:
        assert out.recover(manifest("r")) == "c1"
        out.write(again[1:])
    else:
        out.start(manifest("r"))
        out.write(again)
    assert rows(tmp_path) == [("a", 0, 1.0), ("a", 1, 1.0), ("b", 0, 1.0)], "undone first"
    out.close()
    assert rows(tmp_path) == [("a", 0, 2.0), ("c", 0, 3.0)]
    assert documents(sink(tmp_path).published_changes("r")) == counts(
        added=1, replaced=1, deleted=1
    )


def test_a_staged_sync_publishes_the_union_of_its_parts_then_deletes(tmp_path: Path) -> None:
    sync(tmp_path, windows("a", 2, 1) + windows("b", 1, 1) + windows("c", 1, 1))
    before = table(tmp_path).version

    def make() -> LanceDbSink:
        return lance(tmp_path, mode="sync")

    make().begin_parts("run-1", 2, MANIFEST)
    parts = [(windows("a", 1, 5), []), (windows("d", 1, 5), [DocumentError("c", "unreadable")])]
    for index, (records, errors) in enumerate(parts):
        part = make().part("run-1", Shard(index, 2))
        assert part.recover(MANIFEST) is None
        part.write(records)
        for error in errors:
            part.write_error(error)
        part.close()
    make().publish_parts("run-1", 2, MANIFEST)
    # "a" from shard 0 and "d" from shard 1 both survive; "b" is gone; "c" failed in shard 1.
    assert rows(tmp_path) == [("a", 0, 5.0), ("c", 0, 1.0), ("d", 0, 5.0)]
    assert table(tmp_path).version == before + 1
    assert documents(make().published_changes("run-1")) == counts(
        added=1, replaced=1, deleted=1, kept=1
    )


@pytest.fixture(scope="module")
def discovered() -> Registry:
    """The installed components and the fault fixtures, as ``seamline run`` finds them."""
    with kill_points.in_process_cli():
        from seamline.core.config.user import user_trust
        from seamline.core.registry import Registry

        return Registry.discover(user_trust())


def test_seamline_run_says_what_a_sync_changed(tmp_path: Path, discovered: Registry) -> None:
    """As a user sees it: a sync over a smaller input that fails midway deletes nothing;
    resumed, it deletes what is gone, and the summary's counts come from the table (the
    30 documents left embed to the same rows)."""
    import lancedb

    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: notes\n"
        "loader: {use: fault-loader, with: {documents: 40}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync}}\n"
        "run: {batch_size: 4, buckets: [8, 16], checkpoint_every: 5}\n",
        encoding="utf-8",
    )
    smaller = ("--set", "loader.with.documents=30")

    def rows() -> int:
        return int(lancedb.connect(str(tmp_path / "out")).open_table("emb").count_rows())

    with cli_in(tmp_path, discovered) as cli:
        first = seamline(cli, Path("pipeline.yaml"))
        assert first.exit_code == 0, first.stderr
        failed = seamline(cli, Path("pipeline.yaml"), *smaller, SEAMLINE_FAULT_RAISE="read:20")
        assert failed.exit_code == 1, failed.stderr
        assert rows() == 40, "a run that did not finish deletes nothing"
        resumed = seamline(cli, Path("pipeline.yaml"), *smaller, "--resume")
    assert "documents in the output: 40 added, 0 replaced, 0 deleted, 0 unchanged" in first.stdout
    assert resumed.exit_code == 0, resumed.stderr
    said = " ".join(resumed.stdout.split())
    assert "resumed after cursor" in said
    assert "documents in the output: 0 added, 0 replaced, 10 deleted, 30 unchanged, 0 set" in said
    assert rows() == 30


def twelve_synced(tmp_path: Path) -> Path:
    """``pipeline.yaml``: 12 documents of the fault loader into ``out/emb.lance`` by ``sync``."""
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: notes\n"
        "loader: {use: fault-loader, with: {documents: 12}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync}}\n"
        "run: {batch_size: 4, buckets: [8, 16]}\n",
        encoding="utf-8",
    )
    return Path("pipeline.yaml")


def test_seamline_run_says_what_older_versions_keep(tmp_path: Path, discovered: Registry) -> None:
    """As a user meets it: the first run keeps nothing older and says nothing; a second
    keeps the first's version and says how many and how much, and how to remove them,
    in text and in JSON; with prune the line goes, as the versions do."""
    pipeline = twelve_synced(tmp_path)
    with cli_in(tmp_path, discovered) as cli:
        first = seamline(cli, pipeline)
        second = seamline(cli, pipeline, "--set", "loader.with.documents=10")
        as_json = seamline(cli, pipeline, "--format", "json")
        pruned = seamline(cli, pipeline, "--set", "sink.with.prune=true")
    for ran in (first, second, as_json, pruned):
        assert ran.exit_code == 0, ran.stderr
    assert "older versions" not in first.stdout
    said = " ".join(second.stdout.split())
    assert "older versions: 1 kept, " in said, said
    assert "prune: true removes them: docs/pipelines.md#sink-lancedb, Disk over republishes" in said
    document = json.loads(as_json.stdout)
    assert document["older_versions"]["kept"] == 2
    assert document["older_versions"]["bytes"] > 0
    assert document["older_versions"]["at_least"] is False, "a sync masks no row it keeps"
    assert document["changes"] == {
        "added": 2,
        "replaced": 0,
        "deleted": 0,
        "unchanged": 10,
        "kept": 0,
    }
    assert "older versions" not in pruned.stdout


def test_an_upsert_leaving_rows_in_place_says_at_least_what_older_versions_keep(
    tmp_path: Path, discovered: Registry
) -> None:
    """An upsert of 10 of 12 documents leaves the other two's rows in the old data file,
    the rest of it masked, which pruning frees too: the figure is a lower bound, and the
    line and the JSON say so (tR2 F2: 419,016 bytes said, 916,073 freed)."""
    pipeline = twelve_synced(tmp_path)
    upsert = ("--set", "sink.with.mode=upsert", "--set", "loader.with.documents=10")
    with cli_in(tmp_path, discovered) as cli:
        assert seamline(cli, pipeline).exit_code == 0
        said = seamline(cli, pipeline, *upsert)
        as_json = seamline(cli, pipeline, *upsert, "--format", "json")
    assert said.exit_code == 0, said.stderr
    line = " ".join(said.stdout.split())
    assert "older versions: 1 kept, at least " in line, said.stdout
    assert "MB, and 10 deleted rows in the newest version's files (prune: true" in line
    assert as_json.exit_code == 0, as_json.stderr
    assert json.loads(as_json.stdout)["older_versions"]["at_least"] is True


def test_run_summary_keeps_older_versions_apart_from_the_documents(
    tmp_path: Path, discovered: Registry
) -> None:
    """From Python: ``RunSummary.changes`` counted ``older_versions`` and
    ``older_versions_bytes`` among the documents (a script summing it counted bytes);
    they are ``RunSummary.older_versions`` now, and ``changes`` documents only."""
    from seamline.core import OlderVersions, Pipeline

    pipeline = twelve_synced(tmp_path)
    with kill_points.in_process_cli(), contextlib.chdir(tmp_path):
        first = Pipeline.from_yaml(pipeline, registry=discovered).run()
        smaller = ["loader.with.documents=10"]
        second = Pipeline.from_yaml(pipeline, smaller, registry=discovered).run()
    assert second.changes == {"added": 0, "replaced": 0, "deleted": 2, "unchanged": 10, "kept": 0}
    assert first.older_versions is None, "a first publication keeps nothing older"
    assert isinstance(second.older_versions, OlderVersions)
    assert second.older_versions.kept == 1
    assert second.older_versions.bytes > 0


def test_seamline_run_over_a_folder_gone_blank_leaves_the_table(
    tmp_path: Path, discovered: Registry
) -> None:
    """As a user meets it: every note of a synced folder is now empty (a broken export),
    the run says so with exit code 2 and the table keeps its rows; overwrite empties it."""
    import lancedb

    notes = tmp_path / "notes"
    notes.mkdir()
    for name in ("a", "b", "c"):
        (notes / f"{name}.txt").write_text(f"note {name} about lance tables", encoding="utf-8")
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: notes\n"
        "loader: {use: text-files, with: {root: notes}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync}}\n",
        encoding="utf-8",
    )

    def rows() -> int:
        return int(lancedb.connect(str(tmp_path / "out")).open_table("emb").count_rows())

    with cli_in(tmp_path, discovered) as cli:
        assert seamline(cli, Path("pipeline.yaml")).exit_code == 0
        before = rows()
        for note in notes.iterdir():
            note.write_text(" \n", encoding="utf-8")
        refused = seamline(cli, Path("pipeline.yaml"))
        assert rows() == before > 0, "the table keeps every row"
        emptied = seamline(cli, Path("pipeline.yaml"), "--set", "sink.with.mode=overwrite")
    assert refused.exit_code == 2, refused.stderr
    assert "Traceback" not in refused.stderr
    said = " ".join(refused.stderr.split())
    assert "this run embedded no document" in said, said
    assert "delete all 3 documents" in said, said
    assert emptied.exit_code == 0, emptied.stderr
    assert rows() == 0


def test_a_table_whose_rows_cannot_be_read_is_refused_clearly_and_left_alone(
    tmp_path: Path,
) -> None:
    sync(tmp_path, windows("a", 2, 1))
    data = tmp_path / "db" / "emb.lance" / "data"
    for damaged in data.iterdir():
        damaged.write_bytes(b"not a lance file")
    with pytest.raises(UserError, match=r"cannot sync into .*emb.lance.*rows cannot be read"):
        sync(tmp_path, windows("a", 1, 1))
    assert table(tmp_path).version == 1, "nothing was committed"


def test_seamline_run_keeps_the_rows_of_lines_it_could_not_read(
    tmp_path: Path, discovered: Registry
) -> None:
    """As a user meets it: a JSON-lines export gains a bad byte and a broken line; sync used to
    delete those two documents' rows (the failures name ``notes.jsonl:2``, not their ids)."""
    import lancedb

    notes = tmp_path / "notes.jsonl"
    notes.write_bytes(
        b'{"id":"d0","text":"doc zero"}\n{"id":"d1","text":"doc one"}\n'
        b'{"id":"d2","text":"doc two"}\n'
    )
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: notes\n"
        "loader: {use: jsonl, with: {path: notes.jsonl}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync}}\n",
        encoding="utf-8",
    )

    def ids() -> list[str]:
        found = lancedb.connect(str(tmp_path / "out")).open_table("emb").to_arrow()
        return sorted(set(found.column("id").to_pylist()))

    with cli_in(tmp_path, discovered) as cli:
        assert seamline(cli, Path("pipeline.yaml")).exit_code == 0
        notes.write_bytes(
            b'{"id":"d0","text":"doc zero"}\n{"id":"d1","text":"caf\xe9 one"}\n'
            b'{"id":"d2","text":"doc two",}\n'
        )
        held = seamline(cli, Path("pipeline.yaml"))
        assert ids() == ["d0", "d1", "d2"], "no row of an unreadable line deleted"
        notes.write_bytes(b'{"id":"d0","text":"doc zero"}\n')  # d1 and d2 really removed
        deleted = seamline(cli, Path("pipeline.yaml"))
    assert held.exit_code == 0, held.stderr
    said = " ".join(held.stdout.split())
    assert "0 deleted, 1 unchanged, 0 set aside (their rows kept), 2 not in the input but kept" in (
        said
    ), said
    warned = " ".join(held.stderr.split())
    assert "sync deletes no document this run" in warned, warned
    assert "'notes.jsonl:2', 'notes.jsonl:3'" in warned, warned
    assert deleted.exit_code == 0, deleted.stderr
    assert "2 deleted, 1 unchanged" in " ".join(deleted.stdout.split())
    assert ids() == ["d0"]


def test_a_place_holds_deletions_back_even_when_a_document_has_its_id(tmp_path: Path) -> None:
    """Any string may be a document's id: an unreadable line's place (``in.jsonl:1``) that
    is also the id of an embedded document was taken for that document, so sync deleted
    the rows of the one the unreadable line stood for."""
    sync(tmp_path, windows("x", 1, 1) + windows("y", 1, 1))
    unread = [DocumentError("in.jsonl:1", "bad JSON", {"line": 1}, place=True)]
    changes = sync(tmp_path, windows("y", 1, 1) + windows("in.jsonl:1", 1, 2), unread)
    assert changes == {**counts(added=1, unchanged=1), "held": 1}
    assert [row[0] for row in rows(tmp_path)] == ["in.jsonl:1", "x", "y"]


def test_seamline_run_keeps_a_line_it_could_not_read_whose_place_is_another_id(
    tmp_path: Path, discovered: Registry
) -> None:
    """As a user met it: line 1 broke, and line 3's id is ``docs.jsonl:1``, the place line
    1 is recorded under; sync said "1 deleted" and the document of line 1 was gone."""
    import lancedb

    docs = tmp_path / "docs.jsonl"
    docs.write_bytes(b'{"id":"x","text":"doc x"}\n{"id":"y","text":"doc y"}\n')
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: docs\n"
        "loader: {use: jsonl, with: {path: docs.jsonl}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync}}\n",
        encoding="utf-8",
    )
    with cli_in(tmp_path, discovered) as cli:
        assert seamline(cli, Path("pipeline.yaml")).exit_code == 0
        docs.write_bytes(
            b'{"id":"x","text":"doc x"\n{"id":"y","text":"doc y"}\n'
            b'{"id":"docs.jsonl:1","text":"a third"}\n'
        )
        held = seamline(cli, Path("pipeline.yaml"))
    assert held.exit_code == 0, held.stderr
    found = lancedb.connect(str(tmp_path / "out")).open_table("emb").to_arrow()
    assert sorted(set(found.column("id").to_pylist())) == ["docs.jsonl:1", "x", "y"]
    assert "0 deleted" in " ".join(held.stdout.split())
    record = json.loads((tmp_path / "out" / "emb.errors.jsonl").read_text())
    assert (record["id"], record["place"]) == ("docs.jsonl:1", True)


def test_a_repeated_id_holds_no_deletion_back(tmp_path: Path) -> None:
    """A repeat is recorded under its place (``in.jsonl:4``), but its id was read and the
    input holds it: one repeated line held back the deletion of every document removed
    from the input ("0 deleted ... 2 not in the input but kept")."""
    sync(tmp_path, windows("a", 2, 1) + windows("b", 1, 1) + windows("c", 1, 1))
    repeat = DocumentError("in.jsonl:4", "duplicate id 'a'", place=True, duplicate_of="a")
    assert sync(tmp_path, windows("a", 1, 2), [repeat]) == counts(replaced=1, deleted=2)
    assert rows(tmp_path) == [("a", 0, 2.0)], "a's rows are those of its first line"
    # A repeat of a document whose first line was set aside keeps that one's rows only.
    sync(tmp_path, windows("a", 1, 2) + windows("b", 1, 1) + windows("c", 1, 1))
    failed = DocumentError("b", "text field 'text' must be a string, not int")
    repeat = DocumentError("in.jsonl:4", "duplicate id 'b'", place=True, duplicate_of="b")
    changes = sync(tmp_path, windows("a", 1, 2), [failed, repeat])
    assert changes == counts(unchanged=1, deleted=1, kept=1)
    assert rows(tmp_path) == [("a", 0, 2.0), ("b", 0, 1.0)]


REPEATED = b'{"id":"d0","text":"doc 0 again"}\n'
BLANK_ID = b'{"id":"  ","text":"a line whose id is only spaces"}\n'


@pytest.mark.parametrize("odd", [REPEATED, BLANK_ID], ids=["repeated-id", "blank-id"])
def test_seamline_run_deletes_what_was_removed_though_a_line_repeats_an_id(
    tmp_path: Path, discovered: Registry, odd: bytes
) -> None:
    """As a user met it: day 2's export dropped two documents and repeated one line; sync
    said "0 deleted ... 2 not in the input but kept" (blaming a line it could not read) and
    search still found the removed documents. A line whose id is only whitespace did the
    same while it was refused (set aside under its place, which may stand for any
    document); it is a document of that id."""
    import lancedb

    docs = tmp_path / "docs.jsonl"
    docs.write_bytes(b"".join(b'{"id":"d%d","text":"doc %d"}\n' % (i, i) for i in range(4)))
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: docs\n"
        "loader: {use: jsonl, with: {path: docs.jsonl}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance, mode: sync, prune: true}}\n",
        encoding="utf-8",
    )
    with cli_in(tmp_path, discovered) as cli:
        assert seamline(cli, Path("pipeline.yaml")).exit_code == 0
        docs.write_bytes(b'{"id":"d0","text":"doc 0"}\n{"id":"d1","text":"doc 1"}\n' + odd)
        synced = seamline(cli, Path("pipeline.yaml"))
    assert synced.exit_code == 0, synced.stderr
    said = " ".join(synced.stdout.split())
    added = "0 added" if odd == REPEATED else "1 added"
    assert f"{added}, 0 replaced, 2 deleted, 2 unchanged" in said, said
    assert "not in the input but kept" not in said, said
    assert "sync deletes no document" not in synced.stderr
    found = lancedb.connect(str(tmp_path / "out")).open_table("emb").to_arrow()
    ids = sorted(set(found.column("id").to_pylist()))
    assert ids == (["d0", "d1"] if odd == REPEATED else ["  ", "d0", "d1"])
    assert "doc 0 again" not in found.column("text").to_pylist(), "d0 is its first line"
    if odd == REPEATED:
        record = json.loads((tmp_path / "out" / "emb.errors.jsonl").read_text())
        assert (record["id"], record["place"], record["duplicate_of"]) == (
            "docs.jsonl:3",
            True,
            "d0",
        )
