"""The table of injected faults in docs/reliability.md: every scenario, as it was seen to end.

The scenarios are those of ``tests/faults/test_call_faults.py`` (a kernel failing
while it runs), ``tests/faults/test_component_faults.py`` (a loader or sink failing,
a changed input on resume, the machine failing around the run),
``tests/faults/test_kill_resume.py`` (a second run on one destination) and
``tests/core/test_monitor_hub.py`` (monitors that fail or hang). Those tests and the
table share one :class:`FaultOutcomes` per session (the ``fault_outcomes`` fixture),
so each scenario runs once: its outcome is asserted there and rendered here.
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np

from seamline.core.registry import Registry
from seamline.core.seams import failed_at
from tests.core import monitor_faults
from tests.faults import call_scenarios as calls
from tests.faults import component_scenarios as components
from tests.faults import kill_points
from tests.faults.fixture_plugin import fault_registry
from tests.outcome_tables import (
    Observations,
    check,
    expected,
    normalise,
    table,
    text_cell,
)

NAME = "faults"
Row = tuple[str, str, str, str]
"""How the run ended, what it did, the first line of its message, and its output."""


@dataclass(frozen=True)
class Scenario:
    """One injected fault: its label in the table, how to run it, how to render what it did."""

    label: str
    observe: Callable[[FaultOutcomes, Path], Any]
    cells: Callable[[FaultOutcomes, Any, Path], Row]
    machine_dependent: bool = False
    """Runs only on some machines (not as root, only with user namespaces)."""


class FaultOutcomes(Observations[Any]):
    """Each fault scenario run once, on first demand; the references they compare with, once."""

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(SCENARIOS)

    def observe(self, key: str, workdir: Path) -> Any:
        return SCENARIOS[key].observe(self, workdir)

    @cached_property
    def registry(self) -> Registry:
        return fault_registry()

    @cached_property
    def kernel_reference(self) -> calls.KernelRun:
        """The call-fault pipeline with ``native`` alone: what a demoted kernel's run must equal."""
        return calls.run_kernel(self.registry, calls.REFERENCE)

    @cached_property
    def cli_reference(self) -> tuple[components.Ran, list[Any] | None]:
        """An uninterrupted ``seamline run`` of the component-fault pipeline, and its output."""
        with components.in_process_cli() as cli:
            return components.reference(cli, self.base / "reference")

    def row(self, key: str) -> tuple[str, ...]:
        scenario = SCENARIOS[key]
        outcome = self[key]
        not_run = getattr(outcome, "not_run", None)
        if not_run is not None:
            return (scenario.label, f"(not run: {not_run})", "", "", "")
        return (scenario.label, *scenario.cells(self, outcome, self.workdir(key)))


def message(text: str, workdir: Path) -> str:
    """The first line of ``text`` as a cell: its folder as ``<tmp>``, pids as ``<pid>``,
    times of day as ``<time>``."""
    lines = [line for line in text.splitlines() if line.strip()]
    first = re.sub(r"\bpid \d+", "pid <pid>", lines[0]) if lines else ""
    first = re.sub(r"\b\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\b", "<time>", first)
    return text_cell(first, {str(workdir): "<tmp>"})


def documents(output: list[Any] | None, wanted: int) -> str:
    """How many documents a published output holds (one record each here), against ``wanted``."""
    records = output or []
    count = len({record["id"] for record in records})
    if len(records) != count:
        return f"**{len(records)} records for {count} documents (expected {wanted}, once each)**"
    return expected(count, wanted, f"{count} of {wanted} documents")


# --- a kernel failing while it runs ---------------------------------------------------------


def kernel(attention: str) -> Callable[[FaultOutcomes, Path], calls.KernelRun]:
    return lambda outcomes, _: calls.run_kernel(outcomes.registry, attention)


def demotions(run: calls.KernelRun | calls.StoppedRun) -> str:
    pairs = sorted({(f.failed, f.replacement) for f in run.fallbacks})
    return ", ".join(f"`{failed}` → `{replacement}`" for failed, replacement in pairs)


def same_as_reference(outcomes: FaultOutcomes, run: calls.KernelRun) -> bool:
    reference = outcomes.kernel_reference.vectors
    return run.vectors.keys() == reference.keys() and all(
        np.array_equal(run.vectors[doc_id], vector) for doc_id, vector in reference.items()
    )


def finished(run: calls.KernelRun) -> str:
    return "finished" if run.error is None else f"**raised `{type(run.error).__name__}`**"


