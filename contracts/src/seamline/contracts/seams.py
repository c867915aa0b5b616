"""Cheap checks of what crosses each seam, meant to stay on in production.

The checks on arrays inside compiled code look only at shapes and dtypes, which
are static under ``jit``: they run once per trace and cost nothing per call.
Each failure names the component, because "shape mismatch somewhere in apply"
is exactly the kind of message that makes a welded-in kernel hard to own.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Integral
from typing import Any

import jax
import numpy as np
import numpy.typing as npt

from seamline.contracts.attention import RelativeBias
from seamline.contracts.documents import Document, DocumentError, Loaded
from seamline.contracts.errors import ContractViolation
from seamline.contracts.model import Batch, Example


def check_attention_inputs(name: str, q: jax.Array, k: jax.Array, v: jax.Array) -> None:
    """Refuse inputs outside the attention layout before the kernel sees them."""
    if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
        raise ContractViolation(
            f"attention {name!r} was called with q{tuple(q.shape)}, k{tuple(k.shape)}, "
            f"v{tuple(v.shape)}: the contract needs rank-4 [B, T, heads, head_dim] arrays"
        )
    if k.shape != v.shape:
        raise ContractViolation(
            f"attention {name!r}: k{tuple(k.shape)} and v{tuple(v.shape)} must have one shape"
        )
    batch, _, heads, head_dim = q.shape
    kv_batch, _, kv_heads, kv_head_dim = k.shape
    if batch != kv_batch or head_dim != kv_head_dim or heads % kv_heads:
        raise ContractViolation(
            f"attention {name!r}: q{tuple(q.shape)} and k{tuple(k.shape)} disagree "
            "(batch and head_dim must match, query heads must be a multiple of key heads)"
        )


def check_attention_bias(name: str, q: jax.Array, k: jax.Array, bias: RelativeBias) -> None:
    """A relative bias must fit the call: ``values [2D + 1, N]``, positions ``[B, Tq]``/``[B, Tk]``.

    Checked before the kernel runs, so a model that builds a wrong bias is told so,
    rather than a kernel blamed (or silently broadcasting) for it.
    """
    batch, q_len, heads, _ = q.shape
    kv_len = k.shape[1]
    rows = bias.values.shape[0] if bias.values.ndim == 2 else 0
    problems = []
    if bias.values.ndim != 2 or rows % 2 != 1 or bias.values.shape[1] != heads:
        problems.append(f"values{tuple(bias.values.shape)} is not [2D + 1, {heads}]")
    if tuple(bias.q_positions.shape) != (batch, q_len):
        problems.append(f"q_positions{tuple(bias.q_positions.shape)} is not [{batch}, {q_len}]")
    if tuple(bias.kv_positions.shape) != (batch, kv_len):
        problems.append(f"kv_positions{tuple(bias.kv_positions.shape)} is not [{batch}, {kv_len}]")
    if problems:
        raise ContractViolation(
            f"attention {name!r} was given a relative bias that does not fit q{tuple(q.shape)} "
            f"and k{tuple(k.shape)}: {'; '.join(problems)}"
        )


def check_attention_output(name: str, q: jax.Array, out: jax.Array) -> None:
    """The output must have the shape and dtype of ``q``."""
    if tuple(out.shape) != tuple(q.shape) or out.dtype != q.dtype:
        raise ContractViolation(
            f"attention {name!r} returned {out.dtype}{list(out.shape)} for q "
            f"{q.dtype}{list(q.shape)}: the contract requires the shape and dtype of q"
        )


def check_batch(name: str, batch: Batch, batch_size: int, length: int) -> None:
    """``collate`` must give arrays of the requested leading shape, and outputs for each example."""
    if batch.batch_size != batch_size or batch.length != length:
        raise ContractViolation(
            f"model {name!r} collated a batch of {batch.batch_size}x{batch.length}, "
            f"asked for {batch_size}x{length}"
        )
    for key, array in batch.arrays.items():
        if tuple(array.shape[:2]) != (batch_size, length):
            raise ContractViolation(
                f"model {name!r} collated {key!r} with shape {tuple(array.shape)}; "
                f"every array must start with ({batch_size}, {length})"
            )
    rows = batch.example_rows
    if len(rows) != len(batch.examples) or len(set(rows)) != len(rows):
        raise ContractViolation(
            f"model {name!r} collated {len(batch.examples)} examples with output rows "
            f"{list(rows)}: each example needs an output row of its own"
        )
    if rows and not all(0 <= row < batch.output_size for row in rows):
        raise ContractViolation(
            f"model {name!r} collated output rows {list(rows)} for a batch of "
            f"{batch.output_size} outputs"
        )


def check_examples(
    name: str, examples: Sequence[Example], max_length: int, text: str | None = None
) -> None:
    """``prepare`` must give examples no longer than the model's own ``max_length``.

    With ``text``, the text of the document they were made of, each example's ``span``
    must also be ``[start, end)`` characters of it: two integers, ``0 <= start <= end
    <= len(text)``. A span past the text is not a harmless label: records carry the
    text over their span, and a model whose spans ran 1000 characters past a 44-character
    file published every window with an empty text (blank snippets in search) while
    the run said it succeeded.
    """
    for example in examples:
        if not isinstance(example, Example):
            raise ContractViolation(
                f"model {name!r} prepared {type(example).__name__}, not an Example"
            )
        if not 0 < example.length <= max_length:
            raise ContractViolation(
                f"model {name!r} prepared example {example.doc_id}#{example.index} of length "
                f"{example.length}; lengths must be in 1..{max_length}"
            )
        if text is not None:
            _check_span(name, example, len(text))


def _check_span(name: str, example: Example, size: int) -> None:
    """``example.span`` must be ``[start, end)`` characters of a text of ``size`` characters."""
    span: Any = example.span  # typed (int, int), but a model may give anything
    problem = None
    if not (
        isinstance(span, tuple | list)
        and len(span) == 2
        and all(isinstance(i, Integral) and not isinstance(i, bool) for i in span)
    ):
        problem = "it must be two integers"
    elif not 0 <= span[0] <= span[1] <= size:
        problem = f"it must satisfy 0 <= start <= end <= {size}"
    if problem is not None:
        raise ContractViolation(
            f"model {name!r} prepared example {example.doc_id}#{example.index} with span "
            f"{span!r} for a {size}-character document; a span is the [start, end) "
            f"characters of the text the example covers: {problem}"
        )


def check_model_output(name: str, out: Any, outputs: int, dtype: np.dtype[Any]) -> None:
    """``apply`` must give the batch's ``output_size`` rows, in the declared dtype."""
    shape = tuple(getattr(out, "shape", ()))
    if not shape or shape[0] != outputs or np.dtype(out.dtype) != dtype:
        raise ContractViolation(
            f"model {name!r} returned {getattr(out, 'dtype', type(out).__name__)}{list(shape)}; "
            f"the contract requires [{outputs}, ...] of {dtype}"
        )


