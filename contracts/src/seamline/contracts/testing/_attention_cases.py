"""Attention cases: shapes, dtypes, head layouts and masks, and their random inputs.

Public through ``seamline.contracts.testing`` so that a kernel's own tests (first-
or third-party) build the same cases and inputs the conformance suite checks,
instead of copying them.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import strategies as st

from seamline.contracts.attention import RELATIVE, AttentionSpec, RelativeBias, SegmentIds

ABSENT_SEGMENT = 7
"""A query segment id that no key has: those queries have nothing to attend to."""

BIAS_BUCKETS = 32
"""Buckets of the suite's relative bias table (T5's and MPNet's number)."""
BIAS_REACH = 24
"""Its ``max_distance``: below the suite's lengths, so that clipping is exercised too."""


@dataclass(frozen=True)
class AttentionCase:
    """One attention call: shapes, dtype and mask kind, and the seed of its inputs.

    ``spec()`` is what ``supports()`` is asked; :func:`attention_inputs` builds the
    arrays. Vary a case with ``dataclasses.replace``.
    """

    batch: int = 1
    q_len: int = 64
    kv_len: int = 64
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 64
    dtype: str = "float32"
    causal: bool = False
    segmented: bool = False
    biased: bool = False
    """With a relative-position bias (attention contract 1.2): see :func:`attention_bias`."""
    seed: int = 0
    scale: float | None = None
    """The ``scale`` the caller passes; None leaves it out (the contract's ``1/sqrt(H)``).
    Not part of ``spec()``: every implementation must honour any scale it is given."""
    documents: int = 2
    """With segment ids: the most packed documents a row holds (ids counted from a first
    that differs from row to row when more than 2), cut at random places."""

    def spec(self, platform: str | None = None, device_kind: str | None = None) -> AttentionSpec:
        """The case as ``supports()`` sees it: on this machine's device unless told otherwise.

        Pass ``platform`` and ``device_kind`` to ask about hardware that is not here
        (``case.spec("tpu", "TPU v5 lite")``).
        """
        if platform is None:
            platform = jax.default_backend()
        if device_kind is None:
            device_kind = str(jax.devices()[0].device_kind)
        return AttentionSpec(
            self.batch,
            self.q_len,
            self.kv_len,
            self.heads,
            self.kv_heads,
            self.head_dim,
            self.dtype,
            self.causal,
            self.segmented,
            platform,
            device_kind,
            RELATIVE if self.biased else None,
        )

    def describe(self) -> str:
        """The case in words, naming the features it exercises (what a failure is about)."""
        features = []
        if self.kv_heads != self.heads:
            features.append(f"grouped queries {self.heads}/{self.kv_heads}")
        if self.causal:
            features.append("causal")
        if self.segmented:
            features.append(
                "segment ids" if self.documents == 2 else f"up to {self.documents} documents a row"
            )
        if self.biased:
            features.append("relative bias")
        if self.q_len != self.kv_len:
            features.append("Tq != Tk")
        if self.scale is not None:
            features.append(f"scale={self.scale}")
        layout = (
            f"B={self.batch} Tq={self.q_len} Tk={self.kv_len} N={self.heads} "
            f"K={self.kv_heads} H={self.head_dim} {self.dtype}"
        )
        return f"{layout} [{', '.join(features) or 'no mask'}]"


