"""``seamline check KIND:NAME``: the conformance suite against an installed component."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import usage_error, user_errors
from seamline.adapters.cli.options import (
    CompileCache,
    FormatOption,
    compile_cache_on,
    named_path,
    output_format,
    whole_number,
)

Target = Annotated[
    str,
    typer.Argument(
        help="KIND:NAME, e.g. attention:blockwise.", metavar="KIND:NAME", show_default=False
    ),
]
With = Annotated[
    list[str] | None,
    typer.Option(
        "--with",
        "-w",
        help="A config field of the component: --with interpret=true (repeatable).",
        metavar="KEY=VALUE",
    ),
]
Record = Annotated[bool, typer.Option("--record", help="Write a conformance record of the result.")]
RecordDir = Annotated[
    Path | None,
    typer.Option(
        "--record-dir",
        help="Where --record writes records (default: $SEAMLINE_CONFORMANCE_DIR or the user "
        "data dir).",
        metavar="DIR",
        parser=named_path("name the directory for records (it is created when missing)"),
    ),
]
MaxExamples = Annotated[
    int | None,
    typer.Option(
        "--max-examples",
        help="Generated cases per property check (8).",
        metavar="N",
        parser=whole_number("--max-examples", "of 1 or more", least=1),
    ),
]
Select = Annotated[
    str | None,
    typer.Option(
        "--select",
        help="Only the checks matching this pytest -k expression: --select 'plain or config'.",
        metavar="EXPR",
    ),
]
Verbose = Annotated[bool, typer.Option("--verbose", "-v", help="Show pytest's output.")]


def check(
    target: Target,
    with_: With = None,
    record: Record = False,
    record_dir: RecordDir = None,
    max_examples: MaxExamples = None,
    select: Select = None,
    verbose: Verbose = False,
    compile_cache: CompileCache = True,
    format_: FormatOption = "text",
) -> None:
    """Run the conformance suite against an installed component and report what it found.

    The suite's compiled programs are kept in the compile cache, as a run's are: checking
    a component again compiles only the programs its change made new.
    """
    from seamline.adapters.logging_setup import configure_logging
    from seamline.contracts.workdir import working_folder

    as_json = output_format(format_) == "json"
    if as_json and verbose:
        usage_error(
            "--verbose with --format json: pytest's own output would go to stdout with the "
            "JSON document; drop one of them"
        )
    # hypothesis reads the working folder as it is imported: a traceback if it is gone
    user_errors(working_folder)
    configure_logging(level="warning")  # the cache's warnings on stderr, never in the report
    # A hit is the executable compiling would give (JAX keys an entry by the program, the
    # jax and jaxlib versions, the backend and its flags), so what is checked is the same.
    compile_cache_on(compile_cache)
    from seamline.adapters.cli.check import CheckOutcome
    from seamline.adapters.cli.check import check as run_suite
    from seamline.adapters.cli.render.check_progress import shown
    from seamline.adapters.cli.render.conformance import report, report_json

    def suite() -> CheckOutcome:
        # The bar is erased before anything else is said: an error, or the report.
        with shown(target, sys.stderr, verbose=verbose) as progress:
            return run_suite(
                loading.registry(),
                target,
                with_values=with_ or [],
                max_examples=max_examples,
                select=select,
                record=record,
                record_dir=record_dir,
                verbose=verbose,
                progress=progress,
            )

    outcome = user_errors(
        suite,
        kept_on_interrupt="the suite did not finish, so nothing is concluded and no record "
        "was written",
    )
    (report_json if as_json else report)(target, outcome, with_ or [])
    raise typer.Exit(0 if outcome.conforms else 1)
