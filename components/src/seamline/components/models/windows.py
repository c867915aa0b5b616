"""Cutting a document into overlapping token windows with the ``tokenizers`` library.

A document longer than the model's window becomes several examples instead of
being truncated: nothing of the text is lost. The windows are exactly those of a
Hugging Face fast tokenizer with truncation and a ``stride`` (the first encoding
and its ``overflowing`` encodings), so that the reference implementation can
reproduce them token for token. Each window gets its own ``[CLS]`` and ``[SEP]``
from the tokenizer's post-processor, and the character span of the text it covers.

A *prefix* (an instruction such as e5's ``"passage: "``) is tokenised once, alone, and
its tokens are put into every window right after the leading special token
(``[CLS] prefix content [SEP]``); the windows are cut ``len(prefix)`` tokens shorter so
that each still fits ``max_length``. A window's span covers the document's own
characters only: the prefix is not part of the document. The first window is exactly
what sentence-transformers encodes for ``prefix + text`` (its prompts), because a
prefix that ends a word (a space or punctuation last, as every instruction does)
tokenises to the same tokens alone as in front of the text; a prefix that would not
(``"query"`` running into the text's first word) is refused.

With ``window_edges: words`` the windows are cut at word edges instead
(:mod:`.word_windows`): the whole text is encoded once, cut there, and each window framed
with the post-processor's special tokens as the tokenizer frames a text.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Literal

import numpy as np
import numpy.typing as npt
from tokenizers import Encoding, Tokenizer, normalizers, pre_tokenizers

from seamline.components.models import word_windows
from seamline.components.models.text_growth import Growth, growth_of, normalizer_steps
from seamline.contracts import ConfigError, Example, WeightsError
from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path

EMPTY_SPAN = (0, 0)

WindowEdges = Literal["tokens", "words"]
"""Where a long text's windows are cut: at any token (the default), or at word edges."""

PROBES = ("a", "A", "1", "é")
"""Texts a prefix is tried in front of: its tokens must not merge with the text's."""


@dataclass(frozen=True)
class TokenWindows:
    """A tokenizer set up to cut texts into windows, with what ``collate`` needs to pad them."""

    tokenizer: Tokenizer
    pad_id: int
    """The id padding positions get (the tokenizer file's own padding id, else ``[PAD]``)."""
    special_tokens: int
    """Special tokens (``[CLS]``, ``[SEP]``) the post-processor adds to every window."""
    prefix: Prefix
    """What every window carries after its leading special tokens (nothing by default)."""
    token_types: bool = True
    """Whether windows keep the tokenizer's token type ids (else all 0: a Hugging Face
    tokenizer whose ``model_input_names`` leaves them out feeds the model none)."""
    growth: Growth | None = None
    """The check of how far the normalizer lengthens a document (:mod:`.text_growth`)."""
    words: WordEdges | None = None
    """Where windows are cut at word edges (``window_edges: words``); None: the tokenizer's
    own windows, cut wherever ``max_length`` falls."""

    @property
    def reserved(self) -> int:
        """Tokens of every window that are not the text's: special tokens and the prefix."""
        return self.special_tokens + len(self.prefix.ids)

    def split(self, doc_id: str, text: str) -> list[Example]:
        """All windows of ``text``, in order, as examples.

        A text the normalizer would lengthen out of proportion to its size is refused
        first (:class:`~.text_growth.DocumentTooLarge`), before its tokens take memory.
        """
        if self.growth is not None:
            self.growth.check(text)
        if self.words is not None:
            return self.word_split(self.words, doc_id, text)
        first = encoded(self.tokenizer, text)
        windows = [first, *first.overflowing]
        return [self.example(doc_id, index, window, text) for index, window in enumerate(windows)]

    def word_split(self, words: WordEdges, doc_id: str, text: str) -> list[Example]:
        """The windows of ``text`` cut at word edges, at whitespace where they can: one
        encoding of the whole text (no special tokens), cut by
        :func:`.word_windows.word_cuts`, each cut framed."""
        whole = encoded(self.tokenizer, text, add_special_tokens=False)
        tokens, offsets = whole.ids, whole.offsets  # each a new list at every read: read once
        starts = word_windows.word_starts(whole.word_ids)
        spaced = word_windows.spaced_starts(starts, offsets, text)
        cuts = word_windows.word_cuts(starts, len(tokens), words.room, words.stride, spaced)
        frame = words.frame
        examples = []
        for index, (start, end) in enumerate(cuts):
            content = end - start
            ids = np.asarray([*frame.head_ids, *tokens[start:end], *frame.tail_ids], np.int32)
            types = np.asarray(
                [*frame.head_types, *[frame.content_type] * content, *frame.tail_types], np.int32
            )
            span = (offsets[start][0], with_marks(text, offsets[end - 1][1])) if content else None
            examples.append(self.framed(doc_id, index, span or EMPTY_SPAN, ids, types))
        return examples

    def example(self, doc_id: str, index: int, window: Encoding, text: str) -> Example:
        """One window of ``text`` as an example, with the prefix put in after its leading
        specials."""
        example = to_example(doc_id, index, window, text)
        if not self.prefix.ids.size and self.token_types:
            return example
        ids = np.asarray(window.ids, dtype=np.int32)
        types = np.asarray(window.type_ids, dtype=np.int32)
        return self.framed(doc_id, index, example.span, ids, types)

    def framed(
        self,
        doc_id: str,
        index: int,
        span: tuple[int, int],
        ids: npt.NDArray[np.int32],
        types: npt.NDArray[np.int32],
    ) -> Example:
        """A window's ids and token types (its specials included) as an example, with the
        prefix put in after its leading specials and the token types dropped when the
        tokenizer feeds the model none."""
        at = self.prefix.at
        ids = np.concatenate([ids[:at], self.prefix.ids, ids[at:]]).astype(np.int32)
        types = np.concatenate([types[:at], self.prefix.type_ids, types[at:]]).astype(np.int32)
        if not self.token_types:
            types = np.zeros_like(types)
        return Example(
            doc_id=doc_id,
            index=index,
            span=span,
            length=len(ids),
            features={"input_ids": ids, "token_type_ids": types},
        )