def demoted(failed: str, replacement: str | None) -> Callable[..., Row]:
    """Cells of a run whose kernel ``failed`` must be demoted (for ``replacement``, if named)."""

    def cells(outcomes: FaultOutcomes, run: calls.KernelRun, workdir: Path) -> Row:
        pairs = {(f.failed, f.replacement) for f in run.fallbacks}
        ok = failed in {f for f, _ in pairs}
        ok = ok and (replacement is None or pairs == {(failed, replacement)})
        did = check(ok, f"demoted: {demotions(run)}", f"demoted: {demotions(run) or 'none'}")
        reason = next((f.reason for f in run.fallbacks if f.failed == failed), "")
        same = check(
            same_as_reference(outcomes, run) and run.records == calls.DOCUMENTS,
            f"equal to a `native` run's, {calls.DOCUMENTS} documents once each",
            f"{run.records} records, not equal to a `native` run's",
        )
        return finished(run), did, message(reason, workdir), same

    return cells


def refused_as_the_model(outcomes: FaultOutcomes, run: calls.KernelRun, workdir: Path) -> Row:
    """No kernel demoted (the reference gives NaN too), and the run stopped, blaming the model."""
    raised = type(run.error).__name__ if run.error is not None else "nothing"
    ended = expected(raised, "ContractViolation", f"raised `{raised}`")
    did = check(
        not run.fallbacks, "no fallback: the model is to blame", f"demoted {demotions(run)}"
    )
    where = failed_at(run.error) if run.error is not None else None
    said = f"{where}: {run.error}" if where is not None else str(run.error or "")
    kept = check(
        run.records == 0 and run.closed == (False,),
        "nothing written or published",
        f"{run.records} records written, closed {list(run.closed)}",
    )
    return ended, did, message(said, workdir), kept


def stopped(outcomes: FaultOutcomes, run: calls.StoppedRun, workdir: Path) -> Row:
    raised = type(run.error).__name__ if run.error is not None else "nothing"
    ended = expected(raised, "ShardFailed", f"raised `{raised}`")
    did = (
        check(run.error is not None, "stopped", "not stopped")
        + ", "
        + check(not run.fallbacks, "no fallback", f"demoted after all: {demotions(run)}")
    )
    kept = check(
        run.checkpoint_cursor == "7",
        "the commit after 8 documents kept",
        f"checkpoint cursor {run.checkpoint_cursor}",
    )
    output = check(not run.published, "nothing published", "published") + f"; {kept}"
    return ended, did, message(str(run.error or ""), workdir), output


# --- a component failing, a changed input, the machine around the run ---------------------


def cli(call: Callable[..., Any]) -> Callable[[FaultOutcomes, Path], Any]:
    """A scenario run by ``seamline run`` in this process."""

    def observe(outcomes: FaultOutcomes, workdir: Path) -> Any:
        with components.in_process_cli() as runner:
            return call(runner, workdir)

    return observe


def exit_code(ran: components.Ran, wanted: int) -> str:
    return expected(ran.exit_code, wanted, f"exit {ran.exit_code}")


def midway(fault: str) -> Callable[[FaultOutcomes, Path], components.Midway]:
    return cli(lambda runner, workdir: components.fail_midway(runner, workdir, fault))


def failed_midway(outcomes: FaultOutcomes, run: components.Midway, workdir: Path) -> Row:
    published = run.published or run.manifest
    did = (
        check(run.failed.exit_code != 0, "stopped", "not stopped")
        + "; "
        + check(not published, "nothing published", "published")
        + "; "
        + check(run.checkpoint and run.cursor is not None, "last commit kept", "no commit kept")
    )
    _, reference = outcomes.cli_reference
    same = run.resumed_output is not None and run.resumed_output == reference
    equal = check(same, "equal to an uninterrupted run's", "not equal to an uninterrupted run's")
    output = f"`--resume`: {exit_code(run.resumed, 0)}, {equal}"
    return exit_code(run.failed, 1), did, message(run.failed.said, workdir), output


def refused(restart: bool) -> Callable[..., Row]:
    def cells(outcomes: FaultOutcomes, run: components.Resumed, workdir: Path) -> Row:
        did = check(run.resumed.exit_code == 2, "refused", "not refused")
        did += "; " + check(run.checkpoint_untouched, "checkpoint untouched", "checkpoint changed")
        output = "—"
        if restart and run.restarted is not None:
            output = (
                f"`--resume --restart`: {exit_code(run.restarted, 0)}, "
                f"{documents(run.output, components.FILES)}"
            )
        return exit_code(run.resumed, 2), did, message(run.resumed.said, workdir), output

    return cells


