"""Where a problem is, as text for a message and as parts for a program.

A ``ConfigError``'s place is text (``p.yaml:3:5``, ``--set run.batch_size=x``), and
``validate --format json`` split it back into file, line, column and override with a
pattern. Text cannot be split back reliably: a file named ``emp:2:3`` (empty) was
reported at line 2, column 3 of ``emp``; a file name with a newline never matched, and
became the whole place; an error inside a ``--set`` value (``--set 'run={a: 1, a: 2}'``)
was placed in a "file" named by the override. A :class:`Place` is that same text, so
every message and comparison is unchanged, carrying the parts it was made from.
"""

from __future__ import annotations

from collections.abc import Sequence


class Place(str):
    """A place in a pipeline document: the text a message shows, and its parts."""

    file: str | None
    """The file (or other document) named, None for a ``--set`` override alone."""
    line: int | None
    """1-based, None when the place is the whole file."""
    column: int | None
    """1-based, counted in characters, None when the place is the whole file."""
    override: str | None
    """The ``--set`` override(s) that gave the value, as the message shows them."""

    def __new__(
        cls,
        text: str,
        *,
        file: str | None = None,
        line: int | None = None,
        column: int | None = None,
        override: str | None = None,
    ) -> Place:
        place = super().__new__(cls, text)
        place.file, place.line, place.column, place.override = file, line, column, override
        return place

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled with its parts (a pipeline's places travel to worker processes)."""
        return (_rebuilt, (str(self), self.file, self.line, self.column, self.override))

    @classmethod
    def in_file(cls, file: str, line: int | None = None, column: int | None = None) -> Place:
        """``file:line:column`` (1-based), or ``file`` alone when there is no line."""
        if line is None or column is None:
            return cls(file, file=file)
        return cls(f"{file}:{line}:{column}", file=file, line=line, column=column)

    @classmethod
    def given(cls, override: str) -> Place:
        """A ``--set`` override, as typed (``--set run.batch_size=x``): it has no file."""
        return cls(override, override=override)

    def with_overrides(self, overrides: Sequence[str]) -> Place:
        """This place in the file, naming the ``overrides`` that changed a value inside it:
        ``p.yaml:3:34 (with --set model.with.max_length=16)``."""
        if not overrides:
            return self
        named = ", ".join(overrides)
        return Place(
            f"{self} (with {named})",
            file=self.file,
            line=self.line,
            column=self.column,
            override=named,
        )


def _rebuilt(
    text: str, file: str | None, line: int | None, column: int | None, override: str | None
) -> Place:
    return Place(text, file=file, line=line, column=column, override=override)
