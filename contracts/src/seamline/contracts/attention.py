"""The attention seam: the one place a kernel can be swapped.

Layout: ``q`` is ``[B, Tq, N, H]``; ``k`` and ``v`` are ``[B, Tk, K, H]`` with ``N``
divisible by ``K`` (grouped queries: query head ``n`` reads key/value head
``n // (N // K)``). The result has the shape and dtype of ``q``.

Masking is expressed by segment ids alone: a query attends to a key only when
their segment ids are equal (and, with ``causal``, when the key is not after the
query, queries being aligned to the end of the keys: key ``j`` is visible to query
``i`` when ``j <= i + Tk - Tq``). Padding is a segment of its own; packed sequences
are several segments. A query with no key it may attend to yields a row of zeros,
never NaN.

A relative-position bias (since 1.2): ``bias`` is ``None`` or a :class:`RelativeBias`
``(values, q_positions, kv_positions)``, added to every score before the softmax::

    score[b, n, i, j] = scale * q[b, i, n] . k[b, j, n // G]
                        + values[clip(kv_positions[b, j] - q_positions[b, i], -D, D) + D, n]

with ``values`` ``[2D + 1, N]`` (one row per relative distance ``-D .. D``, one column
per *query* head, in any float dtype; it is added in float32), ``q_positions``
``[B, Tq]`` and ``kv_positions`` ``[B, Tk]`` integers, and ``D = (values.shape[0] - 1)
// 2`` (static: a shape). Distances beyond ``D`` take the value of ``±D``, so a
bucketed bias whose buckets stop changing at ``D`` (T5's and MPNet's at
``max_distance``) is expressed exactly. Only differences of positions matter, and
they are the caller's to give per token: within one contiguous segment of a packed
row, positions restarting per segment and plain row indices give the same
distances, but where queries and keys are not aligned index for index (a cached
prefix, cross-attention, left padding) only the positions say what a distance is.
The bias never unmasks a pair: masked pairs stay masked. Kernels compute
it on the fly from ``values`` (a few kilobytes), never as a ``[B, N, Tq, Tk]``
tensor. :meth:`RelativeBias.bucketed` builds one from a T5/MPNet bucket table
``[num_buckets, N]`` (:func:`relative_position_buckets`).

A kernel says which biases it computes in ``score_biases`` (``("relative",)``); the
spec names the bias a call has (``AttentionSpec.bias``), and a spec with a bias
the kernel does not declare is refused with a reason before its own ``supports()``
runs, so every kernel written before 1.2 refuses biased calls by itself.
"""

from __future__ import annotations

import abc
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Final, NamedTuple, Protocol, TypeVar

import numpy as np
import numpy.typing as npt

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.versions import Kind

if TYPE_CHECKING:  # annotations only: importing the contract does not import JAX
    import jax


class SegmentIds(NamedTuple):
    """Integer segment ids of the queries ``[B, Tq]`` and of the keys ``[B, Tk]``."""

    q: jax.Array
    kv: jax.Array


#: The biases a spec may name (``AttentionSpec.bias``): the relative-position bias alone.
RELATIVE: Final = "relative"
BIASES: Final[tuple[str, ...]] = (RELATIVE,)


class RelativeBias(NamedTuple):
    """A score bias that depends only on a (clipped) relative position and the head (1.2).

    ``values [2D + 1, N]``: the bias of relative distance ``d = kv_pos - q_pos`` for
    ``d`` in ``-D .. D`` (row ``d + D``), per query head; ``q_positions [B, Tq]`` and
    ``kv_positions [B, Tk]``: integer positions of every token (they restart per
    packed segment). See the module docstring for the exact formula.

    A NamedTuple of arrays, so it is a JAX pytree as it stands and crosses ``jit``
    boundaries like :class:`SegmentIds`, with everything static (``D``) in a shape.
    """

    values: jax.Array
    q_positions: jax.Array
    kv_positions: jax.Array

    @property
    def max_distance(self) -> int:
        """``D``: the largest relative distance with a value of its own."""
        return (int(self.values.shape[0]) - 1) // 2

    @classmethod
    def bucketed(
        cls,
        table: jax.Array,
        q_positions: jax.Array,
        kv_positions: jax.Array,
        *,
        max_distance: int = 128,
        bidirectional: bool = True,
    ) -> RelativeBias:
        """The bias of T5 and MPNet: ``table [num_buckets, N]`` over bucketed distances.

        ``values[d + D] = table[bucket(d)]`` with ``D = max_distance``, the bucket of
        every distance computed once on the host (:func:`relative_position_buckets`).
        """
        import jax.numpy as jnp

        buckets = relative_position_buckets(int(table.shape[0]), max_distance, bidirectional)
        return cls(jnp.take(table, jnp.asarray(buckets), axis=0), q_positions, kv_positions)


