"""Where windows are cut when they must start and end at word edges (``window_edges: words``).

The default windows (:mod:`.windows`) are a Hugging Face tokenizer's: ``max_length``
tokens at a time, cut wherever the count falls, so a later window can start with
``##lean`` (the end of "boolean") and end inside another word. The snippet a search
shows (or a prompt is built from) then reads broken, and the window's vector was made
from the pieces of a cut word, which no re-tokenised text gives.

Here a window starts at the first token of a word and ends at the last token of one,
a *word* being what the tokenizer's pre-tokenizer made (``Encoding.word_ids``: for a
BERT or MPNet tokenizer a run of letters and digits, each punctuation mark, each CJK
character), so that it works for any ``tokenizer.json``. Of those edges, the ones a
reader sees as word edges, at whitespace (:func:`spaced_starts`), are taken where one
costs at most a quarter of a window's room (:data:`SLACK`): ``don't`` is three of the
tokenizer's words, and a window starting at its ``t`` read as broken as one starting
inside a word; but a log line ``INFO {...}`` whose only whitespace is after ``INFO`` made
a window of ``INFO`` alone and windows overlapping by almost all their tokens, where the
tokenizer's edges (``,`` ``:`` ``{``) cut it as evenly as the default. A window holds at most the
tokens a default window holds; consecutive windows share at least ``stride`` tokens
where whole words allow it (the fewest whole words that make ``stride`` tokens); every
window gets past the one before it, and every token is in some window. A word longer
than a window is cut at token boundaries, with ``stride`` tokens of overlap, as the
default windows are. Since a word-aligned window's text tokenises again to the same
tokens (for a tokenizer whose words do not depend on the text before them, as
WordPiece's do not), each window's vector is what sentence-transformers' ``encode``
gives its text.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from tokenizers import Encoding


def word_starts(word_ids: Sequence[int | None]) -> list[int]:
    """The tokens that begin a word, in order: the first, and each whose word differs from
    the one before it (a token of no word, ``None``, is a word of its own)."""
    return [
        i for i, word in enumerate(word_ids) if i == 0 or word is None or word != word_ids[i - 1]
    ]


def spaced_starts(
    starts: Sequence[int], offsets: Sequence[tuple[int, int]], text: str
) -> list[int]:
    """The word starts (:func:`word_starts`) a reader sees begin a word: the text's first
    token, and each whose first character follows whitespace."""
    return [i for i in starts if offsets[i][0] == 0 or text[offsets[i][0] - 1].isspace()]


def word_cuts(
    starts: Sequence[int],
    tokens: int,
    room: int,
    stride: int,
    spaced: Sequence[int] | None = None,
) -> list[tuple[int, int]]:
    """``[start, end)`` token ranges of the windows of a text of ``tokens`` tokens.

    ``starts`` are its word starts (:func:`word_starts`), ``room`` the content tokens a
    window holds and ``stride`` the overlap wanted (``stride < room``, as the encoder
    checks). ``spaced``, a subset of ``starts`` (:func:`spaced_starts`), are preferred
    wherever a window can start or end at one. A text of no token has one empty window,
    as the default windows have.
    """
    if tokens == 0:
        return [(0, 0)]
    levels = [_edges(starts, tokens)] if spaced is None else [_edges(spaced, tokens)]
    if spaced is not None:
        levels.append(_edges(starts, tokens))
    cuts: list[tuple[int, int]] = []
    start, past = 0, 0
    while True:
        end = _end(levels, start, past, room)
        cuts.append((start, end))
        if end >= tokens:
            return cuts
        start, past = _next_start(levels, (start, end), room, stride), end


def _edges(starts: Sequence[int], tokens: int) -> list[int]:
    """``starts`` and the text's end: where a window may end."""
    return [*starts, tokens] if not starts or starts[-1] != tokens else list(starts)


SLACK = 4
"""A whitespace edge is taken over the tokenizer's nearest word edge when it costs at
most ``room // SLACK`` tokens: a window that much shorter, or an overlap that much
longer. Past that the tokenizer's edge is taken (the text has no whitespace near)."""


