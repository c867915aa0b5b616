"""Cutting a document into overlapping token windows with the ``tokenizers`` library.

A document longer than the model's window becomes several examples instead of
being truncated: nothing of the text is lost. The windows are exactly those of a
Hugging Face fast tokenizer with truncation and a ``stride`` (the first encoding
and its ``overflowing`` encodings), so that the reference implementation can
reproduce them token for token. Each window gets its own ``[CLS]`` and ``[SEP]``
from the tokenizer's post-processor, and the character span of the text it covers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from tokenizers import Encoding, Tokenizer

from seamline.contracts import Example, WeightsError

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

EMPTY_SPAN = (0, 0)


@dataclass(frozen=True)
class TokenWindows:
    """A tokenizer set up to cut texts into windows, with what ``collate`` needs to pad them."""

    tokenizer: Tokenizer
    pad_id: int
    """The id padding positions get (the tokenizer file's own padding id, else ``[PAD]``)."""
    special_tokens: int
    """Special tokens (``[CLS]``, ``[SEP]``) the post-processor adds to every window."""

    def split(self, doc_id: str, text: str) -> list[Example]:
        """All windows of ``text``, in order, as examples."""
        return split(self.tokenizer, doc_id, text)


def load_windows(path: Path, max_length: int, stride: int, fallback_pad_id: int) -> TokenWindows:
    """A tokenizer that cuts any text into windows of at most ``max_length`` tokens.

    Padding stored in ``tokenizer.json`` is switched off (after noting its pad id):
    padding is the job of ``collate``, which pads a whole batch to its shape bucket.
    """
    try:
        tokenizer = Tokenizer.from_file(str(path))
    except Exception as err:  # tokenizers reports a bad file as a bare Exception
        raise WeightsError(
            f"{path} could not be read as a tokenizers file ({err}); restore it"
        ) from err
    pad_id = _pad_token_id(tokenizer, fallback_pad_id)
    tokenizer.no_padding()
    tokenizer.enable_truncation(
        max_length=max_length, stride=stride, strategy="longest_first", direction="right"
    )
    special = int(tokenizer.num_special_tokens_to_add(is_pair=False))
    return TokenWindows(tokenizer=tokenizer, pad_id=pad_id, special_tokens=special)


def _pad_token_id(tokenizer: Tokenizer, fallback: int) -> int:
    """The file's padding id, else the id of ``[PAD]``, else ``fallback``."""
    padding = tokenizer.padding
    if padding is not None and "pad_id" in padding:
        return int(padding["pad_id"])
    token_id = tokenizer.token_to_id("[PAD]")
    return fallback if token_id is None else int(token_id)


def split(tokenizer: Tokenizer, doc_id: str, text: str) -> list[Example]:
    """All windows of ``text``, in order, as examples."""
    first = tokenizer.encode(text)
    windows = [first, *first.overflowing]
    return [to_example(doc_id, index, window) for index, window in enumerate(windows)]


def to_example(doc_id: str, index: int, window: Encoding) -> Example:
    """One window as an example: its ids, token types and the character span it covers."""
    return Example(
        doc_id=doc_id,
        index=index,
        span=window_span(window.offsets, window.sequence_ids),
        length=len(window.ids),
        features={
            "input_ids": np.asarray(window.ids, dtype=np.int32),
            "token_type_ids": np.asarray(window.type_ids, dtype=np.int32),
        },
    )


def window_span(
    offsets: Sequence[tuple[int, int]], sequence_ids: Sequence[int | None]
) -> tuple[int, int]:
    """``[start, end)`` in the text from the first to the last content token.

    Content tokens are those the text produced (a sequence id, not ``None``), told
    apart from the ``[CLS]``/``[SEP]`` the post-processor added by position rather
    than by token id, since ``[UNK]`` or a literal ``[SEP]`` in the text is content
    too. A window with no content token (an empty text gives just ``[CLS] [SEP]``)
    covers nothing: ``(0, 0)``.
    """
    content = [span for span, seq in zip(offsets, sequence_ids, strict=True) if seq is not None]
    if not content:
        return EMPTY_SPAN
    return (int(content[0][0]), int(content[-1][1]))
