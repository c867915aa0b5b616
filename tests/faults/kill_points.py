"""Crash-proven resume: real ``seamline run`` processes killed at seeded points, then resumed.

Each interrupted run is a subprocess (``seamline run``) that dies by SIGKILL at one
point: before a write, before a commit, in the middle of a commit (the new checkpoint
written, not yet renamed into place), just after a commit, before each rename while
publishing (the ``fault-jsonl`` sink's ``SEAMLINE_FAULT_KILL`` hook, so the pipeline
file is the same for the resume), and at seeded moments after it started; once by
SIGTERM. The runs killed at a moment are slowed down (``SEAMLINE_FAULT_SLOW``: a
sleep before each write), so that the moment falls inside the run on a fast machine
too. The run sent SIGTERM stops as Ctrl-C stops it (exit code 143, the checkpoint
kept). Each is then resumed with ``seamline run --resume`` (in this process, to keep
the harness quick), and what it published is compared with an uninterrupted run's.
Every run starts in its own directory, as a user's does, and the points take the
ways of spelling the sink's path in turn (:func:`spelling_of`: absolute, relative,
with ``..``, through a linked folder); ``tests/scaling/path_spellings.py`` runs every
spelling for every sink and executor.

The harness records what happened and judges nothing:
``tests/faults/test_kill_resume.py`` asserts (every point resumed to the
uninterrupted output, nothing hidden left behind) and checks that docs/reliability.md
holds the table ``render`` makes of the same results. About a minute on two cores.
"""

from __future__ import annotations

import contextlib
import json
import random
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from typer.testing import CliRunner

from seamline.core.config.user import user_trust
from seamline.core.registry import Registry
from tests.faults import component_scenarios as components
from tests.faults.component_scenarios import Ran
from tests.faults.fixture_plugin import PLUGIN, SCALE_PLUGIN, fault_environment
from tests.faults.spellings import LABELS, SPELLINGS, place
from tests.outcome_tables import check, expected, table
from tests.shared_compilations import session_cache

if TYPE_CHECKING:
    pass

NAME = "kill-points"
DOCUMENTS = 48
SEED = 11
PIPELINE = """\
pipeline: kill-resume
loader: {{use: fault-loader, with: {{documents: {documents}}}}}
model: {{use: tiny}}
attention: {{use: native}}
sink: {{use: fault-jsonl, with: {{path: {path}}}}}
run: {{batch_size: 4, buckets: [8, 16], checkpoint_every: 6}}
"""
COMMITS = DOCUMENTS // 6
SLOW_S = 1.0
"""Sleep before each write of a run killed at a moment: 12 writes or more (48 documents in
batches of 4) outlast the latest moment, 6 s, on any machine."""


def kill_points(seed: int = SEED) -> list[str]:
    """The seeded kill points: every hook kind, at seeded positions, and seeded moments."""
    rng = random.Random(seed)
    points = [f"write:{n}" for n in sorted(rng.sample(range(1, 13), 4))]
    points += [f"commit:{n}" for n in sorted(rng.sample(range(1, COMMITS), 3))]
    points += [f"mid-commit:{n}" for n in sorted(rng.sample(range(1, COMMITS), 4))]
    points += [f"after-commit:{n}" for n in sorted(rng.sample(range(1, COMMITS), 3))]
    points += ["publish:1", "publish:2", "publish:3"]  # errors file, records file, manifest
    points += [f"after:{rng.uniform(2.0, 6.0):.2f}" for _ in range(3)]  # seconds after start
    return points


POINTS = kill_points()
TERM = f"term:{random.Random(SEED + 1).uniform(2.0, 6.0):.2f}"
"""The SIGTERM, at a seeded moment."""


def timed(point: str) -> bool:
    """Whether ``point`` is a moment (a signal sent from outside), not a hook in the sink."""
    return point.startswith(("after:", "term:"))


def signal_of(point: str) -> signal.Signals:
    return signal.SIGTERM if point.startswith("term:") else signal.SIGKILL


def expected_end(point: str) -> int:
    """How the process at ``point`` must end: killed by SIGKILL, or, for the SIGTERM, the
    clean stop Ctrl-C makes (``seamline run`` handles it), exit code 143."""
    return 143 if signal_of(point) == signal.SIGTERM else -signal.SIGKILL


