"""From pytest reports to conformance results and records (shared by the plugin and runner)."""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from seamline.contracts.conformance import (
    CheckResult,
    ConformanceRecord,
    Environment,
    current_environment,
    now_text,
)
from seamline.contracts.testing._common import IDENTITY_PROPERTY, ComponentContract


@dataclass(eq=False)
class Collector:
    """A pytest plugin object: keeps one result per test, grouped by component tested.

    Compared and hashed by identity (``eq=False``), as pytest needs of a plugin object:
    before pytest 9.1 it keeps the plugins it has read in a set, and a dataclass's own
    ``__eq__`` made the collector unhashable (``seamline check`` ended "unhashable type:
    'Collector'" on pytest 8.0 to 9.0, which the suites support).

    It also counts each contract class's checks as pytest collects them, before any
    selection, so that a record can say whether the whole suite ran. Selection happens in
    many places that report nothing (a node id on the command line never collects the rest;
    under pytest-xdist the workers collect and deselect): counting what was left out
    cannot see them, counting what ran against what exists can.
    """

    results: dict[str, list[CheckResult]] = field(default_factory=dict)
    unattributed: list[CheckResult] = field(default_factory=list)
    classes_of: dict[str, set[str]] = field(default_factory=dict)
    """The test classes each identity's results came from (``path::TestX``: one suite)."""
    suite_sizes: dict[str, int] = field(default_factory=dict)
    """How many checks each contract class has, as collected before any selection."""
    ran_in: dict[str, set[str]] = field(default_factory=dict)
    """The checks of each contract class that reported a result (node ids)."""
    _seen: dict[str, CheckResult] = field(default_factory=dict)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(
        self, collector: pytest.Collector
    ) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
        """Count a contract class's checks, and stamp the count on each of them: their
        reports carry it to whichever process writes the record (xdist's controller
        collects nothing itself)."""
        report = yield
        if report.passed and _is_contract_class(collector):
            checks = [node for node in report.result if isinstance(node, pytest.Item)]
            size = len({check.nodeid for check in checks})
            self.suite_sizes[collector.nodeid] = size
            for check in checks:
                check.user_properties.append((SUITE_SIZE_PROPERTY, size))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome, message = _outcome(report)
        if outcome is None:
            return
        suite = _suite_of(report.nodeid)
        properties = dict(report.user_properties)
        size = properties.get(SUITE_SIZE_PROPERTY)
        if isinstance(size, int):
            self.suite_sizes.setdefault(suite, size)
        self.ran_in.setdefault(suite, set()).add(report.nodeid)
        check = check_name(report.nodeid)
        previous = self._seen.get(report.nodeid)
        if previous is not None and previous.outcome != "passed":
            return  # a failed setup or call stays failed whatever teardown says
        result = CheckResult(check=check, outcome=outcome, message=message)
        identity = properties.get(IDENTITY_PROPERTY)
        target = (
            self.results.setdefault(identity, [])
            if isinstance(identity, str)
            else self.unattributed
        )
        if isinstance(identity, str):
            self.classes_of.setdefault(identity, set()).add(suite)
        if previous is not None:
            target[:] = [r for r in target if r is not previous]
        target.append(result)
        self._seen[report.nodeid] = result

    def records(self, environment: Environment | None = None) -> list[ConformanceRecord]:
        env = environment if environment is not None else current_environment()
        return [build_record(identity, results, env) for identity, results in self.results.items()]

    def records_of_whole_suites(self) -> tuple[list[ConformanceRecord], list[LeftOut]]:
        """The records whose contract classes ran whole, and the components left out.

        ``pytest --seamline-record`` writes the first and no record of the second: one
        check chosen by its node id wrote a FAILING record over the component's passing
        one, demoting it under ``require_conformance`` (anyone keeping the option in
        ``addopts`` lost their record debugging one test). Only its own suite counts:
        ``-k TestLoader`` runs the loader's whole suite, and its record is written."""
        kept: list[ConformanceRecord] = []
        left_out: list[LeftOut] = []
        for record, problem in self._judged():
            if problem is None:
                kept.append(record)
            else:
                left_out.append(LeftOut(record.kind, record.name, problem))
        return kept, left_out

    def records_to_keep(self) -> list[ConformanceRecord]:
        """Every record, one whose suite did not run whole carrying an ``error`` result
        saying so (which fails it): what ``seamline check`` shows in its table. A record of
        the checks someone chose (one that cannot fail) made a component that fails the
        suite trusted under ``require_conformance``."""
        kept = []
        for record, problem in self._judged():
            if problem is not None:
                partial = PARTIAL_SUITE.model_copy(update={"message": problem})
                record = record.model_copy(update={"results": (*record.results, partial)})
            kept.append(record)
        return kept

    def _judged(self) -> Iterator[tuple[ConformanceRecord, str | None]]:
        """Each component's record, and why its suite did not run whole (None if it did)."""
        for identity, record in zip(list(self.results), self.records(), strict=True):
            yield record, self.incomplete(self.classes_of.get(identity, set()))

    def incomplete(self, suites: Iterable[str]) -> str | None:
        """Why these contract classes' checks did not all run, in words; or None."""
        suites = sorted(suites)
        uncounted = [suite for suite in suites if suite not in self.suite_sizes]
        if uncounted:
            return (
                f"seamline's pytest plugin did not count the checks of {', '.join(uncounted)} "
                "where they were collected, so whether the whole suite ran is unknown: run "
                "the suite in one process (without pytest-xdist's -n) to record"
            )
        total = sum(self.suite_sizes[suite] for suite in suites)
        ran = sum(min(len(self.ran_in.get(s, ())), self.suite_sizes[s]) for s in suites)
        return _partial(ran, total) if ran < total else None

    def all_results(self) -> list[CheckResult]:
        return [r for results in self.results.values() for r in results] + self.unattributed