@functools.cache
def _buckets(num_buckets: int, max_distance: int, bidirectional: bool) -> tuple[int, ...]:
    distances = np.arange(-max_distance, max_distance + 1, dtype=np.int64)
    # T5's and MPNet's convention: n is the distance of the key *before* the query.
    n = -distances
    buckets = num_buckets
    result = np.zeros_like(n)
    if bidirectional:
        buckets //= 2
        result += (n < 0) * buckets
        n = np.abs(n)
    else:
        n = np.maximum(n, 0)
    exact = buckets // 2
    # In float32, as the reference implementations (transformers' T5 and MPNet) compute
    # it, so that a distance on a bucket boundary falls where theirs does.
    with np.errstate(divide="ignore"):
        ratio = np.log(n.astype(np.float32) / np.float32(exact))
    scaled = ratio / np.float32(math.log(max_distance / exact)) * np.float32(buckets - exact)
    large = exact + np.where(n < exact, 0, scaled).astype(np.int64)
    result += np.where(n < exact, n, np.minimum(large, buckets - 1))
    return tuple(int(b) for b in result)


def relative_position_buckets(
    num_buckets: int, max_distance: int, bidirectional: bool = True
) -> npt.NDArray[np.int32]:
    """``[2 * max_distance + 1]``: the T5/MPNet bucket of every distance ``-D .. D``.

    Half the buckets (all, when not ``bidirectional``) count exact distances up to
    half their number; the rest grow logarithmically up to ``max_distance``, beyond
    which every distance shares the last bucket, so clipping at ``D = max_distance``
    (as :class:`RelativeBias` does) loses nothing.
    """
    if num_buckets < 4 or max_distance < 1:
        raise ValueError(
            f"need num_buckets >= 4 and max_distance >= 1, not {num_buckets}, {max_distance}"
        )
    return np.asarray(_buckets(num_buckets, max_distance, bidirectional), dtype=np.int32)


@dataclass(frozen=True, slots=True)
class AttentionSpec:
    """Everything ``supports()`` may look at, known before any call."""

    batch: int
    q_len: int
    kv_len: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    dtype: str
    causal: bool
    segmented: bool
    platform: str
    device_kind: str
    bias: str | None = None
    """The score bias the call adds (since 1.2): ``"relative"`` (:class:`RelativeBias`) or None."""

    def signature(self) -> str:
        """A short, stable text naming the shape class, for logs, spans and caches."""
        mask = ("causal," if self.causal else "") + ("segments," if self.segmented else "")
        if self.bias is not None:
            mask += f"{self.bias}-bias,"
        return (
            f"B{self.batch}xTq{self.q_len}xTk{self.kv_len}xN{self.num_heads}"
            f"xK{self.num_kv_heads}xH{self.head_dim}:{self.dtype}:{mask}{self.platform}"
        )


@dataclass(frozen=True, slots=True)
class Support:
    """The answer to "can you serve this?", with the reasons when the answer is no."""

    ok: bool
    reasons: tuple[str, ...] = ()

    @classmethod
    def yes(cls) -> Support:
        return cls(True, ())

    @classmethod
    def no(cls, *reasons: str) -> Support:
        if not reasons:
            raise ValueError("a refusal must say why")
        return cls(False, tuple(reasons))

    def __bool__(self) -> bool:
        return self.ok


#: How far an implementation's output may be from the reference's and still count as
#: the same answer, by dtype (absolute, on outputs of unit scale). Loose enough for
#: reduced-precision matmul passes on accelerators, tight enough that a kernel with
#: the wrong semantics (ignoring a mask, say) is always caught.
TOLERANCES: dict[str, float] = {"float32": 2e-3, "bfloat16": 5e-2, "float16": 1e-2}