#: Every feature of the contract on its own and in the combinations kernels get wrong,
#: by name: the suite's fixed cases.
ATTENTION_CASES: dict[str, AttentionCase] = {
    "plain-f32": AttentionCase(),
    "plain-bf16": AttentionCase(dtype="bfloat16"),
    "batch-2-odd-length": AttentionCase(batch=2, q_len=33, kv_len=33),
    "grouped-queries": AttentionCase(heads=4, kv_heads=2),
    "multi-query": AttentionCase(heads=4, kv_heads=1),
    "causal": AttentionCase(causal=True),
    "segment-ids": AttentionCase(batch=2, segmented=True),
    "causal-segment-ids": AttentionCase(batch=2, causal=True, segmented=True),
    "cross-lengths": AttentionCase(q_len=32, kv_len=96),
    "cross-segment-ids": AttentionCase(batch=2, q_len=32, kv_len=96, segmented=True),
    "head-dim-128": AttentionCase(head_dim=128, heads=2, kv_heads=2),
    "bf16-grouped-causal-segments": AttentionCase(
        batch=2, heads=4, kv_heads=2, dtype="bfloat16", causal=True, segmented=True
    ),
    "relative-bias": AttentionCase(biased=True),
    "relative-bias-segments": AttentionCase(batch=2, segmented=True, biased=True),
    "relative-bias-grouped-causal": AttentionCase(heads=4, kv_heads=2, causal=True, biased=True),
    "relative-bias-cross-segments": AttentionCase(
        batch=2, q_len=32, kv_len=96, segmented=True, biased=True
    ),
    "relative-bias-bf16-odd-length": AttentionCase(
        batch=2, q_len=45, kv_len=45, dtype="bfloat16", segmented=True, biased=True
    ),
    # The caller's scale, not the default 1/sqrt(H) = 0.125: a kernel that ignores it fails.
    "scale-1": AttentionCase(head_dim=32, scale=1.0),
    "scale-0.3-causal-segments": AttentionCase(batch=2, causal=True, segmented=True, scale=0.3),
    # Past the small shapes: more than two rows, keys beyond 128, an uneven length, padding.
    "batch-3-long-padded": AttentionCase(
        batch=3, q_len=300, kv_len=300, heads=2, kv_heads=2, segmented=True
    ),
    # As a run packs them: five rows, each its own layout of many short documents. Kernels
    # that read row 0's segment ids for every row, kept only the first 8 documents of a
    # row apart, or gave rows past the fourth another row's keys passed every case above.
    "batch-5-many-documents": AttentionCase(
        batch=5,
        q_len=96,
        kv_len=96,
        heads=2,
        kv_heads=2,
        head_dim=32,
        segmented=True,
        documents=14,
    ),
}


@st.composite
def random_attention_cases(draw: st.DrawFn) -> AttentionCase:
    """A hypothesis strategy of random cases (bounded sizes: interpreted kernels are slow)."""
    kv_heads = draw(st.sampled_from([1, 2, 4]))
    causal = draw(st.booleans())
    q_len = draw(st.sampled_from([8, 16, 24, 40, 64, 128]))
    kv_len = draw(st.sampled_from([q_len, q_len, 16, 48, 128]))
    return AttentionCase(
        batch=draw(st.integers(1, 2)),
        q_len=q_len,
        kv_len=kv_len,
        heads=kv_heads * draw(st.sampled_from([1, 2])),
        kv_heads=kv_heads,
        head_dim=draw(st.sampled_from([32, 64, 128])),
        dtype=draw(st.sampled_from(["float32", "bfloat16"])),
        causal=causal,
        segmented=draw(st.booleans()),
        biased=draw(st.booleans()),
        seed=draw(st.integers(0, 2**16)),
    )


