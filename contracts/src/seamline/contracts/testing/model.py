"""``ModelContract``: a model's outputs depend on its inputs alone.

Not on how a batch is padded, not on which other examples share it, and not on
which conforming attention serves it: that independence is what lets seamline
bucket, pad and swap kernels freely. The suite serves the model with its own two
attention implementations (all keys at once, and keys in chunks with an online
softmax) and compares the outputs; an author may add installed ones through the
``attentions`` fixture. The outputs must depend on the attention, though: served
with a deliberately wrong one they must change. And the width of an output is the
model's: short and long batches give rows of one shape.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from seamline.contracts.attention import TOLERANCES, AttentionFn
from seamline.contracts.component import Component
from seamline.contracts.documents import Document
from seamline.contracts.model import Example, Model, Params, pin_problem
from seamline.contracts.seams import (
    check_batch,
    check_examples,
    check_model_output,
    check_row_shape,
)
from seamline.contracts.testing._common import ComponentContract
from seamline.contracts.testing._reference import chunked_attention, dense_attention
from seamline.contracts.versions import Kind

#: Texts of very different lengths, including one longer than any model's window.
SAMPLE_TEXTS: tuple[str, ...] = (
    "A short sentence.",
    "Attention is computed between every pair of tokens in a window.",
    "Kernels must be swappable without fear; a contract says what swapping keeps.",
    " ".join(f"word{i}" for i in range(700)),
    "ünïcödé — text, with punctuation! And numbers: 3.14159.",
    "x",
)
FLOAT32_TOLERANCE = 1e-4
"""For float32 outputs, relative to their largest magnitude: padding and batch
composition change nothing but the order of a few sums."""

_PARAMS: dict[str, Params] = {}


def _params(model: Model[Any]) -> Params:
    """Load each model configuration's parameters once per session (weights can be large)."""
    key = _key(model)
    if key not in _PARAMS:
        _PARAMS[key] = jax.device_put(model.load())
    return _PARAMS[key]


_STEPS: dict[tuple[str, int], tuple[AttentionFn, Any]] = {}


def _key(model: Model[Any]) -> str:
    return json.dumps(
        [type(model).__qualname__, model.config.model_dump(mode="json")], sort_keys=True
    )


def _step(model: Model[Any], attention: AttentionFn) -> Any:
    """One jitted apply per model configuration and attention: each shape compiles once."""
    key = (_key(model), id(attention))
    if key not in _STEPS:

        def step(params: Params, arrays: dict[str, Any]) -> jax.Array:
            return model.apply(params, arrays, attention)

        # The attention is kept with its step so that its id is not reused while cached.
        _STEPS[key] = (attention, jax.jit(step))
    return _STEPS[key][1]


def uniform_attention(q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any) -> jax.Array:
    """A deliberately wrong attention: every query weighs the keys it may attend alike.

    Its logits are all zero (a bias aside), so it keeps masks, shapes and dtypes but
    not the answer; unlike the right output rescaled, no normalization undoes it. A
    model that computes through the attention it is given gives other outputs with it.
    """
    return dense_attention(jnp.zeros_like(q), k, v, **kwargs)


def _length_for(examples: Sequence[Example], max_length: int) -> int:
    longest = max(example.length for example in examples)
    length = 1
    while length < longest:
        length *= 2
    return min(length, max_length)


