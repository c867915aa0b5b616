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
"""

from __future__ import annotations

import abc
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar, NamedTuple, Protocol, TypeVar

from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.versions import Kind

if TYPE_CHECKING:  # annotations only: importing the contract does not import JAX
    import jax


class SegmentIds(NamedTuple):
    """Integer segment ids of the queries ``[B, Tq]`` and of the keys ``[B, Tk]``."""

    q: jax.Array
    kv: jax.Array


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

    def signature(self) -> str:
        """A short, stable text naming the shape class, for logs, spans and caches."""
        mask = ("causal," if self.causal else "") + ("segments," if self.segmented else "")
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

    def priority(self, spec: AttentionSpec) -> int:
        """Rank for ``use: auto`` on this shape and platform, higher first (since 1.1).

        The default is ``auto_priority``. Override it to prefer yourself only where
        you are the better choice: for instance on one platform, or above some
        sequence length. Ties are broken by name.
        """
        return self.auto_priority

    @abc.abstractmethod
    def supports(self, spec: AttentionSpec) -> Support:
        """Say, before any call, whether this implementation can serve ``spec`` and why not."""

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
    ) -> jax.Array:
        """Attend ``q`` to ``k``/``v``; ``scale`` defaults to ``1/sqrt(H)``."""
