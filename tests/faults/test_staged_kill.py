"""A sharded parquet or lancedb run killed (SIGKILL) while its driver publishes the parts.

``publish_staged`` renames the errors file, the output (parquet), then the manifest
last, keeping what each rename replaces under ``.<name>.shards/.publishing-<run>/``
until the manifest is out; a process killed between two renames leaves the previous
files there, and the next attempt (``--resume``'s publication, or a fresh run's
``begin``) puts them back first (``restore_previous``). Here a real ``seamline run``
subprocess (the ``fault-sharded`` executor: its shards in the driver's process) dies
before each rename, and after the manifest before the staging area is deleted. Then:

- a reader either reads the previous output whole or refuses it with a clear error;
- the next attempt, killed before it renames anything (``--resume``), or before any
  shard runs (a fresh run), has put the previous files back: byte for byte as they
  were (unless the manifest already named the killed run: then it is published);
- ``--resume``, or a fresh run, then publishes exactly what an uninterrupted run does,
  each record once, the manifest naming the run, nothing hidden left in the folder.

Each test fails with ``restore_previous`` made a no-op where a rename had replaced a
file before the kill (the errors file, the parquet file): the check after the second
kill finds the new file beside the previous manifest.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.contracts import UserError
from tests.faults.component_scenarios import Ran, seamline
from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import in_process_cli
from tests.readback import read_records
from tests.shared_compilations import session_cache

pytestmark = pytest.mark.kill

PATHS = {"parquet": "out/emb.parquet", "lancedb": "out/emb.lance"}
FILES = {
    "parquet": ["emb.errors.jsonl", "emb.parquet", "emb.manifest.json"],
    "lancedb": ["emb.errors.jsonl", "emb.manifest.json"],
}
"""The files each sink's publication renames into ``out``, in their order."""
BEFORE = ["alpha one", "!beta two", "gamma three"]
"""The previous run's texts: one unreadable (set aside), so its errors file differs."""
AFTER = ["delta four", "epsilon five", "zeta six", "eta seven"]
READ_BEFORE = sorted(t for t in BEFORE if not t.startswith("!"))


def points(sink: str) -> list[str]:
    """Before each rename, and after the last (the manifest), before the parts go."""
    count = len(FILES[sink])
    return [f"staged-rename:{n}" for n in range(1, count + 1)] + [f"staged-renamed:{count}"]


CASES = [(sink, point) for sink in FILES for point in points(sink)]
REPLACED = [
    (sink, point)
    for sink, point in CASES
    if point.startswith("staged-rename:") and point != "staged-rename:1"
]
"""The kill points where a rename had replaced a file: the ones a fresh run's putting back
is for (each case is three processes; the other points are the resume's, above)."""


@pytest.fixture(scope="module")
def cli() -> Iterator[CliRunner]:
    with in_process_cli() as runner:
        yield runner


def write_pipeline(folder: Path, sink: str, texts: list[str]) -> Path:
    path = folder / "p.yaml"
    path.write_text(
        "pipeline: staged\n"
        f"loader: {{use: lines, with: {{texts: {json.dumps(texts)}}}}}\n"
        "model: {use: tiny}\nattention: {use: native}\n"
        f"sink: {{use: {sink}, with: {{path: {PATHS[sink]}}}}}\n"
        "run: {batch_size: 2, buckets: [4, 8], checkpoint_every: 2,"
        " executor: {use: fault-sharded, with: {shards: 3}}}\n",
        encoding="utf-8",
    )
    return path


