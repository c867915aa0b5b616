"""``csv``: one document per row of a CSV file, an example of a third-party seamline loader.

It depends on ``seamline-contracts`` alone. The stable order is the file's row
order; the cursor is the 1-based row number (the header is not a row); shards are
assigned round-robin by row position with ``Shard.owns``. A row with no id, or too
short to reach the text column, becomes a ``DocumentError``, so one bad row is
reported and set aside; a missing file, a header without the configured columns or
a file that is not UTF-8 is the user's mistake and raises a ``UserError``.
"""

from __future__ import annotations

import csv
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

from pydantic import Field, field_validator

from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    Loaded,
    Loader,
    Shard,
    UserError,
)

__all__ = ["CsvLoader", "CsvLoaderConfig"]


class CsvLoaderConfig(ComponentConfig):
    """The ``with:`` block of the ``csv`` loader (``extra="forbid"`` comes from ComponentConfig)."""

    path: Path = Field(description="The CSV file to read (UTF-8, with a header row).")
    id_column: str = Field(default="id", description="Column holding each document's id.")
    text_column: str = Field(default="text", description="Column holding each document's text.")
    delimiter: str = Field(default=",", description="The one-character field separator.")

    @field_validator("delimiter")
    @classmethod
    def _one_character(cls, value: str) -> str:
        if len(value) != 1:
            raise ValueError(f"delimiter must be exactly one character, not {value!r}")
        return value


class CsvLoader(Loader[CsvLoaderConfig]):
    """Yields each data row of a CSV file as one document."""

    name: ClassVar[str] = "csv"
    contract_version: ClassVar[str] = "1.0"
    Config = CsvLoaderConfig

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        config = self.config
        skip_through = _row_after(after)
        if not config.path.is_file():
            raise UserError(
                f"csv loader: {str(config.path)!r} is not a file (looked in "
                f"{config.path.absolute()}); set 'path' in the loader's 'with:' block"
            )
        # utf-8-sig: Excel's "CSV UTF-8" begins with a byte-order mark, which would
        # otherwise become part of the first column's name.
        with config.path.open(encoding="utf-8-sig", newline="") as handle:
            rows = csv.DictReader(handle, delimiter=config.delimiter)
            try:
                self._check_header(rows.fieldnames)
                first_row: dict[str, int] = {}  # id -> the row it first appears in
                for row_number, row in enumerate(rows, start=1):
                    first = first_row.setdefault(row.get(config.id_column) or "", row_number)
                    if row_number <= skip_through or not shard.owns(row_number - 1):
                        continue
                    item = self._document(row_number, row, first)
                    yield Loaded(cursor=str(row_number), item=item)
            except UnicodeDecodeError as err:
                raise UserError(f"csv loader: {str(config.path)!r} is not UTF-8 ({err})") from None
            except csv.Error as err:  # a field over csv.field_size_limit(), a NUL byte...
                line = rows.line_num + 1  # where the record being read begins
                raise UserError(
                    f"csv loader: {str(config.path)!r}, the record from line {line}: {err}; "
                    "the file cannot be read as CSV from there (a field over the limit is "
                    "one document too long for this loader: use the jsonl or parquet loader)"
                ) from None

    def _check_header(self, header: Sequence[str] | None) -> None:
        """An empty file has no rows; a header without the configured columns is a user error."""
        if header is None:
            return
        for option in ("id_column", "text_column"):
            column = getattr(self.config, option)
            if column not in header:
                raise UserError(
                    f"csv loader: {str(self.config.path)!r} has no column {column!r} "
                    f"(its columns: {', '.join(map(repr, header))}); set {option}"
                )

    def _document(
        self, row_number: int, row: dict[str, str | None], first: int
    ) -> Document | DocumentError:
        """The row as a document, or the record of why it is not one. ``first``: the row
        its id first appears in (every row of the file is seen, whatever the shard or
        the cursor, so a repeat is the same row's error in every run)."""
        where = {"path": str(self.config.path.absolute()), "row": row_number}
        doc_id = row.get(self.config.id_column)
        text = row.get(self.config.text_column)
        if not doc_id:
            doc_id = f"{self.config.path.name}:{row_number}"
            return DocumentError(doc_id, f"row {row_number}: no value in the id column", where)
        if first != row_number:
            reason = f"row {row_number}: id {doc_id!r} repeats row {first}'s; ids must be unique"
            return DocumentError(f"{self.config.path.name}:{row_number}", reason, where)
        if text is None:
            reason = f"row {row_number}: no {self.config.text_column!r} column (the row is short)"
            return DocumentError(doc_id, reason, where)
        # Not "path": `seamline search` reads a record's metadata["path"] as the file whose
        # characters the record's span indexes, which is true of a text file, not of a row.
        return Document(doc_id, text, {"row": row_number})


def _row_after(after: str | None) -> int:
    """The row number to resume after (0: from the start)."""
    if after is None:
        return 0
    if not after.isdigit():
        raise UserError(f"csv loader cannot resume after {after!r}: its cursors are row numbers")
    return int(after)