def resumed(outcomes: FaultOutcomes, run: components.Resumed, workdir: Path) -> Row:
    line = next((line for line in run.resumed.lines if "resumed after cursor" in line), "")
    said = check(bool(line), "resumed after its commit", "not resumed")
    output = documents(run.output, components.FILES)
    return exit_code(run.resumed, 0), said, message(line, workdir), output


def created(outcomes: FaultOutcomes, run: components.Plain, workdir: Path) -> Row:
    made = check(run.out.parent.is_dir(), "the folder made", "no folder made")
    output = documents(run.output, components.DOCUMENTS)
    return exit_code(run.ran, 0), made, message("", workdir), output


def machine_failure(outcomes: FaultOutcomes, run: components.Plain, workdir: Path) -> Row:
    lines = run.ran.lines
    said = check(len(lines) == 1 and "Traceback" not in run.ran.said, "one line", "more")
    stopped = check(run.ran.exit_code != 0, "stopped", "not stopped")
    return exit_code(run.ran, 1), f"{stopped}; {said}", message(run.ran.said, workdir), "—"


def refused_before_work(outcomes: FaultOutcomes, run: components.Plain, workdir: Path) -> Row:
    """A destination no run could publish to, refused while the pipeline is validated."""
    lines = run.ran.lines
    said = check(len(lines) == 1 and "Traceback" not in run.ran.said, "one line", "more")
    made = check(not run.out.exists(), "nothing written", "written")
    return (
        exit_code(run.ran, 2),
        f"refused before any work; {said}",
        message(run.ran.said, workdir),
        made,
    )


def second_run(outcomes: FaultOutcomes, run: kill_points.SecondRun, workdir: Path) -> Row:
    did = check(run.first_running, "refused while the first ran", "the first had ended")
    same = run.output is not None and run.output == run.expected
    first = f"the first run: {exit_code(run.first, 0)}, " + check(
        same and run.files == run.expected_files, "undisturbed", "disturbed"
    )
    return exit_code(run.second, 2), did, message(run.second.stderr, workdir), first


# --- monitors --------------------------------------------------------------------------------


def monitor_failing(
    outcomes: FaultOutcomes, run: monitor_faults.FailingOutcome, workdir: Path
) -> Row:
    events = monitor_faults.FAILING_EVENTS
    said = [w["event"].split(";")[0] for w in run.warnings]
    count = run.warnings[-1].get("failures") if run.warnings else None
    once = said == ["monitor failed", "monitor failed repeatedly in this run"]
    did = check(
        once and count == events,
        f"logged at its first failure and, at the close, the count ({count})",
        f"logged {len(said)} times",
    )
    first = normalise(run.warnings[0]["event"]) if run.warnings else ""
    seen = expected(
        run.listener_saw, events, f"the other monitor saw {run.listener_saw} of {events}"
    )
    return "—", did, text_cell(first), seen


def monitor_hung(outcomes: FaultOutcomes, run: monitor_faults.HungOutcome, workdir: Path) -> Row:
    bound = monitor_faults.HUNG_BOUND_S
    events = monitor_faults.HUNG_EVENTS
    once = [entry["monitor"] for entry in run.reported] == ["stuck"]
    did = (
        check(
            run.seconds < bound and once,
            f"given up on after one {monitor_faults.HUNG_TIMEOUT_S:g} s wait, reported once",
            f"reported {len(run.reported)} times, {'under' if run.seconds < bound else 'over'} "
            f"{bound:g} s",
        )
        + "; "
        + check(run.stuck_saw == 2, "not called again", f"called {run.stuck_saw} times")
    )
    first = normalise(run.reported[0]["event"]) if run.reported else ""
    others = f"the others saw {run.before_saw} and {run.after_saw} of {events}"
    ok = run.before_saw == run.after_saw == run.after_saw_once_released == events
    return "—", did, text_cell(first), check(ok, others, others)


def monitor_flood(outcomes: FaultOutcomes, run: monitor_faults.FloodOutcome, workdir: Path) -> Row:
    cap = monitor_faults.PUBLISH_CAP
    published = len(monitor_faults.alerts(run.first_emit))
    did = expected(
        published, cap, f"cut off after {published} published events (for one event of the run)"
    )
    reached = check(
        all(run.finished_reached) and not run.failures,
        "the run's last event reached every monitor",
        "the run's last event was lost",
    )
    return "—", did, "—", reached


