"""Path spellings × sinks × executors: a run, a killed run resumed, and what each published.

Every example in the README gives the sink a relative path. A checkpoint used to
record absolute paths and compare them with the relative destination, so a lancedb
run that had committed could not publish, and ``--resume`` of every sink refused.
This harness runs ``seamline run`` the way users do, from a working directory of
its own, with the sink's path spelled each way (:mod:`tests.faults.spellings`), for
every first-party sink and both executors:

with ``local``, a ``seamline run`` subprocess that the scaling fixtures' ``faults``
monitor ends (``os._exit``, no cleanup: a kill) at its 4th batch, after two commits,
then ``seamline run --resume`` in the same directory, which commits again and
publishes (a lancedb run that had committed could not); with ``ray``, in one spelling
per sink and one sink per spelling (:func:`cells`), a run on two shards (one actor)
whose actor is ended at its 4th batch: Ray restarts it, the shard resumes from its
last commit, and the run publishes the parts.

Each published output is compared, record for record (span, vector within 1e-6) and
error for error, with an uninterrupted local run's, and the output folder must hold
the published files only. ``tests/scaling/test_path_spellings.py`` asserts all of
it and checks that docs/reliability.md holds the table :func:`render` makes.
The ``seamline run`` commands run in this process (typer's runner), except the
local kills; Ray runs on the session's cluster (or one started for the table).
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

from seamline.contracts import OutputRecord
from seamline.core.config.user import user_trust
from seamline.core.registry import Registry
from tests.faults.component_scenarios import Ran, in_process_cli, seamline
from tests.faults.fixture_plugin import PLUGIN as FAULTS_PLUGIN
from tests.faults.spellings import LABELS, SPELLINGS, Placed, place
from tests.outcome_tables import Observations, check, expected, table, text_cell
from tests.readback import read_errors, read_records
from tests.shared_compilations import session_cache

NAME = "path-spellings"
SINKS = {"jsonl": "emb.jsonl", "npy": "emb.npy", "parquet": "emb.parquet", "lancedb": "emb.lance"}
TEXTS = [" ".join(f"w{i}x{j}" for j in range(1 + i % 7)) for i in range(24)]
TEXTS[5] = "!unreadable"
TEXTS[14] = "!unreadable"
KILL_AT_BATCH = 4
"""The batch the ``faults`` monitor ends its process at: after two commits (every 3
documents, batches of 2)."""
KILLED = 17
"""The exit code of a process the ``faults`` monitor ends (``os._exit(17)``)."""
PLUGIN = Path(__file__).parent / "plugin"


def cells() -> list[str]:
    """Every ``executor:sink:spelling`` run, in the table's order: on ``local`` every sink
    with every spelling; on ``ray`` one spelling per sink and one sink per spelling.

    The ray cells are a Latin square's diagonal, not the whole square: once the driver has
    validated the pipeline every path is absolute, whatever its spelling (the local cells
    show each sink publishing each spelling), and what a spelling can still break on Ray
    (the staging folder beside the output, the parts' manifest, the publish) each sink
    and each spelling meet once here. Each of the twelve other Ray runs cost ten to forty
    seconds of the suite's time and found nothing the four did not.
    """
    local = [f"local:{s}:{p}" for s in SINKS for p in SPELLINGS]
    ray = [f"ray:{s}:{SPELLINGS[i]}" for i, s in enumerate(SINKS)]
    return [*local, *ray]


def pipeline_text(placed: Placed, sink: str, executor: str, marker: Path | None) -> str:
    """The pipeline file: the sink's path as ``placed`` spells it; a kill at the 4th batch
    (once: ``marker`` is written first) when ``marker`` is given."""
    monitors = []
    if marker is not None:
        faults = {"exit_at_batch": KILL_AT_BATCH, "marker": str(marker)}
        monitors = [{"use": "faults", "with": faults}]
    if executor == "ray":
        settings = {"actors": 1, "shards": 2, "cpus_per_actor": 1, "max_restarts": 2}
        executor_text = "{use: ray, with: " + json.dumps({**settings, "retries": 0}) + "}"
    else:
        executor_text = "{use: local}"
    return (
        "pipeline: path-spellings\n"
        f"loader: {{use: lines, with: {json.dumps({'texts': TEXTS})}}}\n"
        "model: {use: tiny}\n"
        "attention: {use: native}\n"
        f"monitors: {json.dumps(monitors)}\n"
        f"sink: {{use: {sink}, with: {{path: {json.dumps(str(placed.path))}}}}}\n"
        f"run: {{batch_size: 2, buckets: [4, 8], checkpoint_every: 3, executor: {executor_text}}}\n"
    )


def write_pipeline(placed: Placed, sink: str, executor: str, marker: Path | None) -> Path:
    path = placed.cwd / "pipeline.yaml"
    path.write_text(pipeline_text(placed, sink, executor, marker), encoding="utf-8")
    return path


@contextlib.contextmanager
def ray_environment() -> Iterator[None]:
    """The scaling fixtures importable by Ray's actors (the driver's ``PYTHONPATH`` goes
    to them), and Ray started for a table made outside pytest, stopped afterwards."""
    previous = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN), previous) if p)
    started = False
    try:
        import ray

        if not ray.is_initialized():
            path = os.environ["PYTHONPATH"]
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                logging_level="warning",
                runtime_env={"env_vars": {"PYTHONPATH": path}},
            )
            started = True
        yield
    finally:
        if started:
            import ray

            ray.shutdown()
        if previous is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = previous


# --- what a run published -----------------------------------------------------------------


@dataclass(frozen=True)
class Published:
    """What an output folder holds after a run: the records, the errors, the names."""

    records: list[OutputRecord] | None
    errors: list[str]
    names: list[str]


def published(placed: Placed) -> Published:
    output = placed.output
    records = read_records(output)
    errors = sorted(str(e["id"]) for e in read_errors(output) or []) if records is not None else []
    names = sorted(p.name for p in placed.folder.iterdir()) if placed.folder.exists() else []
    return Published(records, errors, names)


def expected_names(sink: str, executor: str) -> list[str]:
    """The names an output folder holds once published: the output and its companions, or
    (``jsonl`` and ``npy`` on ray) the manifest naming the parts in the staging folder."""
    name = SINKS[sink]
    if executor == "ray" and sink in ("jsonl", "npy"):
        return sorted(["emb.manifest.json", f".{name}.shards"])
    companions = ["emb.index.jsonl"] if sink == "npy" else []
    return sorted([name, "emb.errors.jsonl", "emb.manifest.json", *companions])


def same_records(got: list[OutputRecord] | None, want: list[OutputRecord]) -> bool:
    """Each reference record exactly once, with its span and its vector (within 1e-6)."""
    if got is None:
        return False
    keyed = {(r.doc_id, int(r.index)): r for r in got}
    if len(keyed) != len(got) or sorted(keyed) != sorted((r.doc_id, int(r.index)) for r in want):
        return False
    return all(
        tuple(keyed[(r.doc_id, int(r.index))].span) == tuple(r.span)
        and np.allclose(keyed[(r.doc_id, int(r.index))].vector, r.vector, atol=1e-6, rtol=0)
        for r in want
    )


# --- one cell -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Cell:
    """One spelling, sink and executor: a run (killed after its commits, and resumed)."""

    executor: str
    sink: str
    spelling: str
    killed: int
    """``local``: the exit code of the ``seamline run`` process the kill ended; ``ray``: that
    of the run (in which an actor was ended and restarted)."""
    marker: bool
    """Whether the kill happened (the ``faults`` monitor writes its marker just before)."""
    resumed: Ran
    """``local``: ``seamline run --resume``; ``ray``: the run itself."""
    output: Published


@dataclass(frozen=True)
class Killed:
    """A local cell's pipeline, laid out, and how its killed subprocess ended."""

    placed: Placed
    pipeline: Path
    marker: Path
    returncode: int


