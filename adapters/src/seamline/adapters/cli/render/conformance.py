"""``check``'s report: one row per check of the conformance suite, then the records (or,
with ``--format json``, one document holding them)."""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from seamline.adapters.cli.render.console import consoles, json_line, line, text, title
from seamline.adapters.cli.render.fit import Column, fitted
from seamline.contracts.json_safe import json_safe

if TYPE_CHECKING:
    from rich.console import Console

    from seamline.adapters.cli.check import CheckOutcome
    from seamline.contracts.conformance import CheckResult, ConformanceRecord

CHECK_COLUMNS = (Column("check"), Column("result"), Column("detail", whole=False))
"""A check's name and result kept whole, its detail folded; stacked where that does not
fit (:mod:`.fit`)."""

COLOURS = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}
CHECK_SCHEMA = "seamline.check/1"


def report(target: str, outcome: CheckOutcome, with_values: Sequence[str] = ()) -> None:
    """The results, the records they make, and the verdict (or pytest's own output when the
    suite did not run at all)."""
    console = consoles.out
    suite = outcome.suite
    if not suite.results:
        console.print(suite.output, markup=False, highlight=False)
        line(verdict(target, outcome), f" (pytest exit code {suite.exit_code})", console=console)
        return
    rows = [
        [
            text(result.check),
            text((result.outcome, COLOURS.get(result.outcome, "white"))),
            text(result.message),
        ]
        for result in suite.results
    ]
    shown = fitted(console, CHECK_COLUMNS, rows, title=title(f"conformance of {target}"))
    console.print(shown)
    several = len({(r.kind, r.name) for r in suite.records}) < len(suite.records)
    for record in suite.records:
        _describe_record(console, record, name_config=several)
    for path in outcome.saved:
        line(f"record written: {path}", console=console)
    for why in outcome.cannot_earn_trust:
        line((why, "yellow"), console=console)
    line(verdict(target, outcome), console=console)
    rerun = rerun_failed(target, suite.results, with_values)
    if rerun is not None:
        line(f"to run the failed checks alone: {rerun}", console=console)


RERUN_AT_MOST = 10
"""Failed checks a rerun line names; more, and the whole suite is what to run again."""
SELECTABLE = re.compile(r"[\w\-.\[\]:+/\\]+")
"""A name pytest's ``-k`` reads as one identifier (its expression grammar's characters)."""


def rerun_failed(
    target: str, results: Sequence[CheckResult], with_values: Sequence[str] = ()
) -> str | None:
    """The command that runs again only the checks that failed, as the user gave the rest
    (``--with``): to iterate on a fix with the compile cache warm, then run the whole suite.
    None when none failed, more than :data:`RERUN_AT_MOST` did, or a name ``-k`` cannot
    select alone."""
    failed = [r.check for r in results if r.outcome in ("failed", "error")]
    if not failed or len(failed) > RERUN_AT_MOST:
        return None
    if not all(SELECTABLE.fullmatch(name) for name in failed):
        return None
    given = [arg for value in with_values for arg in ("--with", value)]
    command = ["seamline", "check", target, *given, "--select", " or ".join(failed)]
    return shlex.join(command)


def verdict(target: str, outcome: CheckOutcome) -> tuple[str, str]:
    """The report's last line, and its style: what the run concludes."""
    suite = outcome.suite
    if not suite.results:
        return f"the suite did not run for {target}", "bold red"
    if suite.passed and outcome.select:
        return selection_passed(suite.results), "bold green"
    if suite.passed and outcome.cannot_earn_trust:
        return f"{target} conforms, but its record cannot earn trust", "bold yellow"
    if suite.passed:
        return f"{target} conforms", "bold green"
    return f"{target} does not conform", "bold red"


def report_json(target: str, outcome: CheckOutcome, with_values: Sequence[str] = ()) -> None:
    """The report as one JSON document on stdout, schema ``seamline.check/1``: for a
    component's CI, which reads each check's outcome rather than a table's rows."""
    suite = outcome.suite
    selected = outcome.select is not None
    json_line(
        json_safe(
            {
                "schema": CHECK_SCHEMA,
                "target": target,
                "passed": outcome.conforms,
                "conforms": None if selected else outcome.conforms,
                "verdict": verdict(target, outcome)[0],
                "select": outcome.select,
                "checks": [
                    {"check": r.check, "outcome": r.outcome, "message": r.message}
                    for r in suite.results
                ],
                "records": [record.model_dump(mode="json") for record in suite.records],
                "written": [str(path) for path in outcome.saved],
                "cannot_earn_trust": list(outcome.cannot_earn_trust),
                "rerun": rerun_failed(target, suite.results, with_values),
                "pytest_exit_code": suite.exit_code,
                "pytest_output": None if suite.results else suite.output,
            }
        )
    )


def selection_passed(results: Sequence[CheckResult]) -> str:
    """The verdict of a ``--select`` whose checks passed: how many, and that it concludes
    nothing ("attention:x conforms" after 1 of 33 checks read as a verdict on the suite)."""
    passed = sum(result.outcome == "passed" for result in results)
    skipped = len(results) - passed
    also = f" ({skipped} skipped)" if skipped else ""
    checks = "check" if passed == 1 else "checks"
    return (
        f"{passed} selected {checks} passed{also}; a selection says nothing of conformance "
        "(run without --select)"
    )


def _describe_record(console: Console, record: ConformanceRecord, *, name_config: bool) -> None:
    """One line per record; ``name_config`` where the suite checked the component in
    several configurations, so that their lines can be told apart."""
    env = record.environment
    origin = (
        f"{record.distribution} {record.distribution_version}"
        if record.distribution
        else "not registered by an entry point"
    )
    line(
        f"{record.kind}:{record.name}{_settings(record.config) if name_config else ''} "
        f"({origin}), "
        f"contract {record.contract_version}; "
        f"jax {env.jax}, jaxlib {env.jaxlib}, {env.platform} ({env.device_kind}): "
        f"{record.summary()}",
        console=console,
    )


def _settings(config: dict[str, Any] | None) -> str:
    """`` with isa=avx2, threads=0``: which configuration a record is for, so that the
    lines of a suite run over several configurations can be told apart."""
    if config is None:  # built per test over several configurations
        return ""
    if not config:
        return " with its defaults"
    shown = (f"{key}={_value(value)}" for key, value in sorted(config.items()))
    return " with " + ", ".join(shown)


def _value(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)
