"""What a loader yields: documents, and the records of documents it could not read."""

from __future__ import annotations

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
    """

    id: str
    reason: str
    metadata: Mapping[str, Any] = field(default_factory=dict)
    stage: str = "load"


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
