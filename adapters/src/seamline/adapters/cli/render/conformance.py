"""``check``'s report: one row per check of the conformance suite, then the records."""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamline.adapters.cli.render.console import consoles, line, table, text, title

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
        line(
            (f"the suite did not run for {target}", "bold red"),
            f" (pytest exit code {suite.exit_code})",
            console=console,
        )
        return
    shown = table(title=title(f"conformance of {target}"), show_lines=False)
    shown.add_column("check", no_wrap=True)
    shown.add_column("result", no_wrap=True)
    shown.add_column("detail", overflow="fold")
    for result in suite.results:
        colour = COLOURS.get(result.outcome, "white")
        shown.add_row(text(result.check), text((result.outcome, colour)), text(result.message))
    console.print(shown)
    for record in suite.records:
        _describe_record(console, record)
    for path in outcome.saved:
        line(f"record written: {path}", console=console)
    if suite.passed:
        line((f"{target} conforms", "bold green"), console=console)
    else:
        line((f"{target} does not conform", "bold red"), console=console)


def _describe_record(console: Console, record: ConformanceRecord) -> None:
    env = record.environment
    origin = (
        f"{record.distribution} {record.distribution_version}"
        if record.distribution
        else "not registered by an entry point"
    )
    line(
        f"{record.kind}:{record.name} ({origin}), contract {record.contract_version}; "
        f"jax {env.jax}, jaxlib {env.jaxlib}, {env.platform} ({env.device_kind}): "
        f"{record.summary()}",
        console=console,
    )
