"""``mpnet-encoder`` against golden vectors from transformers and sentence-transformers.

The goldens (``tests/golden/mpnet_tiny*``, made by ``make_mpnet_golden.py`` with the
reference stack on PyTorch) are a small random-weight MPNet checkpoint and, for two
configurations, the windows, spans, token ids and embeddings of every text of
``texts.jsonl``, each window embedded alone. Here the encoder must reproduce them
within 1e-5, in padded batches of eight windows and in packed rows, served by every
attention that adds the relative bias; and the contract's bucket function must be
transformers' own.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import numpy.typing as npt
import pytest
from seamline_cpu_flash import CpuFlashAttention

from seamline.components.attention.blockwise import BlockwiseAttention
from seamline.components.attention.native import NativeAttention
from seamline.components.models.mpnet import Config, MpnetEncoder
from seamline.contracts import AttentionFn, Document, Example, relative_position_buckets
from seamline.contracts.testing import dense_attention
from tests.components.padded_batches import embed_padded

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
WEIGHTS = str(GOLDEN / "mpnet_tiny")
CONFIGS = [(256, 64), (32, 8)]
BATCH = 8
ATOL = 1e-5

ATTENTIONS: dict[str, Callable[[], AttentionFn]] = {
    "native": lambda: NativeAttention(NativeAttention.Config()),
    "blockwise": lambda: BlockwiseAttention(BlockwiseAttention.Config(block_q=32, block_k=32)),
    "cpu-flash": lambda: CpuFlashAttention(CpuFlashAttention.Config()),
}


@dataclass(frozen=True)
class Golden:
    texts: list[str]
    arrays: dict[str, npt.NDArray[Any]]
    meta: dict[str, Any]

    def of(self, config: tuple[int, int], key: str) -> npt.NDArray[Any]:
        return self.arrays[f"L{config[0]}_S{config[1]}_{key}"]


@pytest.fixture(scope="module")
def golden() -> Golden:
    texts = [
        json.loads(line)["text"]
        for line in (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").split("\n")
        if line.strip()
    ]
    with np.load(GOLDEN / "mpnet_tiny.npz") as npz:
        arrays = {key: npz[key] for key in npz.files}
    meta = json.loads((GOLDEN / "mpnet_tiny.meta.json").read_text(encoding="utf-8"))
    return Golden(texts, arrays, meta)


@functools.cache
def _encoder(max_length: int, stride: int, sha256: str) -> tuple[MpnetEncoder, Any]:
    encoder = MpnetEncoder(
        Config(weights=WEIGHTS, max_length=max_length, stride=stride, sha256=sha256)
    )
    return encoder, encoder.load()


def _examples(encoder: MpnetEncoder, texts: Sequence[str]) -> list[Example]:
    return [
        example
        for index, text in enumerate(texts)
        for example in encoder.prepare(Document(id=str(index), text=text))
    ]


def _embed(
    encoder: MpnetEncoder, params: Any, examples: Sequence[Example], attention: AttentionFn
) -> npt.NDArray[np.float32]:
    """Padded batches of eight consecutive windows, as the bert goldens are run."""
    apply = jax.jit(functools.partial(encoder.apply, attention=attention))
    return embed_padded(encoder, apply, params, examples, shortest=32)


def _embed_packed(
    encoder: MpnetEncoder, params: Any, examples: Sequence[Example], attention: AttentionFn
) -> npt.NDArray[np.float32]:
    """Windows packed first-fit into rows of the longest window's bucket, as the host packs."""
    length = encoder.max_length
    apply = jax.jit(functools.partial(encoder.apply, attention=attention))
    outputs: list[npt.NDArray[np.float32]] = []
    start = 0
    while start < len(examples):
        rows: list[int] = []
        used = [0] * BATCH
        count = [0] * BATCH
        while start + len(rows) < len(examples):
            example = examples[start + len(rows)]
            fits = [
                r
                for r in range(BATCH)
                if used[r] + example.length <= length and count[r] < encoder.packing(length)
            ]
            if not fits:
                break
            used[fits[0]] += example.length
            count[fits[0]] += 1
            rows.append(fits[0])
        group = examples[start : start + len(rows)]
        batch = encoder.collate(group, BATCH, length, rows)
        outputs.append(np.asarray(apply(params, batch.arrays))[list(batch.example_rows)])
        start += len(rows)
    return np.concatenate(outputs).astype(np.float32)