class SpellingOutcomes(Observations[Cell]):
    """Each cell run once, on first demand (the local kills two at a time, first); the
    reference run once."""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(cells())

    @cached_property
    def registry(self) -> Registry:
        """What ``seamline run`` discovers here: the installed components and the fixtures."""
        sys.path[:0] = [str(FAULTS_PLUGIN), str(PLUGIN)]
        try:
            return Registry.discover(user_trust())
        finally:
            del sys.path[:2]

    @cached_property
    def reference(self) -> Published:
        """An uninterrupted local run, absolute path, jsonl sink: what every cell must publish."""
        placed = place(self.base / "reference", SINKS["jsonl"], "absolute")
        ran = self.run_in(placed, write_pipeline(placed, "jsonl", "local", None))
        if ran.exit_code:
            raise RuntimeError(f"the reference run failed: {ran.stdout} {ran.stderr}")
        reference = published(placed)
        assert reference.records is not None
        return reference

    def run_in(self, placed: Placed, pipeline: Path, *flags: str) -> Ran:
        """``seamline run pipeline.yaml`` in this process, from ``placed.cwd`` (the file named
        relatively, as a user types it)."""
        with in_process_cli(self.registry) as cli, contextlib.chdir(placed.cwd):
            return seamline(cli, Path(pipeline.name), *flags)

    @cached_property
    def local_kills(self) -> dict[str, Killed]:
        """Every local cell's ``seamline run`` subprocess, killed at the 4th batch, two at a
        time (the machine's two cores); the resumes then run here, one by one. The reference
        runs first: what it compiles, the subprocesses find in the cache."""
        assert self.reference.records is not None
        laid = {}
        for key in self.keys:
            executor, sink, spelling = key.split(":")
            if executor == "local":
                folder = self.base / "local-kills" / key.replace(":", "-")
                placed = place(folder, SINKS[sink], spelling)
                marker = folder / "killed"
                laid[key] = (placed, write_pipeline(placed, sink, executor, marker), marker)
        with ThreadPoolExecutor(max_workers=2) as pool:
            codes = pool.map(lambda args: self.killed_subprocess(*args[:2]), laid.values())
        return {key: Killed(*laid[key], code) for key, code in zip(laid, codes, strict=True)}

    def killed_subprocess(self, placed: Placed, pipeline: Path) -> int:
        """``seamline run`` in a process of its own, from ``placed.cwd``, until the kill."""
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGIN), env.get("PYTHONPATH")) if p)
        # The session's cache (the reference run compiled the programs: hits), else one
        # of the harness's own, where only the first subprocesses compile.
        env["SEAMLINE_CACHE_DIR"] = session_cache(self.base / "jax-cache")
        command = [sys.executable, "-m", "seamline.adapters.cli.main", "run", pipeline.name]
        done = subprocess.run(
            [*command, "--log-level", "warning"],
            cwd=placed.cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        return done.returncode

    def observe(self, key: str, workdir: Path) -> Cell:
        executor, sink, spelling = key.split(":")
        if executor == "local":
            killed = self.local_kills[key]
            resumed = self.run_in(killed.placed, killed.pipeline, "--resume")
            return Cell(
                executor,
                sink,
                spelling,
                killed.returncode,
                killed.marker.exists(),
                resumed,
                published(killed.placed),
            )
        marker = workdir / "killed"
        placed = place(workdir, SINKS[sink], spelling)
        ran = self.run_in(placed, write_pipeline(placed, sink, executor, marker))
        return Cell(
            executor,
            sink,
            spelling,
            ran.exit_code,
            marker.exists(),
            ran,
            published(placed),
        )


def resumed_after_a_commit(cell: Cell) -> bool:
    """Whether a local ``--resume`` continued after a commit (its summary says from where)."""
    return "resumed after cursor" in cell.resumed.stdout


# --- the table ---------------------------------------------------------------------------------


def output_cell(got: Published, reference: Published, sink: str, executor: str) -> str:
    """Whether the output is the reference's, and whether the folder holds only it."""
    if got.records is None:
        return "**nothing published**"
    same = same_records(got.records, reference.records or []) and got.errors == reference.errors
    names = expected_names(sink, executor)
    stray = sorted(set(got.names) - set(names))
    missing = sorted(set(names) - set(got.names))
    said = check(same, "equal to an uninterrupted run's", "differs")
    if stray or missing:
        left = [*(f"left `{n}`" for n in stray), *(f"no `{n}`" for n in missing)]
        said += f"; **{'; '.join(left)}**"
    return said


def first_line(ran: Ran, workdir: Path) -> str:
    """The first line a failed run printed, as a cell (nothing for a run that succeeded)."""
    if ran.exit_code == 0:
        return ""
    lines = [line for line in ran.said.splitlines() if line.strip()]
    return ": " + text_cell(lines[0] if lines else "", {str(workdir): "<tmp>"})


def row(outcomes: SpellingOutcomes, key: str) -> tuple[str, ...]:
    cell = outcomes[key]
    workdir = outcomes.base
    code = cell.resumed.exit_code
    if cell.executor == "local":
        killed = "process ended: " + expected(cell.killed, KILLED, f"exit {cell.killed}")
        resumed = "`--resume`: " + expected(code, 0, f"exit {code}")
        if code == 0:
            resumed += check(resumed_after_a_commit(cell), ", after the last commit", ", from 0")
    else:
        killed = "an actor ended; Ray restarted it"
        resumed = "the shard, in the run: " + expected(code, 0, f"exit {code}")
    if not cell.marker:
        killed = "**not killed: the cell tested nothing**"
    return (
        f"`{cell.executor}`",
        f"`{cell.sink}`",
        LABELS[cell.spelling],
        killed,
        resumed + first_line(cell.resumed, workdir),
        output_cell(cell.output, outcomes.reference, cell.sink, cell.executor),
    )


def render(outcomes: SpellingOutcomes) -> str:
    header = ("executor", "sink", "path", "killed at the 4th batch", "resumed", "published output")
    return table(header, [row(outcomes, key) for key in outcomes.keys])


def generate() -> str:
    """Run every cell in a temporary directory and render the table."""
    with tempfile.TemporaryDirectory(prefix="seamline-spellings-") as name, ray_environment():
        return render(SpellingOutcomes(Path(name)))
