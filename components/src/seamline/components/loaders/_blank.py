"""The rule every first-party loader applies to a blank document, declared once."""

from __future__ import annotations

import unicodedata
from typing import Any

from pydantic import Field

BLANK_REASON = "empty or only whitespace (skip_empty: true)"
"""The reason a skipped blank document is recorded with (stage ``skip``)."""


def skip_empty_field(unit: str) -> Any:
    """``skip_empty`` of a loader whose documents are ``unit`` (files, lines, rows): on by
    default, since a blank document's vector is close to many queries and ranks high."""
    return Field(
        default=True,
        description=f"Set aside {unit} whose text is empty or only whitespace (recorded in the "
        "errors file with stage 'skip', counted as skipped by rule) instead of embedding them: "
        "a blank document's vector is close to many queries and would rank high for them. "
        "false embeds them, as sentence-transformers embeds an empty string.",
    )


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or only whitespace (Unicode's, as ``str.strip`` knows it),
    counting as whitespace the invisible characters BERT's tokeniser drops: control characters
    (``\\x00``), format characters (Unicode category ``Cf``: the byte-order mark that is
    all of an empty file Windows Notepad saves, zero-width spaces and joiners) and
    combining marks (``Mn``: an accent with no letter, stripped with the accents by the
    lower-casing tokenisers of MiniLM and MPNet). Such a text embeds as an empty one does."""
    if not text.strip():
        return True
    return all(char.isspace() or unicodedata.category(char) in _INVISIBLE for char in text)


_INVISIBLE = frozenset({"Cc", "Cf", "Mn"})