def in_process_cli() -> contextlib.AbstractContextManager[CliRunner]:
    """``seamline run`` in this process, discovering as the subprocesses do: the installed
    components and the fixtures."""
    sys.path[:0] = [str(PLUGIN), str(SCALE_PLUGIN)]
    try:
        discovered = Registry.discover(user_trust())
    finally:
        del sys.path[:2]
    return components.in_process_cli(discovered)


def spelling_of(point: str) -> str:
    """How the kill point's run spells its output path: the points take the spellings in
    turn, so each is killed and resumed at every kind of point with some spelling (and
    the path-spellings table runs every spelling for every sink and executor)."""
    return SPELLINGS[[*POINTS, TERM].index(point) % len(SPELLINGS)]


def write_pipeline(directory: Path, spelling: str = "absolute") -> Path:
    """``directory/pipeline.yaml``, its sink writing ``out/emb.jsonl`` spelled ``spelling``
    (relative to ``directory``, where the run is started, unless absolute)."""
    placed = place(directory, "emb.jsonl", spelling)
    pipeline = placed.cwd / "pipeline.yaml"
    text = PIPELINE.format(documents=DOCUMENTS, path=json.dumps(str(placed.path)))
    pipeline.write_text(text, encoding="utf-8")
    return pipeline


def run_in_process(cli: CliRunner, pipeline: Path, *flags: str) -> Ran:
    """``seamline run pipeline.yaml`` from the pipeline's folder, as a user starts it there."""
    with contextlib.chdir(pipeline.parent):
        return components.seamline(cli, Path(pipeline.name), *flags)


@dataclass(frozen=True)
class Ended:
    """How an interrupted ``seamline run`` subprocess ended."""

    returncode: int
    stderr: str
    """The end of what it printed on stderr (a hook kill's only)."""


