"""``seamline run`` and ``validate`` as a user types them, from a folder of their own.

The worst bug of its round: a lancedb run whose path is relative (``out/emb.lance``,
as the README writes it) did all its work and then refused to publish it once it had
written a checkpoint. And the other cases where a path or a file beside the output is
not what the sink expects: two outputs that are one file, a checkpoint someone
edited, a FIFO where the destination's lock goes. Each is one line and exit code 2,
never a traceback; ``--restart`` gets past a checkpoint that cannot be resumed.
"""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.faults import kill_points
from tests.faults.component_scenarios import Ran, in_process_cli, pipeline, published, seamline
from tests.faults.component_scenarios import registry as fault_registry

if TYPE_CHECKING:
    from collections.abc import Iterator

    from typer.testing import CliRunner

    from seamline.core.registry import Registry


@pytest.fixture(scope="module")
def discovered() -> Registry:
    """The installed components (every sink) and the fixtures, as ``seamline run`` finds them."""
    with kill_points.in_process_cli():
        from seamline.core.config.user import user_trust
        from seamline.core.registry import Registry

        return Registry.discover(user_trust())


@contextlib.contextmanager
def cli_in(folder: Path, found: Registry | None = None) -> Iterator[CliRunner]:
    """``seamline`` in this process, started in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    with in_process_cli(found) as cli, contextlib.chdir(folder):
        yield cli


def one_line(ran: Ran) -> str:
    assert "Traceback" not in ran.stdout + ran.stderr, ran.stderr
    lines = [line for line in ran.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, ran.stderr
    return lines[0]


def test_the_readmes_relative_lancedb_run_publishes_after_checkpoints(
    tmp_path: Path, discovered: Registry
) -> None:
    """The issue's reproduction: ``out/emb.lance``, checkpoints every 5 of 40 documents."""
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: readme\n"
        "loader: {use: fault-loader, with: {documents: 40}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        "sink: {use: lancedb, with: {path: out/emb.lance}}\n"
        "run: {batch_size: 4, buckets: [8, 16]}\n",
        encoding="utf-8",
    )
    with cli_in(tmp_path, discovered) as cli:
        ran = seamline(cli, Path("pipeline.yaml"), "--set", "run.checkpoint_every=5")
    assert ran.exit_code == 0, ran.stderr
    import lancedb

    table = lancedb.connect(str(tmp_path / "out")).open_table("emb")
    assert table.count_rows() == 40
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "emb.errors.jsonl",
        "emb.lance",
        "emb.manifest.json",
    ], "published, and nothing hidden left behind"


def test_a_tampered_checkpoint_is_one_line_and_restart_starts_over(tmp_path: Path) -> None:
    work = tmp_path / "work"
    path = pipeline(work, out=Path("out") / "emb.jsonl")  # relative: run from work/
    with cli_in(work) as cli:
        failed = seamline(cli, Path(path.name), SEAMLINE_FAULT_RAISE="write:4")
        assert failed.exit_code == 1, failed.stderr
        checkpoint = work / "out" / ".emb.jsonl.checkpoint"
        record = json.loads(checkpoint.read_text(encoding="utf-8"))
        record["files"]["records"]["bytes"] = "x"
        checkpoint.write_text(json.dumps(record), encoding="utf-8")

        refused = seamline(cli, Path(path.name), "--resume")
        assert refused.exit_code == 2
        line = one_line(refused)
        assert line.startswith(f"error: cannot resume: the checkpoint {str(checkpoint)!r} is not")
        assert "files.records.bytes: Input should be a valid integer" in line
        assert "--restart" in line
        assert checkpoint.exists(), "a refused resume leaves the checkpoint for the user"

        restarted = seamline(cli, Path(path.name), "--resume", "--restart")
    assert restarted.exit_code == 0, restarted.stderr
    assert len(published(work / "out") or []) == 30


@pytest.mark.parametrize(
    ("errors_path", "said"),
    [
        (
            "o6/../o6/emb.jsonl",
            "path ('{cwd}/o6/emb.jsonl') and errors_path ('{cwd}/o6/emb.jsonl')",
        ),
        ("link/emb.jsonl", "and errors_path ('{cwd}/link/emb.jsonl') are the same file"),
        ("o6/emb.manifest.json", "errors_path ('{cwd}/o6/emb.manifest.json') and the manifest"),
    ],
)
@pytest.mark.parametrize("command", ["validate", "run"])
def test_outputs_that_are_one_file_are_a_config_error(
    tmp_path: Path, errors_path: str, said: str, command: str
) -> None:
    (tmp_path / "o6").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "o6", target_is_directory=True)
    (tmp_path / "pipeline.yaml").write_text(
        "pipeline: collide\n"
        "loader: {use: fault-loader, with: {documents: 3}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: o6/emb.jsonl, errors_path: {errors_path}}}}}\n",
        encoding="utf-8",
    )
    with cli_in(tmp_path, fault_registry()) as cli:
        from seamline.adapters.cli.main import app

        result = cli.invoke(app, [command, "pipeline.yaml"], env={"COLUMNS": "400"})
    ran = Ran(result.exit_code, result.stdout, result.stderr)
    assert ran.exit_code == 2, ran.stdout + ran.stderr
    line = one_line(ran)
    assert line.startswith("error: pipeline.yaml:5:"), line
    assert said.format(cwd=tmp_path) in line, line
    assert "one would overwrite the other" in line
    assert sorted(os.listdir(tmp_path / "o6")) == [], "nothing was written"


def test_a_fifo_at_the_lock_is_one_line_naming_it(tmp_path: Path) -> None:
    work = tmp_path / "work"
    path = pipeline(work, out=Path("out") / "emb.jsonl")
    (work / "out").mkdir()
    os.mkfifo(work / "out" / ".emb.jsonl.lock")
    with cli_in(work) as cli:
        ran = seamline(cli, Path(path.name))
    assert ran.exit_code == 2, ran.stderr
    line = one_line(ran)
    lock = work / "out" / ".emb.jsonl.lock"
    assert line.startswith(f"error: the lock file {str(lock)!r} is a FIFO (named pipe)"), line
    assert "--resume" not in line
