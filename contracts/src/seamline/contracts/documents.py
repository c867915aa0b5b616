"""What a loader yields: documents, and the records of documents it could not read."""

from __future__ import annotations

import functools
import hashlib
import re
import sys
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class Document:
    """One input text. ``id`` is stable across runs for the same input.

    ``metadata`` travels with every output made from the document. One key has a
    meaning: ``path``, when present, names a file whose whole content is ``text``,
    so a reader can show the part of the file an output covers.
    """

    id: str
    text: str
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class DocumentError:
    """A document that could not be read, and why; it is reported, never dropped silently.

    ``stage`` says where it was set aside: ``load`` (the loader could not read it),
    ``prepare`` (the model could not tokenise it) or ``skip`` (it was read, but a rule
    the user can change set it aside, such as an empty text). ``metadata`` should say
    where the document came from (a path, a line), so that it can be found and re-run.

    ``place`` is true when ``id`` is not a document's id but a place in the input
    (``notes.jsonl:2``, ``data/a.parquet#0:7``): the loader could not read the record's
    id, or it repeats an earlier record's. Any string may be a real document's id, so
    without the mark a ``lancedb`` sync took such a place for the document of that id,
    which was embedded, and deleted the rows of the document the place stood for.

    ``duplicate_of`` is the id a record repeats, when that is why it was set aside (its
    ``id`` is then its place): the id was read, and the input holds it (the first record
    with it decides what becomes of it), so the record stands for no document missing from
    the run. A ``lancedb`` sync took such a record for an unreadable one and kept the rows
    of every document removed from the input.
    """

    id: str
    reason: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    stage: str = "load"
    place: bool = False
    duplicate_of: str | None = None


@dataclass(frozen=True, slots=True)
class Loaded:
    """One item from a loader, with the cursor that resumes reading right after it."""

    cursor: str
    item: Document | DocumentError


@dataclass(frozen=True, slots=True)
class Shard:
    """Which part of the input to read: shard ``index`` of ``count`` disjoint shards."""

    index: int = 0
    count: int = 1

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ValueError(f"shard {self.index} of {self.count} does not exist")

    def owns(self, position: int) -> bool:
        """Round-robin ownership of the item at ``position`` in the stable order."""
        return position % self.count == self.index


def id_digest(doc_id: str) -> int:
    """A document id as a 64-bit BLAKE2b digest: the same in every process, so shards and
    resumes agree, and 8 bytes whatever the id's length. What remembers the ids a loader
    has yielded keeps these (two different ids share one with odds about n² in 2⁶⁵)."""
    digest = hashlib.blake2b(doc_id.encode("utf-8", "surrogatepass"), digest_size=8)
    return int.from_bytes(digest.digest())


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or only whitespace (Unicode's, as ``str.strip`` knows it),
    counting as whitespace the invisible characters BERT's tokeniser drops: control characters
    (``\\x00``), format characters (Unicode category ``Cf``: the byte-order mark that is
    all of an empty file Windows Notepad saves, zero-width spaces and joiners) and
    combining marks (``Mn``: an accent with no letter, stripped with the accents by the
    lower-casing tokenisers of MiniLM and MPNet). Such a text embeds as an empty one does.

    One rule for both sides of a search: the first-party loaders set such documents aside
    (``skip_empty``) and ``search`` refuses such a query, which would otherwise rank the
    index by its distance from the empty text.

    A text that starts with a visible character (nearly every one) is decided by that
    character; any other by one regular-expression search for a visible character, in C.
    A loop in Python over every character took 7 ms for a text of 32,767 combining marks
    and a letter, and ``seamline serve``, checking a 16 MiB body of such texts, stopped
    answering every client for seconds.
    """
    stripped = text.strip()
    if not stripped:
        return True
    if not _invisible(stripped[0]):
        return False
    return _visible().search(stripped) is None


_INVISIBLE = frozenset({"Cc", "Cf", "Mn"})


def _invisible(char: str) -> bool:
    return char.isspace() or unicodedata.category(char) in _INVISIBLE


@functools.cache
def _visible() -> re.Pattern[str]:
    """A pattern matching any character :func:`_invisible` is false of, built once (about
    0.3 s) from this Python's own Unicode tables, the ones ``unicodedata`` reads: a list
    written here could fall out of step with them at the next Python."""
    spans: list[list[int]] = []
    for code in range(sys.maxunicode + 1):
        if _invisible(chr(code)):
            if spans and spans[-1][1] == code - 1:
                spans[-1][1] = code
            else:
                spans.append([code, code])
    ranges = "".join(f"\\U{first:08x}-\\U{last:08x}" for first, last in spans)
    return re.compile(f"[^{ranges}]")


def prepare_blank_check() -> None:
    """Build :func:`is_blank`'s pattern now (a server, before it answers: not on a request)."""
    _visible()


def blank_kind(text: str) -> str | None:
    """How ``text`` is blank (:func:`is_blank`), in words for an error, or None if it is not:
    ``empty``, ``only whitespace`` or ``only invisible characters ...``."""
    if not text:
        return "empty"
    if not text.strip():
        return "only whitespace"
    if is_blank(text):
        return "only invisible characters (control or format characters, combining marks)"
    return None
