"""``jsonl``: one document per line of a JSON Lines file.

The file is streamed line by line, so its size does not bound memory. The cursor
is the 1-based line number, which survives any edit that appends lines; shards are
assigned by position among the non-blank lines, so blank lines never unbalance
them. A line that is not a usable JSON object becomes a :class:`DocumentError`
naming the line, so one bad line is reported instead of ending the run. A UTF-8
byte-order mark at the start of the file (Windows tools write one) is dropped.
"""

from __future__ import annotations

import codecs
import json
import sys
from typing import IO, TYPE_CHECKING, Any, ClassVar

from pydantic import Field, field_validator, model_validator

from seamline.components.loaders._blank import blank_reason, is_blank, skip_empty_field
from seamline.components.loaders._listing import absent
from seamline.components.loaders._seen_ids import SeenIds, Skipping
from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    Loaded,
    Loader,
    NamedPath,
    Shard,
    UserError,
)
from seamline.contracts.json_safe import name_text, safe_text
from seamline.contracts.untrusted import MAX_COUNT_DIGITS, cut, is_count

if TYPE_CHECKING:
    from collections.abc import Iterator
    from pathlib import Path

_WHOLE = Shard()
"""The default shard: all of the input."""

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
"""10 MiB: far above any text a model reads whole, far below a machine's memory."""

_CHUNK = 1 << 20
"""How much of an over-long line is read at a time while skipping the rest of it."""

MAX_METADATA_DEPTH = 64
"""Deepest nesting of a metadata value that is copied: deeper is refused, not recursed into."""


