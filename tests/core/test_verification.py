"""Verification on first use of a shape: what it catches, and what it costs.

A run verifies its attention once per shape it meets. On a GPU every compilation costs
0.2 s or more (an add, on the H200: benchmarks/results/h200/), so the check compiles
one program per shape, the two attentions it compares side by side in it: the probe is
made on the host and the comparison is done there. It must still catch a wrong number
and a NaN, and a kernel that fails must still fail it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any, ClassVar

import jax
import pytest

from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.contracts import (
    TOLERANCES,
    Attention,
    AttentionSpec,
    ComponentConfig,
    SegmentIds,
    Support,
)
from seamline.core.attention.verification import verify
from tests.conformance import broken


class _Plain(ComponentConfig):
    """Nothing to configure."""


class Skewed(Attention[_Plain]):
    """The right attention plus a constant: a kernel with a wrong number."""

    name: ClassVar[str] = "skewed"
    Config = _Plain
    offset: ClassVar[float] = 0.01

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.yes()

    def __call__(self, q: Any, k: Any, v: Any, **options: Any) -> Any:
        out = NativeAttention(NativeConfig())(q, k, v, **options)
        return out + type(self).offset


class Poisoned(Skewed):
    """A kernel whose output is NaN (the error that compares false against any tolerance)."""

    name: ClassVar[str] = "poisoned"
    offset: ClassVar[float] = float("nan")


def spec(dtype: str = "float32", bias: str | None = None, batch: int = 3) -> AttentionSpec:
    # Odd sizes no other test uses: a small program compiled earlier in this process for
    # the same shape would be reused and hide a compilation from the count below.
    return AttentionSpec(batch, 24, 24, 5, 5, 8, dtype, False, True, "cpu", "cpu", bias)


@pytest.fixture
def compilations() -> Iterator[list[str]]:
    """The names of the programs JAX compiles while the test runs."""
    names: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            message = record.getMessage()
            if message.startswith("Compiling "):
                names.append(message.split()[1])

    handler, logger = Collect(level=logging.DEBUG), logging.getLogger("jax")
    before = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        with jax.log_compiles():
            yield names
    finally:
        logger.removeHandler(handler)
        logger.setLevel(before)


@pytest.mark.parametrize(
    ("dtype", "bias", "batch"),
    [("float32", None, 3), ("bfloat16", None, 5), ("float32", "relative", 7)],
)
def test_verification_compiles_one_program_per_shape(
    compilations: list[str], dtype: str, bias: str | None, batch: int
) -> None:
    native = NativeAttention(NativeConfig())
    verdict = verify(native, native, [spec(dtype, bias, batch)])
    assert verdict.ok
    assert verdict.max_error == 0.0
    assert compilations == ["jit(verification)"], (
        "verification compiled more than one program holding the candidate and the "
        f"reference; on a GPU each compilation costs 0.2 s or more per shape: {compilations}"
    )


def test_verification_catches_a_wrong_number() -> None:
    verdict = verify(Skewed(_Plain()), NativeAttention(NativeConfig()), [spec()])
    assert not verdict.ok
    assert verdict.max_error == pytest.approx(0.01, rel=1e-3)


def test_verification_counts_a_nan_as_an_infinite_error() -> None:
    verdict = verify(Poisoned(_Plain()), NativeAttention(NativeConfig()), [spec()])
    assert verdict.max_error == float("inf")
    assert not verdict.ok


def test_the_strictest_tolerance_of_the_shapes_applies() -> None:
    # 0.01 is within bfloat16's tolerance, not float32's.
    native = NativeAttention(NativeConfig())
    verdict = verify(Skewed(_Plain()), native, [spec("bfloat16", batch=4), spec(batch=2)])
    assert verdict.tolerance == TOLERANCES["float32"] < 0.01 < TOLERANCES["bfloat16"]
    assert not verdict.ok


def test_the_segment_ids_reach_the_call() -> None:
    seen: list[SegmentIds | None] = []

    class Watching(Skewed):
        offset: ClassVar[float] = 0.0

        def __call__(self, q: Any, k: Any, v: Any, **options: Any) -> Any:
            seen.append(options.get("segment_ids"))
            return super().__call__(q, k, v, **options)

    assert verify(Watching(_Plain()), NativeAttention(NativeConfig()), [spec()]).ok
    assert seen
    assert all(ids is not None for ids in seen)


def test_a_kernel_that_fails_to_trace_fails_the_verification() -> None:
    class Broken(Skewed):
        def __call__(self, q: Any, k: Any, v: Any, **options: Any) -> Any:
            raise NotImplementedError("this kernel cannot lower the shape")

    with pytest.raises(NotImplementedError, match="cannot lower"):
        verify(Broken(_Plain()), NativeAttention(NativeConfig()), [spec()])


@pytest.mark.parametrize(
    "kernel", [broken.FirstRowSegmentsAttention, broken.EightDocumentsAttention]
)
def test_a_kernel_that_gets_packed_documents_wrong_is_caught(
    kernel: type[broken.Attention[broken.NoConfig]],
) -> None:
    # The probe held two documents laid out alike in every row: both kernels passed, and
    # the run wrote their vectors (cosine 0.45 against the reference), exit code 0.
    native = NativeAttention(NativeConfig())
    long = AttentionSpec(2, 256, 256, 4, 4, 8, "float32", False, True, "cpu", "cpu")
    for shape in (spec(batch=4), long):
        verdict = verify(kernel(broken.NoConfig()), native, [shape])
        assert not verdict.ok, (shape, verdict)
