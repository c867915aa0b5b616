"""The order ``auto`` tries attention implementations in: one function, one table.

Each implementation ranks itself per shape with ``priority(spec)`` (higher first;
ties by name), so a third-party kernel decides where it belongs without seamline
naming it. :func:`auto_order` is the only place that turns priorities into an
order; the planner and ``explain`` both call it.

Because the order is spread over every kernel's ``priority()``, a reader needs it
in one place: :func:`auto_order_table` renders it for a set of representative
shapes per platform (:data:`REPRESENTATIVE_SHAPES`). ``seamline components
--auto-order`` prints that table for what is installed, ``docs/attention.md``
embeds it, and a test fails when the page and the live priorities disagree.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from seamline.contracts import Attention, AttentionSpec, Support
from seamline.core.attention.asking import asked

UNRANKED = -(10**9)
"""Where a candidate whose ``priority()`` raises goes: last, rather than taking the run down."""


def priority_of(candidate: Attention[Any], spec: AttentionSpec) -> int:
    """``candidate.priority(spec)``, or :data:`UNRANKED` if it raises."""
    try:
        return int(candidate.priority(spec))
    except Exception:
        return UNRANKED


def auto_order(candidates: Sequence[Attention[Any]], spec: AttentionSpec) -> list[Attention[Any]]:
    """``candidates`` in the order ``auto`` tries them for ``spec``: priority, then name."""
    return sorted(candidates, key=lambda c: (-priority_of(c, spec), c.name))


@dataclass(frozen=True, slots=True)
class Shape:
    """A representative shape for the auto-order table."""

    label: str
    spec: AttentionSpec


def _spec(
    platform: str, device_kind: str, length: int, dtype: str, queries: int | None = None
) -> AttentionSpec:
    """Self-attention with padding segments; or, with ``queries``, causal decoding."""
    return AttentionSpec(
        batch=8,
        q_len=length if queries is None else queries,
        kv_len=length,
        num_heads=12,
        num_kv_heads=12,
        head_dim=64,
        dtype=dtype,
        causal=queries is not None,
        segmented=queries is None,
        platform=platform,
        device_kind=device_kind,
    )


REPRESENTATIVE_SHAPES: tuple[Shape, ...] = (
    Shape("CPU, 256 tokens, float32", _spec("cpu", "cpu", 256, "float32")),
    Shape("CPU, 8192 tokens, float32", _spec("cpu", "cpu", 8192, "float32")),
    Shape("GPU (H200), 256 tokens, float32", _spec("gpu", "NVIDIA H200", 256, "float32")),
    Shape("GPU (H100), 2048 tokens, bfloat16", _spec("gpu", "NVIDIA H100", 2048, "bfloat16")),
    Shape("GPU (H100), 2048 tokens, float32", _spec("gpu", "NVIDIA H100", 2048, "float32")),
    Shape("TPU v5e, 2048 tokens, bfloat16", _spec("tpu", "TPU v5 lite", 2048, "bfloat16")),
    Shape(
        "TPU v5e, causal decoding: 16 queries, 4096 keys, bfloat16",
        _spec("tpu", "TPU v5 lite", 4096, "bfloat16", queries=16),
    ),
    Shape(
        "GPU (H100), causal decoding: 16 queries, 4096 keys, bfloat16",
        _spec("gpu", "NVIDIA H100", 4096, "bfloat16", queries=16),
    ),
)
"""12 heads of 64, batch 8; self-attention with padding segments unless decoding."""


def auto_order_table(candidates: Sequence[Attention[Any]]) -> str:
    """A Markdown table: per representative shape, the candidates in ``auto`` order.

    Each cell is ``name (priority)``; a candidate whose ``supports()`` refuses the
    shape is struck through, since ``auto`` passes over it there.
    """
    lines = ["| shape | order `auto` tries (priority; ~~refuses~~) |", "|---|---|"]
    for shape in REPRESENTATIVE_SHAPES:
        cells = []
        for candidate in auto_order(candidates, shape.spec):
            cell = f"{candidate.name} ({priority_of(candidate, shape.spec)})"
            try:  # a supports() that blocks is refused after a time limit, not waited for
                answer = asked(candidate, shape.spec)
                serves = isinstance(answer, Support) and answer.ok
            except Exception:
                serves = False
            cells.append(cell if serves else f"~~{cell}~~")
        lines.append(f"| {shape.label} | {', '.join(cells)} |")
    return "\n".join(lines) + "\n"
