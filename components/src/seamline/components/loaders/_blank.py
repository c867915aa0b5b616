"""The rule every first-party loader applies to a blank document, declared once."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from seamline.contracts.documents import blank_kind, is_blank

__all__ = ["BLANK_REASON", "blank_reason", "is_blank", "skip_empty_field"]

BLANK_REASON = "empty or only whitespace (skip_empty: true)"
"""The reason a skipped empty or whitespace-only document is recorded with (stage ``skip``)."""


def blank_reason(text: str) -> str:
    """The reason a blank document (:func:`is_blank`) is set aside with: a text of NULs or
    zero-width spaces was recorded as "empty or only whitespace", which it is not to the
    eye of someone reading the file; it is named as invisible characters, as ``search``
    and ``serve`` name such a query."""
    if not text.strip():
        return BLANK_REASON
    return f"{blank_kind(text)} (skip_empty: true)"


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
