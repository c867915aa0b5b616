"""The BERT encoder's forward pass as pure JAX functions of ``(params, arrays)``.

This module knows nothing about files, tokenizers or components: it is the
mathematics alone, so that it can be read against the paper and the reference
implementation line by line. The attention is a parameter (:class:`AttentionFn`),
never a kernel imported here; that is the seam through which seamline swaps kernels.

Precision: every matmul takes its operands in the compute dtype and accumulates in
float32; layer norms, residual sums, GELU, pooling and normalisation run in
float32. With a float32 compute dtype the matmuls ask for full (``HIGHEST``)
precision, because accelerators may otherwise use reduced-precision (TF32-like)
passes that would break agreement with the reference to 1e-5. With a bfloat16
compute dtype the exact GELU is computed by the cheaper of two float32 formulas
(:func:`activate`), since its result is rounded to bfloat16 next.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from seamline.contracts import AttentionFn
from seamline.contracts.attention import RelativeBias, SegmentIds

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    import jax
    import jax.numpy as jnp

Pooling = Literal["mean", "cls", "max"]
Activation = Literal["gelu", "gelu_tanh", "relu"]

Leaf = Any
"""A numpy or JAX array: parameters may live on the host or on a device."""


class DenseParams(TypedDict):
    """A linear layer ``y = x @ kernel + bias``; ``kernel`` is ``[in, out]``."""

    kernel: Leaf
    bias: Leaf


class NormParams(TypedDict):
    """A layer norm's gain and offset."""

    scale: Leaf
    bias: Leaf


class EmbeddingParams(TypedDict):
    """Token, position and token-type tables ``[rows, hidden]`` and the norm after their sum."""

    word: Leaf
    position: Leaf
    token_type: Leaf
    norm: NormParams


class LayerParams(TypedDict):
    """One transformer layer, named after what each part does."""

    query: DenseParams
    key: DenseParams
    value: DenseParams
    attention_out: DenseParams
    attention_norm: NormParams
    intermediate: DenseParams
    output: DenseParams
    output_norm: NormParams


class BertParams(TypedDict):
    """The whole encoder: a plain nested dict, so it is a JAX pytree as it stands."""

    embeddings: EmbeddingParams
    layers: list[LayerParams]


@dataclass(frozen=True, slots=True)
class Architecture:
    """The static shape of the network, as the checkpoint's ``config.json`` gives it."""

    vocab_size: int
    hidden_size: int
    num_layers: int
    num_heads: int
    intermediate_size: int
    max_positions: int
    type_vocab_size: int
    layer_norm_eps: float
    activation: Activation

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads


@dataclass(frozen=True, slots=True)
class Readout:
    """How token states become one vector, and in which dtype the matmuls run."""

    pooling: Pooling
    normalize: bool
    dtype: Literal["float32", "bfloat16"]

    @property
    def compute_dtype(self) -> jnp.dtype[Any]:
        import jax.numpy as jnp

        return jnp.dtype(self.dtype)

    @property
    def precision(self) -> jax.lax.Precision:
        import jax
        import jax.numpy as jnp

        full = self.compute_dtype == jnp.float32
        return jax.lax.Precision.HIGHEST if full else jax.lax.Precision.DEFAULT


def encode(
    params: BertParams,
    input_ids: jax.Array,
    token_type_ids: jax.Array,
    segment: jax.Array,
    positions: jax.Array,
    attention: AttentionFn,
    arch: Architecture,
    readout: Readout,
    slots: int,
) -> jax.Array:
    """Token ids ``[B, T]`` to one float32 vector per slot ``[B * slots, hidden]``.

    A row holds up to ``slots`` examples side by side (packing). ``segment`` numbers
    them 1, 2, ... along the row and is 0 on padding; ``positions`` restart at 0 for
    each. The segment ids go to the attention, so no token sees another example's
    tokens or the padding (padding attends among itself: finite values nobody
    reads), and pooling gathers each example's tokens into its slot: slot ``s`` of
    row ``b`` is output ``b * slots + s``, for segment ``s + 1``. An example alone in
    its row gives the same vector as packed, up to the order of a few sums.
    """
    import jax

    if input_ids.shape[1] > arch.max_positions:
        raise ValueError(
            f"sequence length {input_ids.shape[1]} exceeds the {arch.max_positions} positions "
            "this checkpoint has embeddings for"
        )
    with jax.named_scope("embeddings"):
        hidden = embed(
            params["embeddings"], input_ids, token_type_ids, positions, arch.layer_norm_eps
        )
    segment_ids = SegmentIds(q=segment, kv=segment)
    for index, layer in enumerate(params["layers"]):
        with jax.named_scope(f"layer_{index}"):
            hidden = encoder_layer(layer, hidden, segment_ids, attention, arch, readout)
    with jax.named_scope("pooling"):
        pooled = pool(hidden, segment, positions, readout.pooling, slots)
        pooled = pooled.reshape(-1, pooled.shape[-1])
        return l2_normalize(pooled) if readout.normalize else pooled