def _segment_rows(
    rng: np.random.Generator, batch: int, length: int, documents: int = 2
) -> np.ndarray:
    """Per row: two packed segments (1, 2) and trailing padding (0), cut at random places;
    or, for more ``documents``, :func:`_many_documents`."""
    if documents > 2:
        return _many_documents(rng, batch, length, documents)
    rows = []
    for _ in range(batch):
        end = int(rng.integers(max(1, length // 2), length + 1))
        split = int(rng.integers(1, end + 1))
        row = np.zeros(length, np.int32)
        row[:split] = 1
        row[split:end] = 2
        rows.append(row)
    return np.stack(rows)


def _many_documents(
    rng: np.random.Generator, batch: int, length: int, documents: int
) -> np.ndarray:
    """Per row: up to ``documents`` packed segments at random cuts, then padding (0); row
    ``r``'s ids count from ``3r + 1`` (rows told apart by their ids, as by their cuts)."""
    rows = np.zeros((batch, length), np.int32)
    for row in range(batch):
        end = int(rng.integers(max(1, length // 2), length + 1))
        count = min(documents, end)
        cuts = np.sort(rng.choice(np.arange(1, end), size=count - 1, replace=False))
        for number, (start, stop) in enumerate(itertools.pairwise([0, *cuts.tolist(), end])):
            rows[row, start:stop] = 3 * row + 1 + number
    return rows


def _segment_ids(case: AttentionCase) -> SegmentIds | None:
    """Packed segments and padding for a segmented case (one array when ``Tq == Tk``)."""
    if not case.segmented:
        return None
    rng = np.random.default_rng(case.seed + 1)
    if case.q_len == case.kv_len:
        same = _segment_rows(rng, case.batch, case.q_len, case.documents)
        return SegmentIds(jnp.asarray(same), jnp.asarray(same))
    q_ids = _segment_rows(rng, case.batch, case.q_len, case.documents)
    kv_ids = _segment_rows(rng, case.batch, case.kv_len, case.documents)
    return SegmentIds(jnp.asarray(q_ids), jnp.asarray(kv_ids))


def _positions(ids: np.ndarray | None, batch: int, length: int, start: int) -> np.ndarray:
    """Per row: positions counting from ``start`` and, with segment ids, restarting per run."""
    positions = np.tile(np.arange(start, start + length, dtype=np.int32), (batch, 1))
    if ids is None:
        return positions
    for row in range(batch):
        first = 0
        for j in range(1, length + 1):
            if j == length or ids[row, j] != ids[row, j - 1]:
                positions[row, first:j] = np.arange(start, start + j - first)
                first = j
    return positions


def attention_bias(case: AttentionCase) -> RelativeBias | None:
    """The case's relative-position bias (None unless ``case.biased``), the same every time.

    A T5/MPNet-style table (:data:`BIAS_BUCKETS` buckets, ``max_distance``
    :data:`BIAS_REACH`) of standard-normal values, so the bias moves the softmax as
    much as the logits do. Positions start at 2 (as MPNet's) and restart with every
    run of equal segment ids, as a packed row's do; queries shorter than the keys are
    aligned to their end, as causal masking aligns them.
    """
    if not case.biased:
        return None
    rng = np.random.default_rng(case.seed + 2)
    table = jnp.asarray(rng.standard_normal((BIAS_BUCKETS, case.heads)), jnp.float32)
    ids = _segment_ids(case)
    q_ids = None if ids is None else np.asarray(ids.q)
    kv_ids = None if ids is None else np.asarray(ids.kv)
    q_start = 2 + (0 if ids is not None else case.kv_len - case.q_len)
    q_positions = _positions(q_ids, case.batch, case.q_len, q_start)
    kv_positions = _positions(kv_ids, case.batch, case.kv_len, 2)
    return RelativeBias.bucketed(
        table, jnp.asarray(q_positions), jnp.asarray(kv_positions), max_distance=BIAS_REACH
    )


def attention_inputs(
    case: AttentionCase,
) -> tuple[jax.Array, jax.Array, jax.Array, SegmentIds | None]:
    """Standard-normal q, k, v in the case's dtype (logits of unit scale), and segment ids.

    The same case gives the same arrays (its ``seed``). Segmented cases get per row
    two packed segments (ids 1 and 2) then padding (id 0), cut at random places;
    with ``Tq == Tk`` queries and keys share one id array, as a padded batch has.
    """
    rng = np.random.default_rng(case.seed)
    q = rng.standard_normal((case.batch, case.q_len, case.heads, case.head_dim))
    k = rng.standard_normal((case.batch, case.kv_len, case.kv_heads, case.head_dim))
    v = rng.standard_normal((case.batch, case.kv_len, case.kv_heads, case.head_dim))
    dtype = jnp.dtype(case.dtype)
    return (
        jnp.asarray(q, dtype),
        jnp.asarray(k, dtype),
        jnp.asarray(v, dtype),
        _segment_ids(case),
    )