def check_finite_outputs(name: str, out: npt.NDArray[Any], batch: Batch) -> None:
    """The outputs of ``batch``'s examples must be finite: no NaN, no infinity.

    Checked on the host array the pipeline already has (one ``isfinite`` pass: about
    10 µs for 32 rows of 384 float32 on one CPU, where the batch itself takes
    milliseconds), so every way of embedding
    refuses them where the model ran: a run had written nothing of the batch and blamed
    the sink that refused the records, an ``Embedder`` returned them, and the server
    answered with the bare word ``NaN`` in its JSON. Padding rows are not looked at:
    their outputs are discarded, whatever they hold.
    """
    if np.isfinite(out).all():  # the common case: one pass, no copy of the example rows
        return
    broken = [
        example
        for example, row in zip(batch.examples, batch.example_rows, strict=True)
        if not np.isfinite(out[row]).all()
    ]
    if broken:
        first = broken[0]
        raise ContractViolation(
            f"model {name!r} returned NaN or infinity for {len(broken)} of the "
            f"{len(batch.examples)} examples of a batch of {batch.batch_size}x{batch.length} "
            f"(the first: example {first.doc_id}#{first.index}); the contract requires "
            "finite outputs: look for NaN or infinity in its weights, or an overflow or a "
            "division by zero in its apply"
        )


def check_row_shape(
    name: str, out: Any, pinned: tuple[int, ...] | None, batch: tuple[int, int]
) -> tuple[int, ...]:
    """The shape of ``out``'s rows, which must be ``pinned`` (the first batch's) if given.

    An embedding's width is the model's, not the batch's: a model whose rows were 16
    wide for short batches and 32 for long ones published a mix that no index can hold
    and no search compares, and the run said it succeeded. ``batch``: the batch's
    ``[rows, length]``, for the message.
    """
    shape = tuple(int(size) for size in out.shape[1:])
    if pinned is not None and shape != pinned:
        raise ContractViolation(
            f"model {name!r} returned rows of shape {list(shape)} for a batch of "
            f"{list(batch)} after rows of shape {list(pinned)}; the contract requires one "
            "row shape whatever the batch's shape (the embedding's width is the model's)"
        )
    return shape


def check_loaded(name: str, loaded: Any) -> Loaded:
    """A loader must yield :class:`Loaded` items holding a document or a document error."""
    if not isinstance(loaded, Loaded) or not isinstance(loaded.item, Document | DocumentError):
        raise ContractViolation(
            f"loader {name!r} yielded {type(loaded).__name__}; "
            "the contract requires Loaded(cursor, Document | DocumentError)"
        )
    item = loaded.item
    if not isinstance(item.id, str) or not item.id:
        raise ContractViolation(
            f"loader {name!r} yielded a {type(item).__name__} whose id is {item.id!r}; the "
            "contract requires a non-empty str, stable across runs for the same input"
        )
    if isinstance(item, Document) and not isinstance(item.text, str):
        raise ContractViolation(
            f"loader {name!r} yielded document {item.id!r} whose text is a "
            f"{type(item.text).__name__}; the contract requires a str (a document it cannot "
            "read is a DocumentError, which sets it aside with its reason)"
        )
    return loaded
