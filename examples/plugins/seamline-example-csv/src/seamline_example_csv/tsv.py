"""``tsv``: one line per output record, tab-separated, an example of a third-party sink.

It depends on ``seamline-contracts`` alone: the sink kit's template owns the lock, the
checkpoint (so ``--resume`` continues exactly once), the errors file, publication and
staged parts. This module says only how a record is written (``write_rows``) and how
the file is read back (``TsvReader``, which ``seamline search`` finds through the
sink). A line is ``id, window, start, end, text`` and the vector's values; a tab, line
break or backslash in an id or a text is written as ``\\t``, ``\\n``, ``\\r`` or
``\\\\``, so that every record is one line, and a text not stored as ``\\N``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np

from seamline.contracts import OutputRecord, UserError
from seamline.contracts.readback import LineReader
from seamline.contracts.sink_kit import (
    AtomicFile,
    OutputConfig,
    PublishingSink,
    checked_vector,
    record_fields,
)
from seamline.contracts.stored import StoredRow, row_of

__all__ = ["TsvReader", "TsvSink"]

_ESCAPES = {"\\": "\\\\", "\t": "\\t", "\n": "\\n", "\r": "\\r"}
_ESCAPED = re.compile(r"\\(.)")
_NONE = "\\N"


def _escaped(text: str | None) -> str:
    return _NONE if text is None else "".join(_ESCAPES.get(c, c) for c in text)


def _unescaped(text: str) -> str | None:
    if text == _NONE:
        return None
    return _ESCAPED.sub(lambda m: {"t": "\t", "n": "\n", "r": "\r"}.get(m[1], m[1]), text)


class TsvReader(LineReader):
    """The records file, a line at a time (each bounded and checked: it is untrusted)."""

    def parse(self, line: bytes, where: str) -> tuple[StoredRow, list[str]]:
        try:
            doc_id, window, start, end, text, *values = line.decode().split("\t")
            fields: dict[str, Any] = {
                "id": _unescaped(doc_id),
                "window": int(window),
                "text": _unescaped(text),
            }
            fields["span"] = [int(start), int(end)]
        except ValueError as err:  # too few fields, a number that is not, not UTF-8
            raise UserError(f"{where}: not a line of the tsv sink ({err})") from None
        return row_of(fields, where), values


class TsvSink(PublishingSink[OutputConfig]):
    """Writes ``id, window, start, end, text, values...`` lines; ``path`` is the records file."""

    name: ClassVar[str] = "tsv"
    contract_version: ClassVar[str] = "1.4"  # 1.4: it names the reader of its output
    Config = OutputConfig  # path, errors_path and text: nothing of its own
    reader = TsvReader

    def write_rows(self, records: Sequence[OutputRecord], files: Mapping[str, AtomicFile]) -> None:
        vectors = [checked_vector(record) for record in records]  # all, before any is written
        lines = []
        for record, vector in zip(records, vectors, strict=True):
            fields = record_fields(record, text=self.config.text)  # UTF-8 safe, integers
            start, end = fields["span"]
            columns = [_escaped(fields["id"]), str(fields["window"]), str(start), str(end)]
            columns.append(_escaped(fields.get("text")))
            values = [repr(value) for value in vector.astype(np.float64).tolist()]
            lines.append("\t".join([*columns, *values]) + "\n")
        files["records"].write("".join(lines).encode("utf-8"))