class ModelContract(ComponentContract):
    """Subclass it and provide the ``model`` fixture returning your model."""

    kind: ClassVar[Kind] = "model"

    @pytest.fixture
    def model(self) -> Model[Any]:
        raise NotImplementedError("provide a 'model' fixture returning an instance of your Model")

    @pytest.fixture
    def component(self, model: Model[Any]) -> Component[Any]:
        return model

    @pytest.fixture
    def documents(self) -> list[Document]:
        """The documents the checks use; override to suit a model that is not about text."""
        return [Document(f"doc-{i}", text) for i, text in enumerate(SAMPLE_TEXTS)]

    @pytest.fixture
    def attentions(self) -> dict[str, AttentionFn]:
        """Conforming attentions to serve the model with; the first is the baseline."""
        return {"dense": dense_attention, "chunked": chunked_attention}

    # -- helpers ---------------------------------------------------------------------------

    def outputs(
        self,
        model: Model[Any],
        examples: Sequence[Example],
        batch_size: int,
        length: int,
        attention: AttentionFn = dense_attention,
        rows: Sequence[int] | None = None,
    ) -> np.ndarray:
        """The outputs of the examples of one batch, in order, checked at the seam.

        With ``rows``, the examples are packed as the host packs them (example ``i`` in
        row ``rows[i]``): only for a model whose ``packing()`` allows it.
        """
        batch = model.collate(list(examples), batch_size, length, rows)
        check_batch(model.name, batch, batch_size, length)

        out = np.asarray(_step(model, attention)(_params(model), dict(batch.arrays)))
        check_model_output(model.name, out, batch.output_size, model.output_dtype())
        return out[list(batch.example_rows)]

    @staticmethod
    def allowed(model: Model[Any], want: np.ndarray) -> float:
        """How far outputs may move and still be the same: relative in float32."""
        dtype = np.dtype(model.output_dtype()).name
        scale = max(1.0, float(np.max(np.abs(want), initial=0.0)))
        return FLOAT32_TOLERANCE * scale if dtype == "float32" else TOLERANCES.get(dtype, 5e-2)

    @classmethod
    def assert_close(cls, model: Model[Any], got: np.ndarray, want: np.ndarray, what: str) -> None:
        allowed = cls.allowed(model, want)
        error = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64)), initial=0))
        assert error <= allowed, (
            f"model {model.name!r}: {what} changes the outputs by {error:.3g} "
            f"(allowed {allowed:.3g})"
        )

    def examples_of(self, model: Model[Any], documents: list[Document]) -> list[Example]:
        examples: list[Example] = []
        for document in documents:
            made = list(model.prepare(document))
            check_examples(model.name, made, model.max_length, document.text)
            examples.extend(made)
        return examples

    # -- the checks ------------------------------------------------------------------------

    def test_prepare_is_deterministic_and_ordered(
        self, model: Model[Any], documents: list[Document]
    ) -> None:
        for document in documents:
            first = list(model.prepare(document))
            again = list(model.prepare(document))
            assert first, f"model {model.name!r} made no example of document {document.id!r}"
            assert [(e.index, e.span, e.length) for e in first] == [
                (e.index, e.span, e.length) for e in again
            ], f"model {model.name!r}: prepare() is not deterministic for {document.id!r}"
            assert [e.index for e in first] == list(range(len(first))), (
                f"model {model.name!r}: examples of {document.id!r} are not numbered 0..n-1"
            )
            assert all(e.doc_id == document.id for e in first), (
                f"model {model.name!r}: an example of {document.id!r} names another document"
            )

    def test_spans_are_characters_of_the_document(
        self, model: Model[Any], documents: list[Document]
    ) -> None:
        """Each example's ``span`` is ``[start, end)`` characters of its document's text.

        Records carry the text over their span (what search shows); a span past the
        text gave every record an empty one, and nothing else noticed.
        """
        for document in documents:
            check_examples(
                model.name, list(model.prepare(document)), model.max_length, document.text
            )

    def test_output_shapes(self, model: Model[Any], documents: list[Document]) -> None:
        examples = self.examples_of(model, documents)[:4]
        out = self.outputs(model, examples, 4, _length_for(examples, model.max_length))
        assert np.isfinite(out).all(), f"model {model.name!r} produced NaN or infinity"

    def test_padding_invariance(self, model: Model[Any], documents: list[Document]) -> None:
        examples = sorted(self.examples_of(model, documents), key=lambda e: e.length)[:3]
        tight = _length_for(examples, model.max_length)
        loose = min(model.max_length, tight * 2)
        if loose == tight:
            pytest.skip("the shortest examples already fill the model's longest window")
        want = self.outputs(model, examples, len(examples), tight)
        got = self.outputs(model, examples, len(examples) + 3, loose)
        self.assert_close(model, got, want, f"padding to {loose} positions and 3 extra rows")

    def test_batch_composition_invariance(
        self, model: Model[Any], documents: list[Document]
    ) -> None:
        examples = self.examples_of(model, documents)[:4]
        length = _length_for(examples, model.max_length)
        together = self.outputs(model, examples, 4, length)
        for row, example in enumerate(examples):
            alone = self.outputs(model, [example], 4, length)
            self.assert_close(model, alone[0], together[row], f"batching example {row} with others")

    def test_packing_invariance(self, model: Model[Any], documents: list[Document]) -> None:
        """A model that packs gives each example the vector it has alone in a row (1.2)."""
        examples = sorted(self.examples_of(model, documents), key=lambda e: e.length)[:3]
        length = model.max_length
        if sum(e.length for e in examples) > length or model.packing(length) < len(examples):
            pytest.skip(f"model {model.name!r} does not pack three short examples into a row")
        alone = self.outputs(model, examples, len(examples), length)
        packed = self.outputs(model, examples, 2, length, rows=[0] * len(examples))
        self.assert_close(model, packed, alone, "packing three examples into one row")

    def test_query_model_runs_on_the_same_params(
        self, model: Model[Any], documents: list[Document]
    ) -> None:
        """``for_queries()`` (1.3) is the model for queries: same window, params and apply."""
        queries = model.for_queries()
        assert isinstance(queries, Model), f"model {model.name!r}: for_queries() is not a model"
        assert queries.max_length == model.max_length, (
            f"model {model.name!r}: for_queries() has another max_length "
            f"({queries.max_length}, not {model.max_length})"
        )
        examples = self.examples_of(queries, documents)[:4]
        out = self.outputs(queries, examples, 4, _length_for(examples, model.max_length))
        assert np.isfinite(out).all(), f"model {model.name!r}: a query gave NaN or infinity"

    def test_pinned_config_only_fills_what_the_config_leaves_unset(self, model: Model[Any]) -> None:
        """``pinned_config()`` (1.4) is a configuration of the model's own type that keeps
        every setting given a value, and pins for good: the model built from it pins
        nothing more."""
        pinned = model.pinned_config()
        problem = pin_problem(model.name, model.config, pinned)
        assert problem is None, problem
        again = type(model)(pinned).pinned_config()
        assert again == pinned, (
            f"model {model.name!r}: the model built from its pinned configuration pins "
            f"another ({again!r}, not {pinned!r})"
        )

    def test_same_outputs_with_any_conforming_attention(
        self,
        model: Model[Any],
        documents: list[Document],
        attentions: dict[str, AttentionFn],
    ) -> None:
        examples = self.examples_of(model, documents)[:4]
        length = _length_for(examples, model.max_length)
        (base_name, base), *others = attentions.items()
        want = self.outputs(model, examples, 4, length, base)
        for name, attention in others:
            got = self.outputs(model, examples, 4, length, attention)
            what = f"serving it with attention {name!r}, not {base_name!r}"
            self.assert_close(model, got, want, what)

    def test_outputs_change_with_a_wrong_attention(
        self, model: Model[Any], documents: list[Document]
    ) -> None:
        """Served with a wrong attention (:func:`uniform_attention`), the outputs must move.

        The other checks compare conforming attentions, which a model that ignores its
        ``attention`` argument (or calls it and drops the result) passes trivially.
        """
        examples = self.examples_of(model, documents)[:4]
        length = _length_for(examples, model.max_length)
        right = self.outputs(model, examples, 4, length, dense_attention)
        wrong = self.outputs(model, examples, 4, length, uniform_attention)
        change = float(np.max(np.abs(wrong.astype(np.float64) - right), initial=0.0))
        allowed = self.allowed(model, right)
        assert change > allowed, (
            f"model {model.name!r}: serving it with a wrong attention (every query weighing "
            f"its keys alike) changes its outputs by only {change:.3g} (tolerance "
            f"{allowed:.3g}): the model must compute with the attention it is given and "
            "use its result"
        )

    def test_row_shape_is_the_same_for_short_and_long_batches(
        self, model: Model[Any], documents: list[Document]
    ) -> None:
        """An output's width is the model's, not the batch's: short and long batches agree.

        The other checks' batches all land in one length bucket; the host pins the row
        shape of a run's first batch and refuses another later, so a model whose width
        follows the length fails a real run half-way.
        """
        examples = sorted(self.examples_of(model, documents), key=lambda e: e.length)
        short, long = examples[:2], examples[-2:]
        short_length = _length_for(short, model.max_length)
        if short_length == model.max_length:
            pytest.skip("the shortest examples already fill the model's longest window")
        first = self.outputs(model, short, 2, short_length)
        pinned = check_row_shape(model.name, first, None, (2, short_length))
        check_row_shape(
            model.name,
            self.outputs(model, long, 2, model.max_length),
            pinned,
            (2, model.max_length),
        )