SUITE_SIZE_PROPERTY = "seamline_suite_checks"
"""The user property (on each conformance check's report) of how many checks its class has."""

PARTIAL_SUITE = CheckResult(check="whole_suite", outcome="error")
"""The result a record of a session that left checks out carries (its message says how many)."""


@dataclass(frozen=True)
class LeftOut:
    """A component whose contract class's checks did not all run, and why: no record of it."""

    kind: str
    name: str
    why: str


def _partial(ran: int, total: int) -> str:
    return (
        f"{ran} of {total} checks ran; a record proves conformance only when the whole suite "
        "ran (this was a selection: a node id, pytest -k or -m, --lf): run the whole suite "
        "to record"
    )


def _suite_of(nodeid: str) -> str:
    """``path::TestX::test_feature[case]`` -> ``path::TestX``: the component suite's class."""
    return nodeid.split("[", 1)[0].rsplit("::", 1)[0]


def _is_contract_class(collector: pytest.Collector) -> bool:
    cls = getattr(collector, "obj", None) if isinstance(collector, pytest.Class) else None
    return isinstance(cls, type) and issubclass(cls, ComponentContract)


def check_name(nodeid: str) -> str:
    """``path::TestX::test_feature_case[causal]`` -> ``feature_case[causal]``: a check's name
    in a record, the report's rows and ``seamline check``'s progress bar."""
    name = nodeid.rsplit("::", 1)[-1]
    return name.removeprefix("test_")


def _outcome(report: pytest.TestReport) -> tuple[Any, str]:
    if report.when == "call":
        if report.passed:
            return "passed", ""
        if report.skipped:
            return "skipped", _skip_reason(report)
        return "failed", _failure_message(report)
    if report.failed:  # setup or teardown broke
        return "error", _failure_message(report)
    if report.when == "setup" and report.skipped:
        return "skipped", _skip_reason(report)
    return None, ""


def _skip_reason(report: pytest.TestReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _failure_message(report: pytest.TestReport) -> str:
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(crash.message) if crash is not None else str(report.longrepr)
    # An assertion message comes first, pytest's own explanation after it; hypothesis's
    # notes follow the falsifying example (which lines only failing cases ran: 23 lines of
    # JAX's internal paths in `seamline check`'s table, and how to reproduce it).
    first = text.split("\nassert ", 1)[0]
    for note in HYPOTHESIS_NOTES:
        first = first.split(note, 1)[0]
    return first.removeprefix("AssertionError: ").removeprefix("Failed: ").strip()


HYPOTHESIS_NOTES = ("\nExplanation:\n", "\nYou can reproduce this example", "\nHighest target")
"""Where the notes hypothesis adds to a failure begin: what a check's message leaves out."""


def build_record(
    identity: str, results: Iterable[CheckResult], environment: Environment
) -> ConformanceRecord:
    """The record of one component's results, not yet attributed to a distribution.

    Which distribution registers the component is the host's knowledge (its
    registry): ``seamline.core.trust.records.attribute`` fills it in before saving.
    """
    about = json.loads(identity)
    return ConformanceRecord(
        kind=about["kind"],
        name=about["name"],
        component_class=about["class"],
        distribution=None,
        distribution_version=None,
        contract_version=about["contract_version"],
        config=about["config"],
        environment=environment,
        created=now_text(),
        results=tuple(results),
    )