@dataclass(frozen=True)
class WordEdges:
    """How windows are cut at word edges: the room and overlap of a window, in tokens of the
    text, and the special tokens framing each (:mod:`.word_windows`)."""

    room: int
    """Content tokens per window: ``max_length`` less the special tokens and the prefix."""
    stride: int
    frame: word_windows.Frame


@dataclass(frozen=True)
class Prefix:
    """A text put before every window's content, as tokens (nothing when ``text`` is empty)."""

    text: str = ""
    ids: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    type_ids: npt.NDArray[np.int32] = field(default_factory=lambda: np.zeros(0, np.int32))
    at: int = 0
    """Where in a window it goes: after this many leading special tokens (``[CLS]``)."""


class TokenizerFailed(ValueError):
    """The tokenizer's rules failed on a text (the Rust library panicked)."""


def encoded(tokenizer: Tokenizer, text: str, *, add_special_tokens: bool = True) -> Encoding:
    """``tokenizer.encode(text)``, with a panic of the Rust tokenizer made a ``ValueError``.

    A ``tokenizer.json`` is a file of the checkpoint, and its rules can fail on some
    texts only (a normalizer's or pre-tokenizer's regular expression that backtracks past
    the engine's limit): the library then raises ``pyo3_runtime.PanicException``, a
    ``BaseException``, which no ``except Exception`` stops, and one document ended the
    run (or failed the other requests batched with it on a server). As a ``ValueError``
    it fails that text alone: set aside at ``prepare``, or a 400 for its request.
    """
    try:
        return tokenizer.encode(text, add_special_tokens=add_special_tokens)
    except BaseException as err:
        if type(err).__name__ != "PanicException":
            raise
        message = str(err).splitlines()[0][:200] if str(err) else "no message"
        raise TokenizerFailed(f"the tokenizer failed on this text ({message})") from None


def load_windows(
    path: Path,
    serialized: bytes,
    max_length: int,
    stride: int,
    fallback_pad_id: int,
    *,
    prefix: str = "",
    token_types: bool = True,
    lower_case: bool = False,
    bert_normalizer: dict[str, bool | None] | None = None,
    edges: WindowEdges = "tokens",
) -> TokenWindows:
    """A tokenizer that cuts any text into windows of at most ``max_length`` tokens.

    Built from ``serialized``, the bytes of the ``tokenizer.json`` at ``path`` as the
    encoder read (and digested) them; ``path`` names the file in messages.

    Padding stored in ``tokenizer.json`` is switched off (after noting its pad id):
    padding is the job of ``collate``, which pads a whole batch to its shape bucket.
    With a ``prefix``, windows are cut shorter by its tokens, which every window then
    carries (see the module's docstring). The caller checks ``stride`` against
    ``max_length - reserved`` first: the tokenizer aborts the process on a long text
    when a window has no room past the overlap. ``lower_case`` (sentence-transformers'
    ``do_lower_case``) puts a ``Lowercase`` rule before the file's normalizer, as
    sentence-transformers does, unless it has one: documents, prefixes and queries alike.
    ``bert_normalizer`` replaces the file's normalizer (and its pre-tokenizer by
    ``BertPreTokenizer``) first, as transformers' BERT and MPNet tokenizer classes do
    (:func:`.checkpoint_settings.bert_normalizer`). ``edges`` is where windows are cut
    (:func:`_cut_at`).
    """
    try:
        tokenizer = Tokenizer.from_buffer(serialized)
    except Exception as err:  # tokenizers reports a bad file as a bare Exception
        raise WeightsError(
            f"{path} could not be read as a tokenizers file ({err}); restore it"
        ) from err
    pad_id = _pad_token_id(tokenizer, fallback_pad_id)
    tokenizer.no_padding()
    tokenizer.no_truncation()
    if bert_normalizer is not None:  # and the pre-tokenizer, as transformers' classes build it
        tokenizer.normalizer = normalizers.BertNormalizer(**bert_normalizer)  # type: ignore[arg-type]
        tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    if lower_case:
        _lower_first(tokenizer)
    try:
        tokenized = _tokenize_prefix(tokenizer, prefix)
    except TokenizerFailed as err:
        raise WeightsError(
            f"{path}: {err}: the prefix {cut(repr(prefix))}; restore the checkpoint's "
            "tokenizer.json, or give another prefix"
        ) from None
    special = int(tokenizer.num_special_tokens_to_add(is_pair=False))
    windows = TokenWindows(
        tokenizer=tokenizer,
        pad_id=pad_id,
        special_tokens=special,
        prefix=tokenized,
        token_types=token_types,
        growth=growth_of(tokenizer, path),
    )
    return _cut_at(windows, edges, max_length, stride, path)


