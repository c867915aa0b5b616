"""Which files the docs tests collect: exactly the pages named, not their namesakes.

Sybil matches a pattern with ``Path.match``, from the right, so ``README.md`` would also
collect every README.md below the checkout: benchmarks/README.md, whose blocks are
usage synopses and benchmarks of minutes that rewrite tracked results and goldens, and
the example packages' READMEs, whose first command installs a plugin into ``.venv``.
Those pages are read by people running those commands on purpose; ``pytest PAGE`` on
one of them must not run them as tests.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from sybil import Sybil


def is_page(relative: PurePosixPath, patterns: Sequence[str]) -> bool:
    """``relative`` matches one of ``patterns`` whole, part for part (``*`` stays within a
    folder, as in a shell): ``docs/*.md`` is docs/cli.md, and ``README.md`` only the
    top-level one."""
    return any(
        len(relative.parts) == len(PurePosixPath(pattern).parts) and relative.match(pattern)
        for pattern in patterns
    )


class ThesePages(Sybil):
    """A Sybil of exactly the pages its patterns name, relative to its path."""

    def should_parse(self, path: Path) -> bool:
        try:
            relative = path.relative_to(self.path)
        except ValueError:
            return False
        return is_page(PurePosixPath(relative.as_posix()), self.patterns)
