"""A resumed run's manifest says what made every row, and a resume under other numerics
variables is refused.

A resumed run's manifest named, in ``attention_served``, only the shapes its own process
served, with its own kernels: the shapes only the stopped process used were left out, and
rows of one shape computed by two kernels were put down to the last. A resume under
another ``XLA_FLAGS`` (fast math) was taken, and ``provenance.environment`` then claimed the
whole output was computed so. The commit now carries what served each shape, and a
checkpoint the numerics variables. The run fails in the ``fault-loader`` at a chosen
document (the pipeline commits every 5 documents), through ``seamline run`` in this process.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from structlog.testing import capture_logs

from seamline.contracts.executor import ShardReport, merge_attention
from seamline.core import commits
from tests.faults.component_scenarios import in_process_cli, pipeline, seamline

if TYPE_CHECKING:
    from pathlib import Path

FAST_MATH = "--xla_cpu_enable_fast_math=false"
"""A flag XLA reads (its value does not matter here: the resume is refused before it runs)."""


def _stopped(tmp_path: Path) -> tuple[Path, Path]:
    """A run stopped at document 17, after its commits: the pipeline and the checkpoint."""
    path = pipeline(tmp_path)
    return path, tmp_path / "out" / ".emb.jsonl.checkpoint"


def test_the_commit_carries_what_served_each_shape_and_the_manifest_keeps_it(
    tmp_path: Path,
) -> None:
    path, file = _stopped(tmp_path)
    with in_process_cli() as cli:
        assert seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17").exit_code == 1
        checkpoint = json.loads(file.read_text(encoding="utf-8"))
        committed = commits.decode(checkpoint["cursor"])
        assert committed.served, "the commit says which attention served its rows"
        assert set(committed.served.values()) == {"native"}
        # A shape only the stopped process used, and one it served with another kernel:
        # as a process in another environment (another trust, another ranking) would have.
        first = sorted(committed.served)[0]
        served = {**committed.served, "B1xTq4:only-the-stopped-one": "blockwise"}
        served[first] = "blockwise"
        assert committed.counts is not None
        checkpoint["cursor"] = commits.encode(
            committed.cursor, committed.counts, committed.run_id, served
        )
        file.write_text(json.dumps(checkpoint), encoding="utf-8")
        with capture_logs() as logs:
            again = seamline(cli, path, "--resume", "--format", "json")
    assert again.exit_code == 0, again.stderr
    manifest = json.loads((tmp_path / "out" / "emb.manifest.json").read_text(encoding="utf-8"))
    recorded = manifest["attention_served"]
    assert recorded["B1xTq4:only-the-stopped-one"] == "blockwise", "the stopped process's shape"
    assert recorded[first] == ["blockwise", "native"], "rows of one shape by two kernels"
    assert json.loads(again.stdout)["attention"] == recorded
    warned = [e["event"] for e in logs if e.get("log_level") == "warning"]
    assert any("another attention than the run it continues" in line for line in warned)


def test_a_resume_under_other_numerics_variables_is_refused(tmp_path: Path) -> None:
    path, file = _stopped(tmp_path)
    with in_process_cli() as cli:
        assert seamline(cli, path, SEAMLINE_FAULT_RAISE="read:17").exit_code == 1
        refused = seamline(cli, path, "--resume", XLA_FLAGS=FAST_MATH)
        assert refused.exit_code == 2, refused.stderr
        assert "XLA_FLAGS unset then, " + repr(FAST_MATH) + " now" in refused.stderr
        assert "two numerics environments" in refused.stderr
        assert "--restart" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert file.exists(), "the checkpoint is kept for a resume in its own environment"
        assert json.loads(file.read_text(encoding="utf-8"))["environment"] == {}
        again = seamline(cli, path, "--resume", "--format", "json")
    assert again.exit_code == 0, again.stderr


def test_shards_served_otherwise_are_both_recorded() -> None:
    reports = [
        ShardReport(shard=None, worker="a:1", attention={"B4": "native", "B8": "native"}),
        ShardReport(shard=None, worker="b:2", attention={"B4": "cpu-flash", "B16": "native"}),
    ]
    assert merge_attention(reports) == {
        "B4": ["cpu-flash", "native"],
        "B8": "native",
        "B16": "native",
    }