@pytest.mark.parametrize("config", CONFIGS, ids=[f"L{m}_S{s}" for m, s in CONFIGS])
def test_same_windows_spans_and_tokens(golden: Golden, config: tuple[int, int]) -> None:
    encoder, _ = _encoder(*config, golden.meta["model_safetensors_sha256"])
    examples = _examples(encoder, golden.texts)
    np.testing.assert_array_equal(
        [int(e.doc_id) for e in examples], golden.of(config, "text_index")
    )
    np.testing.assert_array_equal([e.index for e in examples], golden.of(config, "window"))
    spans = np.array([e.span for e in examples], np.int32).reshape(-1, 2)
    np.testing.assert_array_equal(spans, golden.of(config, "span"))
    np.testing.assert_array_equal([e.length for e in examples], golden.of(config, "num_tokens"))
    ids = np.concatenate([e.features["input_ids"] for e in examples])
    np.testing.assert_array_equal(ids, golden.of(config, "input_ids_flat"))


@pytest.mark.parametrize("attention", list(ATTENTIONS))
@pytest.mark.parametrize("config", CONFIGS, ids=[f"L{m}_S{s}" for m, s in CONFIGS])
def test_same_embeddings(golden: Golden, config: tuple[int, int], attention: str) -> None:
    encoder, params = _encoder(*config, golden.meta["model_safetensors_sha256"])
    examples = _examples(encoder, golden.texts)
    got = _embed(encoder, params, examples, ATTENTIONS[attention]())
    diff = float(np.max(np.abs(got - golden.of(config, "embedding"))))
    print(f"L{config[0]}_S{config[1]} {attention}: max abs diff vs golden = {diff:.3e}")
    assert diff <= ATOL, f"{attention}: max abs diff {diff:.3e} > {ATOL}"


@pytest.mark.parametrize("attention", list(ATTENTIONS))
def test_packed_rows_give_the_golden_embeddings(golden: Golden, attention: str) -> None:
    """Short windows packed several to a row: each still gets its vector alone (L32_S8)."""
    config = (32, 8)
    encoder, params = _encoder(*config, golden.meta["model_safetensors_sha256"])
    examples = _examples(encoder, golden.texts)[:120]
    got = _embed_packed(encoder, params, examples, ATTENTIONS[attention]())
    diff = float(np.max(np.abs(got - golden.of(config, "embedding")[:120])))
    assert diff <= ATOL, f"{attention}, packed: max abs diff {diff:.3e} > {ATOL}"


def test_a_kernel_that_drops_the_bias_misses_the_goldens(golden: Golden) -> None:
    """The goldens see the bias: without it the embeddings are far off (this suite can fail)."""
    config = (256, 64)
    encoder, params = _encoder(*config, golden.meta["model_safetensors_sha256"])
    examples = _examples(encoder, golden.texts)[:16]

    def blind(q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
        kwargs.pop("bias", None)
        return dense_attention(q, k, v, **kwargs)

    got = _embed(encoder, params, examples, blind)
    assert float(np.max(np.abs(got - golden.of(config, "embedding")[:16]))) > 1e-2


def test_the_contracts_buckets_are_transformers_own(golden: Golden) -> None:
    """transformers' MPNet bucket of every distance -300..300 (clipped at 128 by the contract)."""
    reference = golden.arrays["relative_position_buckets"]
    distances = np.arange(-300, 301)
    ours = relative_position_buckets(32, 128)[np.clip(distances, -128, 128) + 128]
    np.testing.assert_array_equal(ours, reference)
