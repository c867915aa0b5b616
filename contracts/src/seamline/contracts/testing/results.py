"""From pytest reports to conformance results and records (shared by the plugin and runner)."""

from __future__ import annotations

import json
from collections.abc import Iterable
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


@dataclass
class Collector:
    """A pytest plugin object: keeps one result per test, grouped by component tested."""

    results: dict[str, list[CheckResult]] = field(default_factory=dict)
    unattributed: list[CheckResult] = field(default_factory=list)
    deselected: int = 0
    """Conformance checks left out of the session (``-k``, ``-m``, ``seamline check
    --select``): the records of such a session prove only a part of the suite."""
    deselected_in: dict[str, int] = field(default_factory=dict)
    """The same, by the test class they belong to (``path::TestX``): one component's suite."""
    classes_of: dict[str, set[str]] = field(default_factory=dict)
    """The test classes each identity's results came from."""
    _seen: dict[str, CheckResult] = field(default_factory=dict)

    def pytest_deselected(self, items: Iterable[pytest.Item]) -> None:
        for item in items:
            if _is_conformance_check(item):
                self.deselected += 1
                suite = _suite_of(item.nodeid)
                self.deselected_in[suite] = self.deselected_in.get(suite, 0) + 1

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        outcome, message = _outcome(report)
        if outcome is None:
            return
        check = _check_name(report.nodeid)
        previous = self._seen.get(report.nodeid)
        if previous is not None and previous.outcome != "passed":
            return  # a failed setup or call stays failed whatever teardown says
        result = CheckResult(check=check, outcome=outcome, message=message)
        identity = dict(report.user_properties).get(IDENTITY_PROPERTY)
        target = (
            self.results.setdefault(identity, [])
            if isinstance(identity, str)
            else self.unattributed
        )
        if isinstance(identity, str):
            self.classes_of.setdefault(identity, set()).add(_suite_of(report.nodeid))
        if previous is not None:
            target[:] = [r for r in target if r is not previous]
        target.append(result)
        self._seen[report.nodeid] = result

    def records(self, environment: Environment | None = None) -> list[ConformanceRecord]:
        env = environment if environment is not None else current_environment()
        return [build_record(identity, results, env) for identity, results in self.results.items()]

    def records_to_keep(self) -> list[ConformanceRecord]:
        """The records to write: when checks of a component's suite were deselected, its
        record carries an ``error`` result saying so, which fails it. A record of the checks
        someone chose (one that cannot fail) made a component that fails the suite trusted
        under ``require_conformance``. Only its own suite's count: ``-k TestLoader`` ran the
        loader's whole suite, yet failed (and overwrote) the loader's passing record for
        the attention checks it left out."""
        identities = list(self.results)
        kept = []
        for identity, record in zip(identities, self.records(), strict=True):
            left_out = sum(self.deselected_in.get(c, 0) for c in self.classes_of.get(identity, ()))
            if left_out:
                partial = PARTIAL_SUITE.model_copy(update={"message": _partial(left_out)})
                record = record.model_copy(update={"results": (*record.results, partial)})
            kept.append(record)
        return kept

    def all_results(self) -> list[CheckResult]:
        return [r for results in self.results.values() for r in results] + self.unattributed


PARTIAL_SUITE = CheckResult(check="whole_suite", outcome="error")
"""The result a record of a session that left checks out carries (its message says how many)."""


def _partial(deselected: int) -> str:
    return (
        f"{deselected} conformance check{'s were' if deselected != 1 else ' was'} deselected "
        "(pytest -k or -m, or seamline check --select): a record proves conformance only when "
        "the whole suite ran; run it without a selection to record"
    )


def _suite_of(nodeid: str) -> str:
    """``path::TestX::test_feature[case]`` -> ``path::TestX``: the component suite's class."""
    return nodeid.split("[", 1)[0].rsplit("::", 1)[0]


def _is_conformance_check(item: pytest.Item) -> bool:
    cls = getattr(item, "cls", None)
    return isinstance(cls, type) and issubclass(cls, ComponentContract)


def _check_name(nodeid: str) -> str:
    """``path::TestX::test_feature_case[causal]`` -> ``feature_case[causal]``."""
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