def interrupted(pipeline: Path, point: str, cache: Path) -> Ended:
    """Run ``seamline run`` in a subprocess until it dies at ``point``."""
    env = fault_environment(SEAMLINE_CACHE_DIR=session_cache(cache))
    seamline = [sys.executable, "-m", "seamline.adapters.cli.main", "run", pipeline.name]
    if timed(point):
        env["SEAMLINE_FAULT_SLOW"] = str(SLOW_S)
        process = subprocess.Popen(
            [*seamline, "--log-level", "warning"],
            cwd=pipeline.parent,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        time.sleep(float(point.partition(":")[2]))
        process.send_signal(signal_of(point))
        return Ended(process.wait(timeout=120), "")
    env["SEAMLINE_FAULT_KILL"] = point
    done = subprocess.run(
        [*seamline, "--log-level", "warning"],
        cwd=pipeline.parent,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return Ended(done.returncode, done.stderr[-2000:])


def published(directory: Path) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """The published records (None: nothing published), and every file in the output folder."""
    out = directory / "out"
    files = sorted(p.name for p in out.iterdir()) if out.exists() else []
    return components.published(out), files


@dataclass(frozen=True)
class Killed:
    """One kill point: how the process ended, and what ``--resume`` then published."""

    point: str
    ended: Ended
    resumed: Ran
    output: list[dict[str, Any]] | None
    files: list[str]


@dataclass(frozen=True)
class KillResults:
    """The uninterrupted run, and every kill point resumed."""

    reference: Ran
    expected: list[dict[str, Any]] | None
    files: list[str]
    killed: list[Killed]

    def equal(self, killed: Killed) -> bool:
        return killed.output is not None and killed.output == self.expected


def run_harness(workdir: Path) -> KillResults:
    """Run the uninterrupted reference, every kill point (two at a time), and every resume."""
    with in_process_cli() as cli:
        reference_dir = workdir / "reference"
        reference = run_in_process(cli, write_pipeline(reference_dir))
        expected_records, files = published(reference_dir)
        cache = workdir / "jax-cache"  # outside pytest; in it, the session's (see interrupted)
        runs = {
            p: write_pipeline(workdir / p.replace(":", "-"), spelling_of(p))
            for p in [*POINTS, TERM]
        }
        with ThreadPoolExecutor(max_workers=2) as pool:  # two cores: two runs at a time
            ended = list(pool.map(lambda point: interrupted(runs[point], point, cache), runs))
        killed = []
        for (point, pipeline), end in zip(runs.items(), ended, strict=True):
            resumed = run_in_process(cli, pipeline, "--resume")
            output, left = published(pipeline.parent)
            killed.append(Killed(point, end, resumed, output, left))
    return KillResults(reference, expected_records, files, killed)


def ending(returncode: int) -> str:
    """A return code as words: the signal that ended the process, or its exit code."""
    if returncode < 0:
        return signal.Signals(-returncode).name
    return f"exit {returncode}" + (" (finished first)" if returncode == 0 else "")


def render(results: KillResults) -> str:
    """One row per kill point: how the process ended, the resume, the output and what was left."""
    rows = []
    for killed in results.killed:
        resume = expected(killed.resumed.exit_code, 0, f"exit {killed.resumed.exit_code}")
        if killed.output is None:
            output = "**nothing published**"
        else:
            output = check(results.equal(killed), "equal to the uninterrupted run's", "differs")
        stray = sorted(set(killed.files) - set(results.files))
        missing = sorted(set(results.files) - set(killed.files))
        left = check(
            not stray and not missing,
            "none",
            "; ".join(
                [*(f"left `{name}`" for name in stray), *(f"no `{name}`" for name in missing)]
            ),
        )
        rows.append(
            (
                f"`{killed.point}`",
                LABELS[spelling_of(killed.point)],
                expected(ending(killed.ended.returncode), ending(expected_end(killed.point))),
                resume,
                output,
                left,
            )
        )
    return table(
        (
            "kill point",
            "output path",
            "the process ended by",
            "`--resume`",
            "published output",
            "stray files",
        ),
        rows,
    )


def generate() -> str:
    """Run the harness in a temporary directory and render the table."""
    with tempfile.TemporaryDirectory(prefix="seamline-kill-") as name:
        return render(run_harness(Path(name)))


@dataclass(frozen=True)
class SecondRun:
    """A second ``seamline run`` on the destination a first, slowed one is writing to."""

    pipeline: Path
    first_pid: int
    first_running: bool
    """Whether the first run was still running when the second one ended."""
    second: Ran
    first: Ran
    expected: list[dict[str, Any]] | None
    """What an uninterrupted run publishes."""
    output: list[dict[str, Any]] | None
    files: list[str]
    expected_files: list[str]


def second_run(workdir: Path) -> SecondRun:
    """Start a run, then another on the same destination while the first holds it.

    The first run is held before its first write (``SEAMLINE_FAULT_HOLD``) until the second
    has ended, then released to finish: it holds the destination for as long as the second
    takes to start, however loaded the machine. (Slowing it by a sleep per batch instead
    left a race: on a machine loaded five times over, the second run started after the
    first had ended.)"""
    with in_process_cli() as cli:
        reference = run_in_process(cli, write_pipeline(workdir / "reference"))
    if reference.exit_code:
        raise RuntimeError(f"the uninterrupted run failed: {reference.stderr}")
    expected_records, expected_files = published(workdir / "reference")
    pipeline = write_pipeline(workdir / "shared")
    lock = pipeline.parent / "out" / ".emb.jsonl.lock"
    release = workdir / "release-the-first-run"
    seamline = [sys.executable, "-m", "seamline.adapters.cli.main", "run", str(pipeline)]
    env = fault_environment(SEAMLINE_CACHE_DIR=session_cache(workdir / "jax-cache"), COLUMNS="400")
    first = subprocess.Popen(
        [*seamline, "--log-level", "warning"],
        env={**env, "SEAMLINE_FAULT_HOLD": str(release)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not lock.exists():  # the first run holds the destination
            if first.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the first run never took the lock: {first.communicate()}")
            time.sleep(0.05)
        second = subprocess.run(seamline, env=env, capture_output=True, text=True, timeout=120)
        running = first.poll() is None
    finally:
        release.touch()
        stdout, stderr = first.communicate(timeout=120)
    output, files = published(pipeline.parent)
    return SecondRun(
        pipeline,
        first.pid,
        running,
        Ran(second.returncode, second.stdout, second.stderr),
        Ran(first.returncode, stdout, stderr),
        expected_records,
        output,
        files,
        expected_files,
    )