def embed(
    params: EmbeddingParams,
    input_ids: jax.Array,
    token_type_ids: jax.Array,
    positions: jax.Array,
    eps: float,
) -> jax.Array:
    """Sum of token, position and token-type embeddings, layer-normed.

    ``positions`` restart at 0 for every example of a packed row, so each sees the
    position embeddings it would see alone.
    """
    import jax.numpy as jnp

    word = jnp.take(jnp.asarray(params["word"], jnp.float32), input_ids, axis=0)
    kind = jnp.take(jnp.asarray(params["token_type"], jnp.float32), token_type_ids, axis=0)
    position = jnp.take(jnp.asarray(params["position"], jnp.float32), positions, axis=0)
    return layer_norm(word + kind + position, params["norm"], eps)


def encoder_layer(
    params: LayerParams,
    hidden: jax.Array,
    segment_ids: SegmentIds,
    attention: AttentionFn,
    arch: Architecture,
    readout: Readout,
    bias: RelativeBias | None = None,
) -> jax.Array:
    """Post-norm transformer layer: self-attention, add & norm, feed-forward, add & norm.

    ``bias`` is a score bias for the attention (MPNet's relative positions), or None.
    """
    import jax

    with jax.named_scope("attention"):
        context = self_attention(params, hidden, segment_ids, attention, arch, readout, bias)
        attended = dense(params["attention_out"], context, readout)
        hidden = layer_norm(attended + hidden, params["attention_norm"], arch.layer_norm_eps)
    with jax.named_scope("feed_forward"):
        inner = dense(params["intermediate"], hidden, readout)
        inner = activate(inner, arch.activation, rounded=readout.dtype != "float32")
        out = dense(params["output"], inner, readout)
        return layer_norm(out + hidden, params["output_norm"], arch.layer_norm_eps)


def self_attention(
    params: LayerParams,
    hidden: jax.Array,
    segment_ids: SegmentIds,
    attention: AttentionFn,
    arch: Architecture,
    readout: Readout,
    bias: RelativeBias | None = None,
) -> jax.Array:
    """Project to heads ``[B, T, N, H]``, call the injected attention, merge heads back.

    The bias keyword is passed only with a bias: an attention written before contract
    1.2 (BERT needs no bias) has none.
    """
    batch, length, _ = hidden.shape
    heads = (batch, length, arch.num_heads, arch.head_dim)

    def project(part: DenseParams) -> jax.Array:
        return dense(part, hidden, readout).reshape(heads).astype(readout.compute_dtype)

    q, k, v = project(params["query"]), project(params["key"]), project(params["value"])
    if bias is None:
        context = attention(q, k, v, segment_ids=segment_ids, causal=False)
    else:
        context = attention(q, k, v, segment_ids=segment_ids, causal=False, bias=bias)
    return context.reshape(batch, length, arch.hidden_size)


def dense(params: DenseParams, x: jax.Array, readout: Readout) -> jax.Array:
    """``x @ kernel + bias`` with operands in the compute dtype and a float32 result."""
    import jax.numpy as jnp

    dtype = readout.compute_dtype
    product = jnp.matmul(
        x.astype(dtype),
        jnp.asarray(params["kernel"]).astype(dtype),
        precision=readout.precision,
        preferred_element_type=jnp.float32,
    )
    return product + jnp.asarray(params["bias"], jnp.float32)


