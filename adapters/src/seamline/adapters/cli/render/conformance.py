"""``check``'s report: one row per check of the conformance suite, then the records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.markup import escape

from seamline.adapters.cli.render.console import consoles, table

if TYPE_CHECKING:
    from rich.console import Console

    from seamline.adapters.cli.check import CheckOutcome
    from seamline.contracts.conformance import ConformanceRecord

COLOURS = {"passed": "green", "failed": "red", "error": "red", "skipped": "yellow"}


def report(target: str, outcome: CheckOutcome) -> None:
    """The results, the records they make, and the verdict (or pytest's own output when the
    suite did not run at all)."""
    console = consoles.out
    suite = outcome.suite
    if not suite.results:
        console.print(suite.output, markup=False, highlight=False)
        console.print(
            f"[bold red]the suite did not run for {escape(target)}[/] "
            f"(pytest exit code {suite.exit_code})"
        )
        return
    shown = table(title=f"conformance of {target}", show_lines=False)
    shown.add_column("check", no_wrap=True)
    shown.add_column("result", no_wrap=True)
    shown.add_column("detail", overflow="fold")
    for result in suite.results:
        colour = COLOURS.get(result.outcome, "white")
        cell = f"[{colour}]{result.outcome}[/]"
        shown.add_row(escape(result.check), cell, escape(result.message))
    console.print(shown)
    for record in suite.records:
        _describe_record(console, record)
    for path in outcome.saved:
        console.print(f"record written: {path}")
    if suite.passed:
        console.print(f"[bold green]{target} conforms[/]")
    else:
        console.print(f"[bold red]{target} does not conform[/]")


def _describe_record(console: Console, record: ConformanceRecord) -> None:
    env = record.environment
    origin = (
        f"{record.distribution} {record.distribution_version}"
        if record.distribution
        else "not registered by an entry point"
    )
    console.print(
        f"{record.kind}:{record.name} ({origin}), contract {record.contract_version}; "
        f"jax {env.jax}, jaxlib {env.jaxlib}, {env.platform} ({env.device_kind}): "
        f"{record.summary()}",
        highlight=False,
    )
