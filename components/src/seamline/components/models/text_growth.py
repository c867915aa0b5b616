"""How far a tokenizer's normalizer may lengthen a document before it is cut into windows.

Documents are capped in bytes by their loader (``max_bytes``), but a ``tokenizer.json``
normalizer can make a tiny text enormous: a ``Replace`` of ``e`` by 4,000 characters
turned a 1.5 KB file into 3 million tokens, 99,999 windows and 2 GB of memory, all spent
inside the tokenizer at once. The rules that can do that are those that insert text of
the file's choosing (``Replace``, ``Prepend``, a ``Precompiled`` character map) and long
chains of rules; the usual ones grow a text by a small, fixed factor (``BertNormalizer``
spaces out CJK characters: three-fold; the Unicode forms: at most 18-fold, for rare
ligatures), and a checkpoint with a few of those alone is never checked, at no cost.

Any other normalizer is run on each document one rule at a time, before the tokenizer
sees the text, and the document is set aside (stage ``prepare``) as soon as one rule
makes it longer than :data:`MAX_GROWTH` times its own length (and :data:`FLOOR`
characters): far past what a real tokenizer does, so that a document of ``max_bytes`` of
ordinary text always passes, and its windows cost memory in proportion to its size. So
that one rule cannot exhaust memory on its own, a rule that inserts more than
:data:`MAX_INSERT` characters is refused when the encoder is built.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from tokenizers import normalizers

from seamline.contracts import WeightsError
from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

    from tokenizers import Tokenizer

MAX_GROWTH = 16
"""A document may become at most this many times its length in characters when normalized."""

FLOOR = 1 << 16
"""...and at least this many characters, whatever its length (a short text may grow more)."""

MAX_INSERT = 64
"""The most characters one match of a ``Replace`` (or a ``Prepend``) may put in."""

FIXED = frozenset(
    {"BertNormalizer", "Lowercase", "NFC", "NFD", "NFKC", "NFKD", "StripAccents", "Strip", "Nmt"}
)
"""Rules that grow a text by a small fixed factor at most (see the module docstring)."""

FEW = 4
"""A normalizer of at most this many :data:`FIXED` rules is not checked."""


class DocumentTooLarge(ValueError):
    """A document the tokenizer's normalizer would lengthen out of proportion: set aside."""


@dataclass(frozen=True)
class Growth:
    """The normalizer's rules, run one at a time on a document to bound its growth."""

    steps: tuple[Any, ...]

    def check(self, text: str) -> None:
        """Raise :class:`DocumentTooLarge` if a rule makes ``text`` too long for its size."""
        limit = max(FLOOR, MAX_GROWTH * len(text))
        current = text
        for step in self.steps:
            current = step.normalize_str(current)
            if len(current) > limit:
                raise DocumentTooLarge(
                    f"the tokenizer's normalizer makes this text of {len(text):,} characters "
                    f"longer than {limit:,} ({MAX_GROWTH} times its length, at least {FLOOR:,}), "
                    "which no real tokenizer does, and its windows would take memory out of "
                    "proportion to it; restore the checkpoint's tokenizer.json (its normalizer)"
                )


def normalizer_steps(tokenizer: Tokenizer) -> list[Any]:
    """The normalizer's rules in order (the library flattens a ``Sequence`` of them)."""
    normalizer = tokenizer.normalizer
    if normalizer is None:
        return []
    if isinstance(normalizer, normalizers.Sequence):
        return list(cast("Iterable[Any]", normalizer))
    return [normalizer]


def growth_of(tokenizer: Tokenizer, path: Path) -> Growth | None:
    """The check a tokenizer's documents need (None: its normalizer cannot grow them much).

    Refuses a rule that inserts more than :data:`MAX_INSERT` characters a match, naming
    ``path`` (the ``tokenizer.json``).
    """
    steps = normalizer_steps(tokenizer)
    if not steps:
        return None
    specs = [json.loads(step.__getstate__()) for step in steps]
    for spec in specs:
        inserted = spec.get("content", spec.get("prepend", ""))
        if isinstance(inserted, str) and len(inserted) > MAX_INSERT:
            raise WeightsError(
                f"{path}: normalizer {spec.get('type')} inserts {cut(repr(inserted), 60)}, "
                f"more than the {MAX_INSERT} characters a rule may put in at once: it would "
                "lengthen documents without bound; restore the checkpoint's tokenizer.json"
            )
    if len(steps) <= FEW and all(spec.get("type") in FIXED for spec in specs):
        return None
    return Growth(tuple(steps))