def _cut_at(
    windows: TokenWindows, edges: WindowEdges, max_length: int, stride: int, path: Path
) -> TokenWindows:
    """``windows`` cutting texts at ``edges``: ``tokens``, the tokenizer's own truncation
    with a ``stride`` (the windows of a Hugging Face tokenizer, token for token), or
    ``words``, at word edges (:mod:`.word_windows`), the tokenizer left untruncated.

    Neither is set up when a window has no room past the overlap (the tokenizer would
    abort the process on a long text): the caller refuses that stride.
    """
    room = max_length - windows.reserved
    if room <= stride:
        return windows
    if edges == "words":
        try:
            probe = encoded(windows.tokenizer, "a")
        except TokenizerFailed as err:
            raise WeightsError(
                f"{path}: {err}: 'a', encoded to find the special tokens around a text; "
                "restore the tokenizer.json that belongs with this checkpoint"
            ) from None
        frame = word_windows.frame_of(probe)
        return replace(windows, words=WordEdges(room=room, stride=stride, frame=frame))
    windows.tokenizer.enable_truncation(
        max_length=max_length - len(windows.prefix.ids),
        stride=stride,
        strategy="longest_first",
        direction="right",
    )
    return windows


def _lower_first(tokenizer: Tokenizer) -> None:
    """Lowercase before the file's normalizer, as sentence-transformers 6 applies ``do_lower_case``.

    Its ``Transformer`` module does this to the fast tokenizer (``_has_lowercase``): a
    normalizer that is, or holds, a ``Lowercase`` is kept as it is. In the normalizer,
    offsets still point into the text as written, so spans are unchanged.
    """
    steps = normalizer_steps(tokenizer)
    if any(isinstance(step, normalizers.Lowercase) for step in steps):
        return
    tokenizer.normalizer = normalizers.Sequence([normalizers.Lowercase(), *steps])


def _tokenize_prefix(tokenizer: Tokenizer, prefix: str) -> Prefix:
    """``prefix`` as tokens, and where the post-processor's template puts a text's tokens."""
    if not prefix:
        return Prefix()
    encoding = encoded(tokenizer, prefix)
    content = [i for i, seq in enumerate(encoding.sequence_ids) if seq is not None]
    if not content:  # only whitespace, say: nothing to put in
        return Prefix(text=prefix)
    ids = [encoding.ids[i] for i in content]
    for probe in PROBES:
        alone = encoded(tokenizer, probe, add_special_tokens=False).ids
        together = encoded(tokenizer, prefix + probe, add_special_tokens=False)
        if together.ids != ids + alone:
            shown = together.tokens
            raise ConfigError(
                f"prefix {prefix!r} runs into the text that follows it when tokenised "
                f"({prefix + probe!r} becomes {shown}, not the prefix's tokens then the "
                "text's): end it with a space or punctuation, as e5's 'query: ' does"
            )
    return Prefix(
        text=prefix,
        ids=np.asarray(ids, dtype=np.int32),
        type_ids=np.asarray([encoding.type_ids[i] for i in content], dtype=np.int32),
        at=content[0],
    )


def _pad_token_id(tokenizer: Tokenizer, fallback: int) -> int:
    """The file's padding id, else the id of ``[PAD]``, else ``fallback``."""
    padding = tokenizer.padding
    if padding is not None and "pad_id" in padding:
        return int(padding["pad_id"])
    token_id = tokenizer.token_to_id("[PAD]")
    return fallback if token_id is None else int(token_id)


def to_example(doc_id: str, index: int, window: Encoding, text: str) -> Example:
    """One window of ``text`` as an example: its ids, token types and the character span
    it covers."""
    start, end = window_span(window.offsets, window.sequence_ids)
    return Example(
        doc_id=doc_id,
        index=index,
        span=(start, with_marks(text, end) if end > start else end),
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


def with_marks(text: str, end: int) -> int:
    """``end`` moved past the combining marks that follow it in ``text``.

    A lower-casing tokenizer strips accents, so no token covers a combining mark (the
    accent of an ``e`` written as ``e`` + U+0301): a window whose last token is that ``e``
    ended before its accent, and its text, stored and shown in every hit, read ``e``
    where the document has ``é``. The marks belong to the letter before them (one
    grapheme), so the span takes them too; the vector, made from the tokens, is the same.
    """
    while end < len(text) and unicodedata.category(text[end]).startswith("M"):
        end += 1
    return end
