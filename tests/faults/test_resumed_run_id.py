"""A resumed run is the run it continues: same id, and a manifest that says it resumed.

``seamline run --resume`` of a local run took a new id, so its summary and its manifest's
``run_id`` named the last process only, and nothing in the manifest said that most of the
output came from an earlier one (the summary's ``resumed_from`` alone did). The run fails
in the ``fault-loader`` at a chosen document (the pipeline commits every 5 documents),
through ``seamline run`` in this process.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import TYPE_CHECKING

from seamline.core import commits
from tests.faults.component_scenarios import in_process_cli, pipeline, seamline

if TYPE_CHECKING:
    from pathlib import Path


def test_a_resumed_local_run_keeps_its_id_and_its_manifest_says_it_resumed(
    tmp_path: Path,
) -> None:
    path = pipeline(tmp_path)
    out = tmp_path / "out"
    with in_process_cli() as cli:
        failed = seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17")
        assert failed.exit_code == 1, failed.stderr
        checkpoint = json.loads((out / ".emb.jsonl.checkpoint").read_text(encoding="utf-8"))
        committed = commits.decode(checkpoint["cursor"])
        assert committed.run_id is not None, "the commit names the run that made it"
        again = seamline(cli, path, "--resume", "--format", "json")
    assert again.exit_code == 0, again.stderr
    summary = json.loads(again.stdout)
    manifest = json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))
    assert summary["run_id"] == manifest["run_id"] == committed.run_id
    assert committed.counts is not None
    assert manifest["resumed"] == {"committed_before": asdict(committed.counts)}
    assert summary["committed_before"]["read"] == committed.counts.read


def test_a_run_from_the_beginning_says_nothing_of_a_resume(tmp_path: Path) -> None:
    with in_process_cli() as cli:
        ran = seamline(cli, pipeline(tmp_path), "--format", "json")
    assert ran.exit_code == 0, ran.stderr
    manifest = json.loads((tmp_path / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["run_id"] == json.loads(ran.stdout)["run_id"]
    assert "resumed" not in manifest


def test_a_commit_from_before_the_id_was_recorded_still_resumes(tmp_path: Path) -> None:
    path = pipeline(tmp_path)
    out = tmp_path / "out"
    with in_process_cli() as cli:
        assert seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17").exit_code == 1
        file = out / ".emb.jsonl.checkpoint"
        checkpoint = json.loads(file.read_text(encoding="utf-8"))
        cursor, counts, *_ = commits.decode(checkpoint["cursor"])
        assert counts is not None
        checkpoint["cursor"] = commits.encode(cursor, counts)  # as an older seamline wrote it
        file.write_text(json.dumps(checkpoint), encoding="utf-8")
        again = seamline(cli, path, "--resume", "--format", "json")
    assert again.exit_code == 0, again.stderr
    manifest = json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["run_id"] == json.loads(again.stdout)["run_id"]  # a new one: none known
    assert manifest["resumed"]["committed_before"]["read"] == counts.read