SCENARIOS: dict[str, Scenario] = {
    "kernel-raises": Scenario(
        "a kernel raising from its 3rd call on (`fault-raise`, `[fault-raise, native]`)",
        kernel("{use: [fault-raise, native], verify: false, with: {fault-raise: {at: 3}}}"),
        demoted("fault-raise", "native"),
    ),
    "kernel-nan": Scenario(
        "a kernel returning NaN from its 3rd call on (`fault-nan`)",
        kernel("{use: [fault-nan, native], verify: false, with: {fault-nan: {at: 3}}}"),
        demoted("fault-nan", "native"),
    ),
    "shape-list": Scenario(
        "a kernel returning the wrong shape (`fault-shape`, `[fault-shape, native]`)",
        kernel("{use: [fault-shape, native]}"),
        demoted("fault-shape", "native"),
    ),
    "shape-auto": Scenario(
        "the same under `auto` (it ranks itself first)",
        kernel("{use: auto}"),
        demoted("fault-shape", None),
    ),
    "non-finite-model": Scenario(
        "NaN from every kernel (the model's output is NaN)",
        lambda outcomes, _: calls.run_with_non_finite_model(outcomes.registry),
        refused_as_the_model,
    ),
    "on-failure-raise": Scenario(
        "a kernel raising at its 5th call, with `on_failure: raise`",
        lambda outcomes, workdir: calls.run_stopping(outcomes.registry, workdir),
        stopped,
    ),
    "read:17": Scenario(
        "the loader raising at document 17 (output path absolute)",
        midway("read:17"),
        failed_midway,
    ),
    "write:4": Scenario(
        "the sink raising at its 4th write (output path relative, `out/emb.jsonl`)",
        midway("write:4"),
        failed_midway,
    ),
    "commit:3": Scenario(
        "the sink raising at its 3rd commit (output path through a linked folder)",
        midway("commit:3"),
        failed_midway,
    ),
    "input-changed": Scenario(
        "an input file edited before `--resume`",
        cli(lambda runner, workdir: components.resume_after(runner, workdir, "input")),
        refused(restart=True),
    ),
    "pipeline-changed": Scenario(
        "the pipeline file's loader edited before `--resume`",
        cli(lambda runner, workdir: components.resume_after(runner, workdir, "pipeline")),
        refused(restart=False),
    ),
    "input-unchanged": Scenario(
        "nothing changed before `--resume`",
        cli(lambda runner, workdir: components.resume_after(runner, workdir, "none")),
        resumed,
    ),
    "input-stray-files": Scenario(
        "an editor's swap file and a log that `glob` does not match written under `root` "
        "before `--resume`",
        cli(lambda runner, workdir: components.resume_after(runner, workdir, "stray")),
        resumed,
    ),
    "missing-folder": Scenario(
        "an output folder that does not exist", cli(components.missing_folder), created
    ),
    "under-a-file": Scenario(
        "an output path under a file", cli(components.under_a_file), refused_before_work
    ),
    "read-only": Scenario(
        "an output folder that is read-only",
        cli(components.read_only),
        machine_failure,
        machine_dependent=True,
    ),
    "full-disk": Scenario(
        "a full disk (a 16 KiB tmpfs)",
        lambda outcomes, workdir: components.full_disk(workdir),
        machine_failure,
        machine_dependent=True,
    ),
    "second-run": Scenario(
        "a second run on a destination a first run is writing",
        lambda outcomes, workdir: kill_points.second_run(workdir),
        second_run,
    ),
    "monitor-raises": Scenario(
        "a monitor raising on every event (50)",
        lambda outcomes, _: monitor_faults.failing(),
        monitor_failing,
    ),
    "monitor-hangs": Scenario(
        "a monitor hanging on its 2nd event (of 5; 0.2 s timeout)",
        lambda outcomes, _: monitor_faults.hung(),
        monitor_hung,
    ),
    "monitor-floods": Scenario(
        "two monitors answering each other's events without end",
        lambda outcomes, _: monitor_faults.flood(),
        monitor_flood,
    ),
}

MACHINE_DEPENDENT = [s.label for s in SCENARIOS.values() if s.machine_dependent]
HEADER = ("injected fault", "ended", "what the run did", "message (first line)", "output")


def render(outcomes: FaultOutcomes) -> str:
    """One row per scenario, each run (if it was not yet) and rendered as it was seen to end."""
    return table(HEADER, [outcomes.row(key) for key in outcomes.keys])


def generate() -> str:
    """Run every scenario in a temporary directory and render the table."""
    with tempfile.TemporaryDirectory(prefix="seamline-faults-") as name:
        return render(FaultOutcomes(Path(name)))
