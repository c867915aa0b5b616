"""``check``'s report: one row per check of the conformance suite, then the records."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from seamline.adapters.cli.render.console import consoles, line, text, title
from seamline.adapters.cli.render.fit import Column, fitted

if TYPE_CHECKING:
    from rich.console import Console

    from seamline.adapters.cli.check import CheckOutcome
    from seamline.contracts.conformance import CheckResult, ConformanceRecord

CHECK_COLUMNS = (Column("check"), Column("result"), Column("detail", whole=False))
"""A check's name and result kept whole, its detail folded; stacked where that does not
fit (:mod:`.fit`)."""

COLOURS = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}


def report(target: str, outcome: CheckOutcome) -> None:
    """The results, the records they make, and the verdict (or pytest's own output when the
    suite did not run at all)."""
    console = consoles.out
    suite = outcome.suite
    if not suite.results:
        console.print(suite.output, markup=False, highlight=False)
        line(
            (f"the suite did not run for {target}", "bold red"),
            f" (pytest exit code {suite.exit_code})",
            console=console,
        )
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
    if suite.passed and outcome.select:
        line((selection_passed(suite.results), "bold green"), console=console)
    elif suite.passed and outcome.cannot_earn_trust:
        line(
            (f"{target} conforms, but its record cannot earn trust", "bold yellow"),
            console=console,
        )
    elif suite.passed:
        line((f"{target} conforms", "bold green"), console=console)
    else:
        line((f"{target} does not conform", "bold red"), console=console)


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
