"""``is_blank``: the same answers as the rule it states, at C speed.

It looped in Python over every character: 7 ms for a text of 32,767 combining marks
and a letter, and ``seamline serve``, checking a 16 MiB body of such texts, answered no
client for seconds. Its pattern is checked here against the rule, character by
character, over the whole of Unicode.
"""

from __future__ import annotations

import functools
import sys
import unicodedata

import pytest

from seamline.contracts import documents
from seamline.contracts.documents import blank_kind, is_blank

EVERY_CHARACTER = "".join(map(chr, range(sys.maxunicode + 1)))


@functools.cache
def samples() -> str:
    """The first and last three characters of every Unicode category, and every space."""
    by_category: dict[str, list[str]] = {}
    for char in EVERY_CHARACTER:
        by_category.setdefault(unicodedata.category(char), []).append(char)
    chosen = {char for chars in by_category.values() for char in chars[:3] + chars[-3:]}
    return "".join(sorted(chosen | {char for char in EVERY_CHARACTER if char.isspace()}))


def invisible(char: str) -> bool:
    """The rule, as the docstring states it and the first version looped over it."""
    return char.isspace() or unicodedata.category(char) in {"Cc", "Cf", "Mn"}


def rule(text: str) -> bool:
    return not text.strip() or all(invisible(char) for char in text)


def test_the_pattern_finds_exactly_the_visible_characters_of_all_unicode() -> None:
    visible = "".join(char for char in EVERY_CHARACTER if not invisible(char))
    assert "".join(documents._visible().findall(EVERY_CHARACTER)) == visible


@pytest.mark.parametrize("around", ["", "\u0301", " \u200b", "\ufeff\x00", "\u0301a"])
def test_characters_of_every_category_alone_or_among_others_are_judged_as_the_rule_does(
    around: str,
) -> None:
    wrong = [
        hex(ord(char))
        for char in samples()
        for text in (char, around + char, char + around, around + char + around)
        if is_blank(text) != rule(text)
    ]
    assert wrong == []


def test_a_long_text_of_marks_is_not_looked_at_character_by_character(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not is_blank("\u0301x")  # builds the pattern (once a process), before counting
    looked_up: list[str] = []
    real = unicodedata.category

    def category(char: str) -> str:
        looked_up.append(char)
        return real(char)

    monkeypatch.setattr(documents.unicodedata, "category", category)
    assert not is_blank("\u0301" * 32767 + "a")
    assert is_blank("\u0301" * 32768)
    assert len(looked_up) <= 2


def test_the_kinds_of_blank() -> None:
    assert blank_kind("") == "empty"
    assert blank_kind(" \n\u3000") == "only whitespace"
    assert blank_kind("\ufeff\u0301\u200b ") is not None
    assert "invisible" in str(blank_kind("\ufeff\u0301\u200b "))
    assert blank_kind("\u0301e") is None