def killed(folder: Path, point: str, *flags: str) -> subprocess.CompletedProcess[str]:
    """``seamline run p.yaml`` from ``folder`` in a subprocess that dies at ``point``."""
    cache = session_cache(folder.parent / "jax-cache")  # what the session compiled: hits
    env = fault_environment(SEAMLINE_FAULT_KILL=point, SEAMLINE_CACHE_DIR=cache)
    command = [sys.executable, "-m", "seamline.adapters.cli.main", "run", "p.yaml", *flags]
    done = subprocess.run(command, cwd=folder, env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == -9, (point, done.returncode, done.stderr[-2000:])
    return done


def run(cli: CliRunner, folder: Path, *flags: str) -> Ran:
    with contextlib.chdir(folder):  # as a user starts it there
        ran = seamline(cli, Path("p.yaml"), *flags)
    assert ran.exit_code == 0, ran.stderr
    return ran


def texts(folder: Path, sink: str) -> list[str] | None:
    """The published records' texts (None: nothing there); a reader's refusal raised."""
    records = read_records(folder / PATHS[sink])
    return None if records is None else sorted(str(r.text) for r in records)


def published(folder: Path) -> dict[str, bytes]:
    """The bytes of every file the publication renames, as they are in ``out``."""
    return {p.name: p.read_bytes() for p in (folder / "out").iterdir() if p.is_file()}


def read_or_refused(folder: Path, sink: str) -> list[str] | str | None:
    """What a reader reads now: the texts, or why it refuses (its one-line error)."""
    try:
        return texts(folder, sink)
    except UserError as err:
        return str(err)


def assert_whole_or_refused(folder: Path, sink: str) -> None:
    """The previous output read whole, the new one (published), or a clear refusal that
    names the output (never a mix of the two, nor a traceback)."""
    read = read_or_refused(folder, sink)
    if isinstance(read, str):
        assert str(folder / PATHS[sink]) in read, read
        assert "\n" not in read.strip(), read
    else:
        assert read in (READ_BEFORE, sorted(AFTER)), read


def previous_output(cli: CliRunner, folder: Path, sink: str) -> dict[str, bytes]:
    write_pipeline(folder, sink, BEFORE)
    run(cli, folder)
    assert texts(folder, sink) == READ_BEFORE
    before = published(folder)
    assert b'"d1"' in before["emb.errors.jsonl"], "a first rename that replaces something"
    write_pipeline(folder, sink, AFTER)
    return before


def assert_put_back(folder: Path, sink: str, before: dict[str, bytes], point: str) -> None:
    """The previous files back, byte for byte (the manifest last, so a kill after it
    published the run: then the run's output is there, read whole)."""
    if point.startswith("staged-renamed"):
        assert texts(folder, sink) == sorted(AFTER)
        return
    now = published(folder)
    for name in FILES[sink]:
        assert now.get(name) == before.get(name), f"{name} not put back after {point}"
    assert texts(folder, sink) == READ_BEFORE


def assert_uninterrupted(folder: Path, sink: str, run_id: str | None = None) -> None:
    assert texts(folder, sink) == sorted(AFTER), "every record once"
    out = folder / "out"
    manifest = json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))
    if run_id is not None:
        assert manifest["run_id"] == run_id
    hidden = sorted(p.name for p in out.iterdir() if p.name.startswith("."))
    assert not [name for name in hidden if not name.endswith(".lock")], hidden


def staged_run(folder: Path, sink: str) -> str:
    shards = folder / "out" / f".{Path(PATHS[sink]).name}.shards"
    (run_id,) = [p.name for p in shards.iterdir() if not p.name.startswith(".")]
    return run_id


@pytest.mark.parametrize(("sink", "point"), CASES)
def test_a_publication_killed_then_resumed(
    cli: CliRunner, tmp_path: Path, sink: str, point: str
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    before = previous_output(cli, folder, sink)
    killed(folder, point)
    assert_whole_or_refused(folder, sink)
    run_id = staged_run(folder, sink)

    killed(folder, "staged-rename:1", "--resume")  # after the putting back, before a rename
    assert_put_back(folder, sink, before, point)
    run(cli, folder, "--resume")
    # Killed after the manifest, the run was published: --resume finds no staged run (the
    # published one is not resumed) and runs every shard again, under a run id of its own.
    published_run = point.startswith("staged-renamed")
    assert_uninterrupted(folder, sink, None if published_run else run_id)


@pytest.mark.parametrize(("sink", "point"), REPLACED)
def test_a_publication_killed_then_run_afresh(
    cli: CliRunner, tmp_path: Path, sink: str, point: str
) -> None:
    folder = tmp_path / "work"
    folder.mkdir()
    before = previous_output(cli, folder, sink)
    killed(folder, point)
    assert_whole_or_refused(folder, sink)

    killed(folder, "planned:1")  # a fresh run, its staging area begun, no shard run
    assert_put_back(folder, sink, before, point)
    run(cli, folder)
    assert_uninterrupted(folder, sink)
