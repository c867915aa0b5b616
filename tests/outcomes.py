"""Regenerate the tables of docs/reliability.md: what was tried, and what the code did.

Each table is made by running its scenarios, as its tests do, and rendering what
was observed (:mod:`tests.outcome_tables`); the tests check that the page holds
exactly that. All five take about six minutes on two cores (the faults 40 s, the
kill points a minute, the path spellings four, most of it starting Ray actors)::

    flock /tmp/seamline-cpu.lock .venv/bin/python -m tests.outcomes --write
    flock /tmp/seamline-cpu.lock .venv/bin/python -m tests.outcomes --write --only faults

Without ``--write`` the tables are printed, not written.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from typing import TYPE_CHECKING

import structlog

from tests.outcome_tables import PAGE, replace_block

if TYPE_CHECKING:
    from collections.abc import Callable

TABLES: dict[str, str] = {
    "hostile-documents": "tests.hostile.outcomes",
    "hostile-pipelines": "tests.core.hostile_pipelines",
    "tampered-inputs": "tests.tampered_inputs",
    "faults": "tests.faults.outcomes",
    "kill-points": "tests.faults.kill_points",
    "path-spellings": "tests.scaling.path_spellings",
}
"""Each table's name on the page, and the module whose ``generate()`` renders it."""


def generator(name: str) -> Callable[[], str]:
    """The table's ``generate``, imported only when that table is asked for."""
    module = importlib.import_module(TABLES[name])
    assert name == module.NAME, (module.__name__, module.NAME)
    generate: Callable[[], str] = module.generate
    return generate


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"rewrite the tables in {PAGE}")
    parser.add_argument(
        "--only",
        action="append",
        choices=list(TABLES),
        metavar="NAME",
        help=f"this table only (repeatable): {', '.join(TABLES)}",
    )
    args = parser.parse_args(argv)
    level = structlog.make_filtering_bound_logger(logging.WARNING)  # not a line per commit
    structlog.configure(wrapper_class=level)
    for name in args.only or list(TABLES):
        table = generator(name)()
        if args.write:  # read the page again for each: a table takes a while to make
            page = PAGE.read_text(encoding="utf-8")
            PAGE.write_text(replace_block(page, name, table), encoding="utf-8")
            print(f"wrote the table '{name}' into {PAGE}")
        else:
            print(f"{name}:\n{table}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