class JsonlLoaderConfig(ComponentConfig):
    """The ``with:`` block of the ``jsonl`` loader."""

    path: NamedPath = Field(description="The JSON Lines file to read (UTF-8, one object per line).")
    id_field: str = Field(
        default="id",
        description="Field holding each document's id (a string or an integer).",
    )
    text_field: str = Field(default="text", description="Field holding each document's text.")
    metadata_fields: list[str] = Field(
        default_factory=list,
        description="Fields copied into the document's metadata when present on a line.",
    )
    max_bytes: int | None = Field(
        default=DEFAULT_MAX_BYTES,
        description="Longest line to read, in bytes, its line end not counted (default 10 MiB); "
        "a longer line becomes an error record and is skipped in bounded memory. Null means "
        "no limit.",
    )
    max_tracked_ids: int = Field(
        default=1_000_000,
        description="How many distinct ids to remember so that a repeated id is refused (the "
        "later line becomes an error record naming the first); about 100 bytes each. Past "
        "it, ids are no longer remembered and a warning says so. 0 turns the check off.",
    )
    skip_empty: bool = skip_empty_field("lines")

    @field_validator("max_bytes")
    @classmethod
    def _positive_limit(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"max_bytes must be at least 1 (or null for no limit), not {value}")
        return value

    @field_validator("max_tracked_ids")
    @classmethod
    def _not_negative(cls, value: int) -> int:
        if value < 0:
            raise ValueError(f"max_tracked_ids must be 0 (no check) or more, not {value}")
        return value

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
            what = "is not a file" if path.exists() else absent(path)
            raise UserError(
                f"jsonl loader: {str(path)!r} {what} (looked in {path.absolute()}); "
                "set 'path' in the loader's 'with:' block to your JSON Lines file"
            )
        seen = SeenIds(self.config.max_tracked_ids, self.name, lambda line: self._where(line))
        skipping = Skipping(self.name, path, skip_through)
        last_line = 0
        position = -1
        with path.open("rb") as handle:
            refuse_other_format(path, handle.peek(8)[:8])
            for lineno, raw in enumerate(self._lines(handle), start=1):
                last_line = lineno
                mark = 0
                if lineno == 1 and raw is not None and raw.startswith(codecs.BOM_UTF8):
                    mark = len(codecs.BOM_UTF8)  # Windows tools write one; not JSON
                    raw = raw[mark:]
                if raw is not None and not raw.strip():
                    continue
                position += 1
                mine = lineno > skip_through and shard.owns(position)
                if lineno <= skip_through:
                    skipping.at(lineno)
                if not mine and not seen.learning:
                    continue
                # Lines of other shards, and lines before the cursor, are read for their ids
                # too while ids are learned: which line of a repeated id comes first is then
                # the same in every shard and on every resume. Not past the bound
                # (max_tracked_ids): nothing is learned from them then, and a resume after
                # line 8,000,000 of a file parsed 8 million lines (590 s) before its first
                # document. The first line with an id keeps it, a document or not.
                if not mine:
                    found = None if raw is None else self._identified(lineno, raw, mark)
                    if isinstance(found, tuple):
                        seen.first(found[1], lineno)
                    continue
                item = self._too_long(lineno) if raw is None else self._parse(lineno, raw, mark)
                if isinstance(item, Document):
                    item = self._unique(item, lineno, seen)
                elif not item.place:
                    # Its id was read: the first line with an id keeps it even when set
                    # aside, as in parquet; else the errors file and the output shared it.
                    seen.first(item.id, lineno)
                yield Loaded(cursor=str(lineno), item=item)
        if position < 0 and skip_through == 0:
            # As text-files and parquet refuse a pattern that finds nothing: an empty run
            # would publish an empty output over the last one (a sync deletes every row).
            raise UserError(
                f"jsonl loader: {str(path)!r} holds no JSON line (it is empty or blank; "
                f"looked in {path.absolute()}); nothing was written. Set 'path' in the "
                "loader's 'with:' block to a JSON Lines file with documents in it"
            )
        if skip_through > last_line:
            raise UserError(
                f"jsonl loader cannot resume after line {skip_through}: {str(path)!r} has only "
                f"{last_line} lines now. The file changed since the checkpoint was written; "
                "restore it or start the run afresh."
            )

    def _lines(self, handle: IO[bytes]) -> Iterator[bytes | None]:
        """Each line of ``handle``; None for a line longer than ``max_bytes``.

        The limit is the line's content: its end, LF or a Windows CRLF, is not counted. An
        over-long line is read at most ``max_bytes + 2`` bytes at a time, then the rest of
        it in chunks that are thrown away: a line of gigabytes (or a file with no newline
        at all) costs no more memory than the limit.
        """
        limit = self.config.max_bytes
        if limit is None:
            yield from handle
            return
        while True:
            line = handle.readline(limit + 2)  # the content, and a line end of one or two bytes
            if not line:
                return
            if len(line) - _line_end(line) <= limit:
                yield line
                continue
            while line and not line.endswith(b"\n"):
                line = handle.readline(_CHUNK)
            yield None

    def _unique(self, document: Document, lineno: int, seen: SeenIds) -> Document | DocumentError:
        """``document``, or an error record if an earlier line had its id."""
        first = seen.first(document.id, lineno)
        if first == lineno:
            return document
        return DocumentError(
            id=f"{self.config.path.name}:{lineno}",
            reason=f"line {lineno}: duplicate id {document.id!r}, first seen at line {first}; "
            "give each line its own id",
            metadata=self._where(lineno),
            place=True,
            duplicate_of=document.id,  # known and present: it holds no sync's deletions back
        )

    def _too_long(self, lineno: int) -> DocumentError:
        return DocumentError(
            id=f"{self.config.path.name}:{lineno}",
            reason=f"line {lineno}: longer than max_bytes={self.config.max_bytes} "
            "(raise max_bytes to read it)",
            metadata=self._where(lineno),
            place=True,
        )

    def _where(self, lineno: int) -> dict[str, Any]:
        return {"path": safe_text(name_text(self.config.path.absolute())), "line": lineno}

    @staticmethod
    def _parse_cursor(after: str | None) -> int:
        """The line number to resume after (0: from the start)."""
        if after is None:
            return 0
        if not is_count(after) or int(after) < 1:  # isdigit() alone accepted '²'
            raise UserError(
                f"jsonl loader cannot resume after {cut(after, 60)!r}: its cursors are line "
                f"numbers (1 or more, at most {MAX_COUNT_DIGITS} digits); the checkpoint was "
                "not written by this loader"
            )
        return int(after)

    def _error(
        self, lineno: int, reason: str, doc_id: str | None = None, stage: str = "load"
    ) -> DocumentError:
        """The record of why line ``lineno`` is not a document. No id read: the line's
        place stands in, marked as one (DocumentError.place)."""
        return DocumentError(
            id=f"{self.config.path.name}:{lineno}" if doc_id is None else doc_id,
            reason=f"line {lineno}: {reason}",
            metadata=self._where(lineno),
            stage=stage,
            place=doc_id is None,
        )

    def _parse(self, lineno: int, raw: bytes, mark: int = 0) -> Document | DocumentError:
        """Turn one line into a document, or into the record of why it is not one.

        ``mark`` is the length of a byte-order mark dropped from the line's start: a byte
        offset is reported in the line as it is on disk, where a hex viewer finds it.
        """
        found = self._identified(lineno, raw, mark)
        if isinstance(found, DocumentError):
            return found
        obj, doc_id = found

        def error(reason: str, doc_id: str | None = None, stage: str = "load") -> DocumentError:
            return self._error(lineno, reason, doc_id, stage)

        text_field = self.config.text_field
        if text_field not in obj:
            return error(f"missing text field {text_field!r}", doc_id)
        text = obj[text_field]
        if not isinstance(text, str):
            kind = type(text).__name__
            return error(f"text field {text_field!r} must be a string, not {kind}", doc_id)
        if (bad := _lone_surrogate(text)) is not None:
            return error(
                f"text field {text_field!r} holds {bad}, which is not valid Unicode", doc_id
            )
        if self.config.skip_empty and is_blank(text):
            return error(blank_reason(text), doc_id, "skip")

        metadata = {name: obj[name] for name in self.config.metadata_fields if name in obj}
        for name, value in metadata.items():
            if (problem := _metadata_problem(value, MAX_METADATA_DEPTH)) is not None:
                return error(f"metadata field {name!r} {problem}", doc_id)
        return Document(id=doc_id, text=text, metadata=metadata)

    def _identified(
        self, lineno: int, raw: bytes, mark: int
    ) -> tuple[dict[str, Any], str] | DocumentError:
        """The line's JSON object and its id, or the record of a line whose id cannot be
        read: all a line before the cursor is parsed for while ids are learned (a whole
        document made of each cost 3.5 times the JSON parse)."""

        def error(reason: str) -> DocumentError:
            return self._error(lineno, reason)

        try:
            obj: Any = json.loads(raw.decode("utf-8"), object_pairs_hook=_unique_keys)
        except UnicodeDecodeError as err:
            at = err.start + mark
            return error(f"not valid utf-8: {err.reason} at byte offset {at} of the line")
        except json.JSONDecodeError as err:
            return error(_invalid(err))
        except _RepeatedKey as err:
            return error(
                f"invalid JSON: the key {err.key!r} appears twice in one object; readers "
                "disagree on which value counts (Python's json keeps the last, silently): "
                "keep one"
            )
        except RecursionError:
            return error("invalid JSON: nested too deeply to read")
        except ValueError as err:  # an integer of more digits than Python converts
            if "digits" not in str(err):
                return error(f"invalid JSON: {err}")
            limit = sys.get_int_max_str_digits()
            return error(f"invalid JSON: a number of more than {limit} digits")
        if not isinstance(obj, dict):
            return error(f"expected a JSON object, found {type(obj).__name__}")

        id_field = self.config.id_field
        if id_field not in obj:
            return error(f"missing id field {id_field!r} (set id_field to the field that has it)")
        raw_id = obj[id_field]
        # bool is an int in Python but never a sensible id; floats, nulls and containers
        # would stringify into ids that are not stable or not meaningful.
        if isinstance(raw_id, bool) or not isinstance(raw_id, str | int) or raw_id == "":
            return error(f"id field {id_field!r} must be a non-empty string or an integer")
        doc_id = str(raw_id)
        if (bad := _lone_surrogate(doc_id)) is not None:
            return error(f"id field {id_field!r} holds {bad}, which is not valid Unicode")
        return obj, doc_id


