"""A folder made at the destination while the run works: refused, and the run's work kept.

A user (or another program) made ``out/emb.jsonl/`` after ``seamline run`` began. The
publication then deleted the checkpoint and renamed the manifest into place before the
records file's rename failed, which deleted the partial files: exit code 1, "what the
sink last committed is kept: ... run again with --resume", but nothing was kept, a new
manifest was published beside no output, and ``--resume`` started over. Now every
destination is checked before the first rename, the checkpoint and the partial files
stay until every file is in place (the manifest last), and the error (exit code 2)
names the destination and says what was kept only when it was. Once the folder is gone,
``--resume`` publishes what an uninterrupted run does, every record once. For every sink
of the kit (lancedb: its errors file, the table being a folder of its own).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts.sink_kit import PublishingSink
from seamline.core.config.user import user_trust
from seamline.core.registry import Registry
from tests.faults.component_scenarios import Ran, in_process_cli, seamline
from tests.faults.fixture_plugin import PLUGIN as FAULTS_PLUGIN
from tests.readback import read_records
from tests.scaling.path_spellings import PLUGIN as SCALING_PLUGIN
from tests.scaling.path_spellings import SINKS, TEXTS, same_records

BLOCKED = {
    "jsonl": "emb.jsonl",
    "npy": "emb.npy",
    "parquet": "emb.parquet",
    "lancedb": "emb.errors.jsonl",
}
"""The name each sink's run finds a folder at when it publishes."""


def registry() -> Registry:
    sys.path[:0] = [str(FAULTS_PLUGIN), str(SCALING_PLUGIN)]
    try:
        return Registry.discover(user_trust())
    finally:
        del sys.path[:2]


def pipeline(folder: Path, sink: str) -> Path:
    folder.mkdir(parents=True)
    path = folder / "pipeline.yaml"
    path.write_text(
        "pipeline: blocked\n"
        f"loader: {{use: lines, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}, with: {{path: out/{SINKS[sink]}}}}}\n"
        "run: {batch_size: 2, buckets: [4, 8], checkpoint_every: 3}\n",
        encoding="utf-8",
    )
    return path


def run(folder: Path, *flags: str, block: str | None = None) -> Ran:
    """``seamline run pipeline.yaml`` from ``folder``; ``block``: a folder made at that name
    in ``out`` just before the sink publishes (after the run's last commit)."""
    real = PublishingSink.close

    def close(self: Any, complete: bool = True) -> None:
        if complete and block is not None:
            (folder / "out" / block / "sub").mkdir(parents=True)
        real(self, complete)

    with (
        in_process_cli(registry()) as cli,
        contextlib.chdir(folder),
        pytest.MonkeyPatch.context() as patch,
    ):
        patch.setattr(PublishingSink, "close", close)
        return seamline(cli, Path("pipeline.yaml"), *flags)


@pytest.mark.parametrize("sink", list(SINKS))
def test_a_folder_in_the_way_is_refused_and_resume_finishes_once(tmp_path: Path, sink: str) -> None:
    reference = tmp_path / "reference"
    pipeline(reference, sink)
    assert run(reference).exit_code == 0
    want = read_records(reference / "out" / SINKS[sink])
    assert want

    work = tmp_path / "work"
    pipeline(work, sink)
    out = work / "out"
    failed = run(work, block=BLOCKED[sink])
    assert failed.exit_code == 2, failed.stderr
    said = " ".join(failed.stderr.split())
    assert f"'{out / BLOCKED[sink]}': a folder is in the way" in said, said
    assert "what the sink last committed is kept" in said, said
    assert "--resume" in said, said
    assert "Traceback" not in failed.stderr
    assert not (out / "emb.manifest.json").exists(), "no manifest beside no output"
    assert list(out.glob(".*.checkpoint")), "the checkpoint is kept"

    (out / BLOCKED[sink] / "sub").rmdir()
    (out / BLOCKED[sink]).rmdir()
    resumed = run(work, "--resume")
    assert resumed.exit_code == 0, resumed.stderr
    assert "nothing to resume" not in resumed.stderr, "the resume went on from the commit"
    assert same_records(read_records(out / SINKS[sink]), want)
    assert not list(out.glob(".*.checkpoint"))
