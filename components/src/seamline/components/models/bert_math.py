"""The BERT encoder's forward pass as pure JAX functions of ``(params, arrays)``.

This module knows nothing about files, tokenizers or components: it is the
mathematics alone, so that it can be read against the paper and the reference
implementation line by line. The attention is a parameter (:class:`AttentionFn`),
never a kernel imported here; that is the seam through which seamline swaps kernels.

Precision: every matmul takes its operands in the compute dtype and accumulates in
float32; layer norms, residual sums, GELU, pooling and normalisation run in
float32. With a float32 compute dtype the matmuls ask for full (``HIGHEST``)
precision, because accelerators may otherwise use reduced-precision (TF32-like)
passes that would break agreement with the reference to 1e-5.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, TypedDict

import jax
import jax.numpy as jnp

from seamline.contracts import AttentionFn
from seamline.contracts.attention import SegmentIds

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
        return jnp.dtype(self.dtype)

    @property
    def precision(self) -> jax.lax.Precision:
        full = self.compute_dtype == jnp.float32
        return jax.lax.Precision.HIGHEST if full else jax.lax.Precision.DEFAULT


def encode(
    params: BertParams,
    input_ids: jax.Array,
    token_type_ids: jax.Array,
    segment: jax.Array,
    attention: AttentionFn,
    arch: Architecture,
    readout: Readout,
) -> jax.Array:
    """Token ids ``[B, T]`` to one float32 vector per row ``[B, hidden]``.

    ``segment`` is 1 on real tokens and 0 on padding. It is handed to the attention
    as segment ids, so real tokens never see padding; padding positions attend among
    themselves (finite values nobody reads) and pooling leaves them out.
    """
    if input_ids.shape[1] > arch.max_positions:
        raise ValueError(
            f"sequence length {input_ids.shape[1]} exceeds the {arch.max_positions} positions "
            "this checkpoint has embeddings for"
        )
    with jax.named_scope("embeddings"):
        hidden = embed(params["embeddings"], input_ids, token_type_ids, arch.layer_norm_eps)
    segment_ids = SegmentIds(q=segment, kv=segment)
    for index, layer in enumerate(params["layers"]):
        with jax.named_scope(f"layer_{index}"):
            hidden = encoder_layer(layer, hidden, segment_ids, attention, arch, readout)
    with jax.named_scope("pooling"):
        pooled = pool(hidden, segment, readout.pooling)
        return l2_normalize(pooled) if readout.normalize else pooled


def embed(
    params: EmbeddingParams, input_ids: jax.Array, token_type_ids: jax.Array, eps: float
) -> jax.Array:
    """Sum of token, position and token-type embeddings, layer-normed; positions restart at 0."""
    length = input_ids.shape[1]
    word = jnp.take(jnp.asarray(params["word"], jnp.float32), input_ids, axis=0)
    kind = jnp.take(jnp.asarray(params["token_type"], jnp.float32), token_type_ids, axis=0)
    position = jnp.asarray(params["position"], jnp.float32)[:length][None]
    return layer_norm(word + kind + position, params["norm"], eps)


def encoder_layer(
    params: LayerParams,
    hidden: jax.Array,
    segment_ids: SegmentIds,
    attention: AttentionFn,
    arch: Architecture,
    readout: Readout,
) -> jax.Array:
    """Post-norm transformer layer: self-attention, add & norm, feed-forward, add & norm."""
    with jax.named_scope("attention"):
        context = self_attention(params, hidden, segment_ids, attention, arch, readout)
        attended = dense(params["attention_out"], context, readout)
        hidden = layer_norm(attended + hidden, params["attention_norm"], arch.layer_norm_eps)
    with jax.named_scope("feed_forward"):
        inner = activate(dense(params["intermediate"], hidden, readout), arch.activation)
        out = dense(params["output"], inner, readout)
        return layer_norm(out + hidden, params["output_norm"], arch.layer_norm_eps)


def self_attention(
    params: LayerParams,
    hidden: jax.Array,
    segment_ids: SegmentIds,
    attention: AttentionFn,
    arch: Architecture,
    readout: Readout,
) -> jax.Array:
    """Project to heads ``[B, T, N, H]``, call the injected attention, merge heads back."""
    batch, length, _ = hidden.shape
    heads = (batch, length, arch.num_heads, arch.head_dim)

    def project(part: DenseParams) -> jax.Array:
        return dense(part, hidden, readout).reshape(heads).astype(readout.compute_dtype)

    q, k, v = project(params["query"]), project(params["key"]), project(params["value"])
    context = attention(q, k, v, segment_ids=segment_ids, causal=False)
    return context.reshape(batch, length, arch.hidden_size)


def dense(params: DenseParams, x: jax.Array, readout: Readout) -> jax.Array:
    """``x @ kernel + bias`` with operands in the compute dtype and a float32 result."""
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
    x = x.astype(jnp.float32)
    mean = jnp.mean(x, axis=-1, keepdims=True)
    centred = x - mean
    variance = jnp.mean(jnp.square(centred), axis=-1, keepdims=True)
    normed = centred * jax.lax.rsqrt(variance + jnp.float32(eps))
    scale = jnp.asarray(params["scale"], jnp.float32)
    return normed * scale + jnp.asarray(params["bias"], jnp.float32)


def activate(x: jax.Array, activation: Activation) -> jax.Array:
    """The feed-forward nonlinearity; Hugging Face's "gelu" is the exact, erf-based one."""
    if activation == "gelu":
        return jax.nn.gelu(x, approximate=False)
    if activation == "gelu_tanh":
        return jax.nn.gelu(x, approximate=True)
    return jax.nn.relu(x)


def pool(hidden: jax.Array, segment: jax.Array, pooling: Pooling) -> jax.Array:
    """One vector per row from the token states, ignoring padding (``segment == 0``)."""
    if pooling == "cls":
        return hidden[:, 0]
    real = (segment == 1)[..., None]
    if pooling == "max":
        # As sentence-transformers: padding is pushed far down rather than to -inf.
        return jnp.max(jnp.where(real, hidden, jnp.float32(-1e9)), axis=1)
    total = jnp.sum(jnp.where(real, hidden, 0.0), axis=1)
    count = jnp.sum(real.astype(jnp.float32), axis=1)
    # The 1e-9 floor (as in sentence-transformers) keeps all-padding rows finite.
    return total / jnp.maximum(count, jnp.float32(1e-9))


def l2_normalize(x: jax.Array) -> jax.Array:
    """``x / max(||x||, 1e-12)`` per row, as torch's ``F.normalize`` (so zero rows stay zero)."""
    norm = jnp.sqrt(jnp.sum(jnp.square(x), axis=-1, keepdims=True))
    return x / jnp.maximum(norm, jnp.float32(1e-12))
