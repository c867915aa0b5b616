"""Where a benchmark's progress goes: stderr, so that stdout holds only the report."""

from __future__ import annotations

import sys
from collections.abc import Callable

Say = Callable[[str], None]
"""How a benchmark says one line of progress (``print`` to stderr, a rich console, a list)."""


def say_to_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)
