"""The order ``auto`` tries attention implementations in: one function, one table.

Each implementation ranks itself per shape with ``priority(spec)`` (higher first;
ties by name), so a third-party kernel decides where it belongs without seamline
naming it. :func:`ranked` is the only place that turns priorities into an
order; the planner and ``explain`` both call it. A ``priority()`` that raises puts
its candidate last; one that does not answer in time (the limit ``supports()`` has,
:mod:`.asking`) gets it refused for that shape, with the reason and a warning.

Because the order is spread over every kernel's ``priority()``, a reader needs it
in one place: :func:`auto_order_table` renders it for a set of representative
shapes per platform (:data:`REPRESENTATIVE_SHAPES`). ``seamline components
--auto-order`` prints that table for what is installed, ``docs/attention.md``
embeds it, and a test fails when the page and the live priorities disagree.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from seamline.contracts import Attention, AttentionSpec, Support
from seamline.core.attention.asking import AskTimeout, asked

UNRANKED = -(10**9)
"""Where a candidate whose ``priority()`` raises goes: last, rather than taking the run down."""


@dataclass(frozen=True, slots=True)
class Ranked:
    """The order ``auto`` tries candidates in for one spec, and what each ``priority()`` said."""

    order: tuple[Attention[Any], ...]
    priorities: Mapping[str, int]
    """Name -> its priority (:data:`UNRANKED` when ``priority()`` raised or did not answer)."""
    unheard: Mapping[str, str]
    """Name -> why its ``priority()`` was given up on (it did not answer in time): that
    candidate is refused for the spec, with this reason, as a ``supports()`` that does not
    answer is."""


def ranked(candidates: Sequence[Attention[Any]], spec: AttentionSpec) -> Ranked:
    """``candidates`` in the order ``auto`` tries them for ``spec``: priority, then name.

    Each ``priority()`` is asked once, under the time limit ``supports()`` has
    (:func:`~.asking.asked`): one that blocked hung ``explain``, ``components
    --auto-order`` and every ``auto`` pipeline, though none named it.
    """
    priorities: dict[str, int] = {}
    unheard: dict[str, str] = {}
    for candidate in candidates:
        try:
            priorities[candidate.name] = int(cast(Any, asked(candidate, spec, "priority")))
        except AskTimeout as err:
            priorities[candidate.name] = UNRANKED
            unheard[candidate.name] = str(err)
        except Exception:
            priorities[candidate.name] = UNRANKED
    order = sorted(candidates, key=lambda c: (-priorities[c.name], c.name))
    return Ranked(tuple(order), priorities, unheard)


def auto_order(candidates: Sequence[Attention[Any]], spec: AttentionSpec) -> list[Attention[Any]]:
    """``candidates`` in the order ``auto`` tries them for ``spec``: priority, then name."""
    return list(ranked(candidates, spec).order)


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
    shape is struck through, since ``auto`` passes over it there, and so is one whose
    ``priority()`` did not answer in time, with that reason in place of its priority.
    """
    lines = ["| shape | order `auto` tries (priority; ~~refuses~~) |", "|---|---|"]
    for shape in REPRESENTATIVE_SHAPES:
        cells = []
        found = ranked(candidates, shape.spec)
        for candidate in found.order:
            unheard = found.unheard.get(candidate.name)
            if unheard is not None:  # refused, as a run refuses it
                cells.append(f"~~{candidate.name} ({unheard})~~")
                continue
            cell = f"{candidate.name} ({found.priorities[candidate.name]})"
            try:  # a supports() that blocks is refused after a time limit, not waited for
                answer = asked(candidate, shape.spec)
                serves = isinstance(answer, Support) and answer.ok
            except Exception:
                serves = False
            cells.append(cell if serves else f"~~{cell}~~")
        lines.append(f"| {shape.label} | {', '.join(cells)} |")
    return "\n".join(lines) + "\n"