_OTHER_FORMATS = {
    b"\x1f\x8b": ("gzip-compressed", "decompress it first (gunzip -k FILE)"),
    b"(\xb5/\xfd": ("zstd-compressed", "decompress it first (zstd -d FILE)"),
    b"BZh": ("bzip2-compressed", "decompress it first (bunzip2 -k FILE)"),
    b"\xfd7zXZ": ("xz-compressed", "decompress it first (unxz -k FILE)"),
    b"\xff\xfe": ("UTF-16 text", "convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"),
    b"\xfe\xff": ("UTF-16 text", "convert it to UTF-8 (iconv -f UTF-16 -t UTF-8)"),
}
"""Magic numbers of what a JSON Lines file is often given as instead, and the fix."""


def refuse_other_format(path: Path, head: bytes) -> None:
    """Refuse a file that begins as a compressed stream or UTF-16 text (``UserError``):
    read as UTF-8 lines, each of its lines would fail with a reason that hides why."""
    for magic, (what, fix) in _OTHER_FORMATS.items():
        if head.startswith(magic):
            raise UserError(
                f"jsonl loader: {str(path)!r} is {what}, not UTF-8 JSON Lines (it begins "
                f"with the bytes {magic!r}); {fix} and set 'path' to the result"
            )


def _lone_surrogate(text: str) -> str | None:
    """A description of the first lone surrogate in ``text`` (not encodable), or None."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return f"a lone surrogate {text[err.start]!r} at offset {err.start}"
    return None


def _metadata_problem(value: Any, limit: int) -> str | None:
    """Why a metadata value cannot be copied (None if it can), in one iterative walk: it
    nests containers more than ``limit`` levels deep, or a string or key in it holds a
    lone surrogate (``"\\ud800"``, valid JSON but not Unicode).

    The text and the id were checked for lone surrogates, the metadata not: the lancedb
    and parquet sinks then failed to encode it and the whole run stopped, naming no line.
    """
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, str) and (bad := _lone_surrogate(item)) is not None:
            return f"holds {bad}, which is not valid Unicode"
        if isinstance(item, dict | list):
            if depth >= limit:
                return f"is nested deeper than {limit} levels"
            if isinstance(item, dict):
                for key in item:
                    if (bad := _lone_surrogate(key)) is not None:
                        return f"holds {bad} in a key, which is not valid Unicode"
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
    return None


class _RepeatedKey(Exception):
    """A key given twice in one JSON object (:func:`_unique_keys`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict, unless a key is repeated.

    ``{"id": "b", "id": "c", ...}`` was the document ``c`` and ``{"text": "first",
    "text": "second"}`` embedded the second text, without a word: which one counts is
    the writer's mistake to mend, as a YAML key given twice is refused.
    """
    obj = dict(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise _RepeatedKey(key)
            seen.add(key)
    return obj


def _invalid(err: json.JSONDecodeError) -> str:
    """Why a line is not JSON, placed in the line, with the cause when it is a known one.

    Some of json's messages end in "at" (it appends the place to them itself). A line cut
    short fails past its last character: json counts that as column 1 of the next line,
    which read as the line's first column. A file whose lines end in CR alone (classic
    Mac OS) is one "line" to a reader of LF-ended lines, and json takes the CR for space:
    "Extra data at column 27" named no cause.
    """
    content = err.doc.rstrip("\r\n")
    place = "the end of the line" if err.pos >= len(content) else f"column {err.pos + 1}"
    said = f"invalid JSON: {err.msg.removesuffix(' at')} at {place}"
    if "\r" in content[: err.pos]:
        said += (
            "; a carriage return (CR) without a line feed comes before it: the file's lines "
            "end in CR only. Convert them to LF (tr '\\r' '\\n' < FILE > NEW.jsonl)"
        )
    return said


def _line_end(line: bytes) -> int:
    """The bytes of ``line``'s end, not counted against ``max_bytes``: 2 for CRLF (a file
    written on Windows), 1 for LF, 0 for a last line without one."""
    if line.endswith(b"\r\n"):
        return 2
    return 1 if line.endswith(b"\n") else 0