#: How long ``supports()`` or ``priority()`` may take to answer, in seconds: each answers
#: from shapes and names, in microseconds. The host asks each on a thread and gives up
#: after this long, refusing the shape (a run that pinned the implementation stops), and
#: the conformance suite fails a component that takes as long.
ASK_TIMEOUT_S: Final = 5.0


class AttentionFn(Protocol):
    """The callable a model receives at the seam (an :class:`Attention` or a wrapper of one)."""

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array: ...


AttentionConfigT = TypeVar("AttentionConfigT", bound=ComponentConfig)


class Attention(Component[AttentionConfigT], abc.ABC):
    """An attention implementation. ``__call__`` must be pure and jittable."""

    kind: ClassVar[Kind] = "attention"

    #: The implementation every other is verified against (since 1.1). seamline's
    #: ``native`` declares it; the planner uses the installed one that does.
    is_reference: ClassVar[bool] = False

    #: Where ``use: auto`` tries this implementation, higher first, unless
    #: :meth:`priority` says otherwise for a given shape.
    auto_priority: ClassVar[int] = 0

    #: The score biases ``__call__`` computes (since 1.2): ``("relative",)`` for
    #: :class:`RelativeBias`. A spec whose ``bias`` is not listed is refused before
    #: the implementation's own ``supports()`` is asked (see ``__init_subclass__``).
    score_biases: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Put the bias gate in front of every ``supports()`` a subclass defines.

        A kernel written before contract 1.2 has never heard of a bias: its
        ``supports()`` would say yes to a biased call and its ``__call__`` would
        drop the bias or fail on the keyword. Gating here, once, makes every such
        kernel refuse with a reason, whoever asks (the planner, ``explain``, the
        conformance suite, a user), without a line changed in it.
        """
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("supports")
        if own is not None and not getattr(own, "_bias_gated", False):
            setattr(cls, "supports", _bias_gated(own))  # noqa: B010 (mypy: method assignment)

    def priority(self, spec: AttentionSpec) -> int:
        """Rank for ``use: auto`` on this shape and platform, higher first (since 1.1).

        The default is ``auto_priority``. Override it to prefer yourself only where
        you are the better choice: for instance on one platform, or above some
        sequence length. Ties are broken by name. Answer within :data:`ASK_TIMEOUT_S`.
        """
        return self.auto_priority

    @abc.abstractmethod
    def supports(self, spec: AttentionSpec) -> Support:
        """Say, before any call, whether this implementation can serve ``spec`` and why not.

        Answer within :data:`ASK_TIMEOUT_S`, as :meth:`priority` must: probe a device or
        import a compiler when constructed, not here.
        """

    @abc.abstractmethod
    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        """Attend ``q`` to ``k``/``v``; ``scale`` defaults to ``1/sqrt(H)``.

        ``bias`` is passed only to an implementation whose ``score_biases`` has it
        (since 1.2): one that declares none may leave the keyword out.
        """


def bias_refusal(attention: Attention[Any], spec: AttentionSpec) -> Support | None:
    """The refusal of a spec whose bias ``attention`` does not declare, or None."""
    if spec.bias is None or spec.bias in type(attention).score_biases:
        return None
    if spec.bias not in BIASES:
        return Support.no(f"the score bias {spec.bias!r} is not one this contract defines")
    return Support.no(
        f"it does not add a {spec.bias}-position score bias, which this model's attention needs"
    )


_Supports = Callable[[Any, AttentionSpec], Support]


def _bias_gated(supports: _Supports) -> _Supports:
    @functools.wraps(supports)
    def gated(self: Attention[Any], spec: AttentionSpec) -> Support:
        refusal = bias_refusal(self, spec)
        if refusal is None:
            return supports(self, spec)
        answer = supports(self, spec)  # its other reasons too: explain shows them all
        return refusal if answer.ok else Support.no(*refusal.reasons, *answer.reasons)

    gated._bias_gated = True  # type: ignore[attr-defined]
    return gated