def layer_norm(x: jax.Array, params: NormParams, eps: float) -> jax.Array:
    """Normalise the last axis in float32 (biased variance, as torch's LayerNorm)."""
    import jax
    import jax.numpy as jnp

    x = x.astype(jnp.float32)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    variance = jnp.mean(jnp.square(centred), axis=-1, keepdims=True)
    normed = centred * jax.lax.rsqrt(variance + jnp.float32(eps))
    scale = jnp.asarray(params["scale"], jnp.float32)
    return normed * scale + jnp.asarray(params["bias"], jnp.float32)


def activate(x: jax.Array, activation: Activation, *, rounded: bool = False) -> jax.Array:
    """The feed-forward nonlinearity; Hugging Face's "gelu" is the exact, erf-based one.

    ``rounded``: the result goes to a matmul in a lower precision (bfloat16), which
    rounds it to 8 significant bits. The exact GELU is then computed as
    ``x/2 * (1 + erf(x/sqrt 2))`` (torch's formula), whose float32 error (about 1e-6 at
    most, from the cancellation in ``1 + erf`` for negative ``x``) that rounding hides:
    rounded, both formulas give the same value for all but about 1 in 25,000 of the
    activations of 0.01 or more, and values one bfloat16 step apart for the rest.
    Otherwise it is :func:`jax.nn.gelu`'s ``erfc`` form, accurate to about 4e-7 but,
    on a CPU, twice the time (two polynomials, an exponential and two divisions per
    value: 5 % of the bfloat16 step). ``benchmarks/model/gelu_cost.py`` measures the
    time and ``benchmarks/model/mixed_precision.py`` the accuracy of both.
    """
    import jax

    if activation == "gelu":
        if rounded:
            half = x * 0.5  # a Python float keeps x's float32
            return half + half * jax.lax.erf(x * 0.7071067811865476)
        return jax.nn.gelu(x, approximate=False)
    if activation == "gelu_tanh":
        return jax.nn.gelu(x, approximate=True)
    return jax.nn.relu(x)


def pool(
    hidden: jax.Array, segment: jax.Array, positions: jax.Array, pooling: Pooling, slots: int
) -> jax.Array:
    """``[B, slots, hidden]``: one vector per example of each row, padding left out.

    Slot ``s`` gathers the tokens of segment ``s + 1``. Mean and CLS pooling are a
    product with the ``[B, slots, T]`` membership matrix (a small matmul next to
    the encoder's, and exact: each weight is 0 or 1); max pooling reduces over
    each slot's tokens. An empty slot gives zeros (mean, cls) or -1e9 (max).
    """
    import jax
    import jax.numpy as jnp

    ids = jnp.arange(1, slots + 1, dtype=segment.dtype)
    member = segment[:, None, :] == ids[None, :, None]  # [B, slots, T]
    full = jax.lax.Precision.HIGHEST
    if pooling == "max":
        # As sentence-transformers: padding is pushed far down rather than to -inf.
        masked = jnp.where(member[..., None], hidden[:, None], jnp.float32(-1e9))
        return jnp.max(masked, axis=2)
    if pooling == "cls":
        first = (member & (positions == 0)[:, None, :]).astype(jnp.float32)
        return jnp.einsum("bst,bth->bsh", first, hidden, precision=full)
    weights = member.astype(jnp.float32)
    total = jnp.einsum("bst,bth->bsh", weights, hidden, precision=full)
    count = jnp.sum(weights, axis=2)[..., None]
    # The 1e-9 floor (as in sentence-transformers) keeps empty slots finite.
    return total / jnp.maximum(count, jnp.float32(1e-9))


def l2_normalize(x: jax.Array) -> jax.Array:
    """``x / max(||x||, 1e-12)`` per row, as torch's ``F.normalize`` (so zero rows stay zero)."""
    import jax.numpy as jnp

    norm = jnp.sqrt(jnp.sum(jnp.square(x), axis=-1, keepdims=True))
    return x / jnp.maximum(norm, jnp.float32(1e-12))