def _end(levels: Sequence[Sequence[int]], start: int, past: int, room: int) -> int:
    """The last edge a window from ``start`` reaches past ``past`` (the window before it
    ended there): a whitespace edge where one costs at most :data:`SLACK`, else the
    tokenizer's; ``start + room`` inside a word longer than a window (no edge in reach)."""
    low, high = max(start, past), start + room
    fine = _last_in(levels[-1], low, high)
    if fine is None:
        return high
    return _readable(levels, fine, room, lambda level: _last_in(level, low, high))


def _next_start(
    levels: Sequence[Sequence[int]],
    window: tuple[int, int],
    room: int,
    stride: int,
) -> int:
    """Where the window after ``window`` starts.

    Inside a long word (``window`` ended off an edge), ``stride`` tokens back, as a default
    window. Else at the latest word start that leaves ``stride`` tokens of overlap, among
    those from which the next window reaches past ``window``'s end (a start whose window
    would end where this one ends adds nothing); failing that, the earliest such start
    (less overlap: whole words do not allow ``stride``); failing that (the next word alone
    is longer than a window), at this window's end. A whitespace start is taken over the
    tokenizer's where it costs at most :data:`SLACK`.
    """
    start, end = window
    edges = levels[-1]  # every word edge
    at = bisect_left(edges, end)
    if at == len(edges) or edges[at] != end:
        return end - stride
    lowest = max(start + 1, edges[at + 1] - room)  # reaches the next edge past ``end``
    keeping = _last_in(edges, lowest - 1, end - stride)
    if keeping is not None:
        latest = keeping
        return _readable(levels, latest, room, lambda level: _last_in(level, lowest - 1, latest))
    earliest = _first_in(edges, lowest, end)
    if earliest is None:
        return end
    return _readable(levels, earliest, room, lambda level: _first_in(level, earliest, end))


def _readable(
    levels: Sequence[Sequence[int]],
    fine: int,
    room: int,
    find: Callable[[Sequence[int]], int | None],
) -> int:
    """The edge ``find`` gives in the most readable level, where it is within :data:`SLACK`
    of ``fine`` (the tokenizer's edge); else ``fine``."""
    for level in levels[:-1]:
        found = find(level)
        if found is not None and abs(fine - found) <= room // SLACK:
            return found
    return fine


def _last_in(edges: Sequence[int], low: int, high: int) -> int | None:
    """The last of ``edges`` in ``(low, high]``, or None."""
    last = bisect_right(edges, high) - 1
    return edges[last] if last >= 0 and edges[last] > low else None


def _first_in(edges: Sequence[int], low: int, high: int) -> int | None:
    """The first of ``edges`` in ``[low, high]``, or None."""
    first = bisect_left(edges, low)
    return edges[first] if first < len(edges) and edges[first] <= high else None


@dataclass(frozen=True)
class Frame:
    """What the post-processor puts around a text's tokens (``[CLS]`` … ``[SEP]``), read
    once from a probe text, so that a window cut from one encoding of the whole document
    is framed as the tokenizer frames a text."""

    head_ids: tuple[int, ...]
    head_types: tuple[int, ...]
    tail_ids: tuple[int, ...]
    tail_types: tuple[int, ...]
    content_type: int
    """The token type the template gives a text's own tokens (0 for every tokenizer seen)."""


def frame_of(probe: Encoding) -> Frame:
    """The frame around the content tokens of ``probe`` (a text encoded with its specials)."""
    content = [i for i, seq in enumerate(probe.sequence_ids) if seq is not None]
    first, last = content[0], content[-1]
    return Frame(
        head_ids=tuple(probe.ids[:first]),
        head_types=tuple(probe.type_ids[:first]),
        tail_ids=tuple(probe.ids[last + 1 :]),
        tail_types=tuple(probe.type_ids[last + 1 :]),
        content_type=int(probe.type_ids[first]),
    )
