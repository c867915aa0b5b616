"""``jsonl``: one document per line of a JSON Lines file.

The file is streamed line by line, so its size does not bound memory. The cursor
is the 1-based line number, which survives any edit that appends lines; shards are
assigned by position among the non-blank lines, so blank lines never unbalance
them. A line that is not a usable JSON object becomes a :class:`DocumentError`
naming the line, so one bad line is reported instead of ending the run.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    Loaded,
    Loader,
    Shard,
    UserError,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

_WHOLE = Shard()
"""The default shard: all of the input."""


class JsonlLoaderConfig(ComponentConfig):
    """The ``with:`` block of the ``jsonl`` loader."""

    path: Path = Field(description="The JSON Lines file to read (UTF-8, one object per line).")
    id_field: str = Field(
        default="id",
        description="Field holding each document's id (a string or an integer).",
    )
    text_field: str = Field(default="text", description="Field holding each document's text.")
    metadata_fields: list[str] = Field(
        default_factory=list,
        description="Fields copied into the document's metadata when present on a line.",
    )

    @field_validator("id_field", "text_field")
    @classmethod
    def _non_empty(cls, value: str) -> str:
        if not value:
            raise ValueError("must name a field, not be empty")
        return value

    @model_validator(mode="after")
    def _distinct_fields(self) -> JsonlLoaderConfig:
        if self.id_field == self.text_field:
            raise ValueError(
                f"id_field and text_field are both {self.id_field!r}; they must differ"
            )
        return self


class JsonlLoader(Loader[JsonlLoaderConfig]):
    """Yields each non-blank line of a JSON Lines file as one document."""

    name: ClassVar[str] = "jsonl"
    contract_version: ClassVar[str] = "1.0"
    Config = JsonlLoaderConfig

    def read(self, *, shard: Shard = _WHOLE, after: str | None = None) -> Iterator[Loaded]:
        path = self.config.path
        skip_through = self._parse_cursor(after)
        if not path.is_file():
            what = "is not a file" if path.exists() else "does not exist"
            raise UserError(
                f"jsonl loader: {str(path)!r} {what} (looked in {path.absolute()}); "
                "set 'path' in the loader's 'with:' block to your JSON Lines file"
            )
        last_line = 0
        position = -1
        with path.open("rb") as handle:
            for lineno, raw in enumerate(handle, start=1):
                last_line = lineno
                if not raw.strip():
                    continue
                position += 1
                if lineno <= skip_through or not shard.owns(position):
                    continue
                yield Loaded(cursor=str(lineno), item=self._parse(lineno, raw))
        if skip_through > last_line:
            raise UserError(
                f"jsonl loader cannot resume after line {skip_through}: {str(path)!r} has only "
                f"{last_line} lines now. The file changed since the checkpoint was written; "
                "restore it or start the run afresh."
            )

    @staticmethod
    def _parse_cursor(after: str | None) -> int:
        """The line number to resume after (0: from the start)."""
        if after is None:
            return 0
        if not after.isdigit() or int(after) < 1:
            raise UserError(
                f"jsonl loader cannot resume after {after!r}: its cursors are line numbers "
                "(1 or more); the checkpoint was not written by this loader"
            )
        return int(after)

    def _parse(self, lineno: int, raw: bytes) -> Document | DocumentError:
        """Turn one line into a document, or into the record of why it is not one."""
        fallback_id = f"{self.config.path.name}:{lineno}"
        where = {"path": str(self.config.path.absolute()), "line": lineno}

        def error(reason: str, doc_id: str = fallback_id) -> DocumentError:
            return DocumentError(id=doc_id, reason=f"line {lineno}: {reason}", metadata=where)

        try:
            obj: Any = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as err:
            return error(f"not valid utf-8: {err.reason} at byte offset {err.start} of the line")
        except json.JSONDecodeError as err:
            return error(f"invalid JSON: {err.msg} at column {err.colno}")
        if not isinstance(obj, dict):
            return error(f"expected a JSON object, found {type(obj).__name__}")

        id_field, text_field = self.config.id_field, self.config.text_field
        if id_field not in obj:
            return error(f"missing id field {id_field!r} (set id_field to the field that has it)")
        raw_id = obj[id_field]
        # bool is an int in Python but never a sensible id; floats, nulls and containers
        # would stringify into ids that are not stable or not meaningful.
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or raw_id == "":
            return error(f"id field {id_field!r} must be a non-empty string or an integer")
        doc_id = str(raw_id)

        if text_field not in obj:
            return error(f"missing text field {text_field!r}", doc_id)
        text = obj[text_field]
        if not isinstance(text, str):
            kind = type(text).__name__
            return error(f"text field {text_field!r} must be a string, not {kind}", doc_id)

        metadata = {name: obj[name] for name in self.config.metadata_fields if name in obj}
        return Document(id=doc_id, text=text, metadata=metadata)
