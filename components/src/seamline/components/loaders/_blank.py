"""The rule every first-party loader applies to a blank document, declared once."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from seamline.contracts.documents import is_blank

__all__ = ["BLANK_REASON", "is_blank", "skip_empty_field"]

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
