"""``AttentionContract``: what any attention implementation must do to serve seamline.

Every case is first put to ``supports()``, asked as the host asks it: an answer (and
``priority()``'s) must come within :data:`~seamline.contracts.attention.ASK_TIMEOUT_S`.
A case the component claims is run under
``jax.jit`` and compared with an exact float64 reference written from the
contract's definition; a case it refuses must come with reasons. So a component
may decline any feature, but it may never answer wrongly for one it claims, nor
refuse one it claimed once called (an ``UnsupportedError`` from the call fails).

Tolerances are per dtype, and scaled to the error of a plain computation in the
same dtype (matmuls in the input dtype, softmax in float32) measured on the same
inputs: a kernel may be as inexact as the obvious implementation, times four,
never looser than the contract's own :data:`~seamline.contracts.TOLERANCES` and
never tighter than a floor that allows summation in another order.
"""

from __future__ import annotations

import contextlib
import functools
import uuid
from collections.abc import Callable, Hashable
from typing import Any, ClassVar, Literal

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel

from seamline.contracts.attention import (
    ASK_TIMEOUT_S,
    TOLERANCES,
    Attention,
    RelativeBias,
    SegmentIds,
    Support,
)
from seamline.contracts.component import Component
from seamline.contracts.errors import UnsupportedError
from seamline.contracts.testing._attention_cases import (
    ABSENT_SEGMENT,
    ATTENTION_CASES,
    AttentionCase,
    attention_bias,
    attention_inputs,
    random_attention_cases,
)
from seamline.contracts.testing._common import ComponentContract, max_examples
from seamline.contracts.testing._reference import Float64, dense_attention, exact_attention
from seamline.contracts.time_limit import answered_within
from seamline.contracts.versions import Kind

#: The smallest tolerance per dtype: room for summing in another order, nothing more.
FLOORS: dict[str, float] = {"float32": 1e-5, "bfloat16": 1e-2, "float16": 2e-3}
SCALE = 4.0


def tolerance(dtype: str, plain_error: float) -> float:
    """``SCALE`` x the plain computation's error, within [floor, contract tolerance]."""
    return min(TOLERANCES[dtype], max(FLOORS[dtype], SCALE * plain_error))


def _wrapped(
    attention: Callable[..., jax.Array], causal: bool, scale: float | None = None
) -> Callable[..., jax.Array]:
    """The call the suite jits: ``(q, k, v, ids, bias)`` with ``causal`` and ``scale`` fixed.

    The bias and scale keywords are passed only when given, as the host passes them:
    an implementation written before contract 1.2 has no bias keyword. The scale is
    static (a Python float), as a model passes it, so a kernel may bake it into its code.
    """
    given = {} if scale is None else {"scale": scale}

    def call(
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        ids: SegmentIds | None,
        bias: RelativeBias | None = None,
    ) -> jax.Array:
        if bias is None:
            return attention(q, k, v, segment_ids=ids, causal=causal, **given)
        return attention(q, k, v, segment_ids=ids, causal=causal, bias=bias, **given)

    return call


class _SameFunction:
    """An implementation, equal to every other of its class and configuration.

    A component is built from its configuration alone (the registry builds it so, a run
    builds one per process), so two instances of one class and configuration compute the
    same function: the suite compiles a case once for all of them. Keyed by the instance,
    a fixture that built an instance per check, as most do, compiled every case anew in
    every check, and an interpreted Pallas kernel takes seconds to compile (its programs
    hold host callbacks, which JAX's persistent cache does not keep). An implementation
    that is not a component, or whose configuration cannot be hashed, is itself alone.
    """

    __slots__ = ("attention", "key")

    def __init__(self, attention: Callable[..., jax.Array]) -> None:
        self.attention = attention
        config = getattr(attention, "config", None)
        self.key: Hashable = attention
        if isinstance(attention, Attention) and isinstance(config, BaseModel):
            with contextlib.suppress(TypeError):  # one holding a dict, or not frozen
                hash(config)
                self.key = (type(attention), config)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _SameFunction) and self.key == other.key

    def __hash__(self) -> int:
        return hash(self.key)


@functools.lru_cache(maxsize=32)
def _jit_once(same: _SameFunction, causal: bool, scale: float | None) -> Callable[..., jax.Array]:
    return jax.jit(_wrapped(same.attention, causal, scale))


def _jitted(
    attention: Callable[..., jax.Array], causal: bool, scale: float | None = None
) -> Callable[..., jax.Array]:
    """One jitted call per (implementation, causal, scale): a shape seen again is not recompiled.

    However a check calls it, with the scale or the bias left out or given as None, it
    reaches the same compiled program: ``functools.lru_cache`` keys ``(f, False)`` and
    ``(f, False, None)`` apart, and ``jax.jit`` keys a call by its arguments' structure,
    so an absent bias and a ``None`` one would each trace and compile the same program
    again (an interpreted Pallas kernel takes seconds to compile; its programs hold host
    callbacks, which JAX's persistent cache does not keep). The checks share the
    compilations of a case whether the fixture gives them one instance or builds one
    per check (:class:`_SameFunction`).
    """
    compiled = _jit_once(_SameFunction(attention), causal, scale)
    return lambda q, k, v, ids, bias=None: compiled(q, k, v, ids, bias)  # bias always given


def _recompiled(attention: Callable[..., jax.Array], causal: bool) -> Callable[..., jax.Array]:
    """The jitted call of :func:`_jitted`, traced and compiled anew.

    A new function object misses JAX's tracing and compilation caches, so the kernel's
    Python runs again and XLA compiles again. Its name is new too: JAX's persistent
    compilation cache, where a ``jax_compilation_cache_dir`` is set (seamline's own test
    session and ``seamline run`` set one), keys an executable by the program's name and
    text, and would hand back the executable compiled first, hiding a kernel whose
    compilation does not give the same program twice.
    """
    call = _wrapped(attention, causal)
    call.__name__ = call.__qualname__ = f"recompiled_{uuid.uuid4().hex}"
    return jax.jit(call)


def _asked(
    attention: Attention[Any], case: AttentionCase, question: Literal["supports", "priority"]
) -> object:
    """``attention.supports(case.spec())`` (or ``.priority``), as the host asks it.

    The host asks each on a thread and gives up after :data:`ASK_TIMEOUT_S` (its own
    constant), refusing the shape: a component that took as long passed the suite and
    then stopped every run that named it. Asked the same way here, a slow answer fails,
    naming the limit, and one that never comes fails after it instead of hanging the
    suite (the thread is left behind, as the host leaves it). What the method raises is
    raised here.
    """
    method = getattr(attention, question)
    spec = case.spec()
    answer, thread = answered_within(lambda: method(spec), ASK_TIMEOUT_S, question)
    if thread is not None:
        pytest.fail(
            f"{attention.name!r}.{question}() did not answer in {ASK_TIMEOUT_S:g} s on "
            f"{case.describe()}: seamline gives up on it after {ASK_TIMEOUT_S:g} s and refuses "
            "the shape (a run that names this implementation stops; 'auto' passes it over). "
            "Answer from the spec's shapes and names; probe a device or import a compiler "
            "when constructed"
        )
    return answer


@functools.lru_cache(maxsize=64)
def _yardstick(case: AttentionCase) -> tuple[Float64, float]:
    """The case's exact answer and the tolerance around it, computed once per case.

    Both depend on the case alone (its inputs are the same every time), not on the
    implementation checked: the random cases are the same for every class too, so each
    implementation checked in one process is held to the same answer, computed once.
    """
    q, k, v, ids = attention_inputs(case)
    bias = attention_bias(case)
    exact = exact_attention(
        q, k, v, segment_ids=ids, causal=case.causal, scale=case.scale, bias=bias
    )
    exact.setflags(write=False)
    plain = _jitted(dense_attention, case.causal, case.scale)(q, k, v, ids, bias)
    return exact, tolerance(case.dtype, _max_abs(plain, exact))


def _max_abs(a: Any, b: Any, rows: Any = None) -> float:
    diff = np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))
    if rows is not None:
        diff = diff[rows]
    return float(np.max(diff, initial=0.0))


class AttentionContract(ComponentContract):
    """Subclass it and provide the ``attention`` fixture returning your implementation."""

    kind: ClassVar[Kind] = "attention"

    @pytest.fixture
    def attention(self) -> Attention[Any]:
        raise NotImplementedError(
            "provide an 'attention' fixture returning an instance of your Attention"
        )

    @pytest.fixture
    def component(self, attention: Attention[Any]) -> Component[Any]:
        return attention

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def support_for(attention: Attention[Any], case: AttentionCase) -> Support:
        """The component's answer for ``case``, in time; a refusal must give its reasons."""
        support = _asked(attention, case, "supports")
        assert isinstance(support, Support), (
            f"{attention.name!r}.supports() returned {type(support).__name__}, not a Support: "
            "return Support.yes() or Support.no('reason', ...)"
        )
        if not support.ok:
            reasons = [r for r in support.reasons if isinstance(r, str) and r.strip()]
            assert reasons, (
                f"{attention.name!r} refuses {case.describe()} without saying why: "
                "return Support.no('reason', ...)"
            )
        return support

    @classmethod
    def claims(cls, attention: Attention[Any], case: AttentionCase) -> bool:
        """Whether the component claims ``case`` (checking that a refusal says why)."""
        return bool(cls.support_for(attention, case).ok)

    @staticmethod
    def check_agrees(attention: Attention[Any], case: AttentionCase) -> None:
        """Run a claimed case under jit and compare it with the exact reference.

        ``supports()`` said yes to the case, so the call must answer it: an
        ``UnsupportedError`` now would reach a run that negotiation already planned
        with this kernel, and fail it there. Refusing belongs in ``supports()``.
        """
        q, k, v, ids = attention_inputs(case)
        bias = attention_bias(case)
        try:
            out = _jitted(attention, case.causal, case.scale)(q, k, v, ids, bias)
        except UnsupportedError as err:
            pytest.fail(
                f"{attention.name!r}: supports() said yes to {case.describe()}, then the call "
                f"raised UnsupportedError ({err}): refuse it in supports()"
            )
        assert out.shape == q.shape, (
            f"{attention.name!r} returned shape {tuple(out.shape)} for q of shape "
            f"{tuple(q.shape)} on {case.describe()}: the output must have q's shape"
        )
        assert out.dtype == q.dtype, (
            f"{attention.name!r} returned {out.dtype} for {q.dtype} inputs on "
            f"{case.describe()}: the output must have q's dtype"
        )
        exact, allowed = _yardstick(case)
        assert bool(jnp.all(jnp.isfinite(out))), (
            f"{attention.name!r} produced NaN or infinity on {case.describe()}"
        )
        error = _max_abs(out, exact)
        assert error <= allowed, (
            f"{attention.name!r} disagrees with the exact reference on {case.describe()}: "
            f"max abs error {error:.3g} > tolerance {allowed:.3g}"
        )

    def supported_cases(self, attention: Attention[Any]) -> list[AttentionCase]:
        return [case for case in ATTENTION_CASES.values() if self.claims(attention, case)]

    def first_supported(
        self, attention: Attention[Any], predicate: Callable[[AttentionCase], bool]
    ) -> AttentionCase:
        for case in self.supported_cases(attention):
            if predicate(case):
                return case
        pytest.skip(f"{attention.name!r} claims no case this check needs")

    # -- the checks ------------------------------------------------------------------------

    def test_claims_at_least_one_case_here(self, attention: Attention[Any]) -> None:
        supported = self.supported_cases(attention)
        if not supported:
            platform = next(iter(ATTENTION_CASES.values())).spec().platform
            reasons = self.support_for(attention, ATTENTION_CASES["plain-f32"]).reasons
            pytest.fail(
                f"{attention.name!r} refuses every case of the suite on {platform!r} "
                f"({'; '.join(reasons)}): nothing can be checked here. Run the suite where it "
                "runs, or configure it to run here (an interpret mode, for instance)"
            )

    @pytest.mark.parametrize("case_name", list(ATTENTION_CASES))
    def test_feature_case(self, attention: Attention[Any], case_name: str) -> None:
        case = ATTENTION_CASES[case_name]
        support = self.support_for(attention, case)
        if not support.ok:
            pytest.skip(f"refused, as it may be: {'; '.join(support.reasons)}")
        self.check_agrees(attention, case)

    def test_random_cases(self, attention: Attention[Any]) -> None:
        @settings(
            max_examples=max_examples(),
            deadline=None,
            derandomize=True,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=random_attention_cases())
        def agrees(case: AttentionCase) -> None:
            if self.claims(attention, case):
                self.check_agrees(attention, case)

        agrees()

    def test_fully_masked_rows_are_zero(self, attention: Attention[Any]) -> None:
        case = self.first_supported(
            attention, lambda c: c.segmented and not c.causal and not c.biased
        )
        q, k, v, ids = attention_inputs(case)
        assert ids is not None
        # The first quarter of every query row gets a segment no key has.
        cut = max(1, case.q_len // 4)
        q_ids = ids.q.at[:, :cut].set(ABSENT_SEGMENT)
        out = _jitted(attention, False)(q, k, v, SegmentIds(q_ids, ids.kv))
        lonely = np.asarray(out[:, :cut], np.float64)
        assert np.isfinite(lonely).all(), (
            f"{attention.name!r} returns NaN for queries with no key to attend to "
            f"({case.describe()}); the contract requires zeros"
        )
        assert np.max(np.abs(lonely), initial=0.0) == 0.0, (
            f"{attention.name!r} returns non-zero rows (max {np.max(np.abs(lonely)):.3g}) for "
            f"queries with no key to attend to ({case.describe()}); the contract requires zeros"
        )

    def test_nan_in_masked_positions_does_not_leak(self, attention: Attention[Any]) -> None:
        case = self.first_supported(
            attention, lambda c: c.segmented and not c.causal and not c.biased
        )
        q, k, v, ids = attention_inputs(case)
        assert ids is not None
        padding_q = np.asarray(ids.q) == 0
        padding_kv = np.asarray(ids.kv) == 0
        if not padding_kv.any():
            pytest.skip("the case has no padding to poison")
        nan = jnp.asarray(np.nan, q.dtype)
        poisoned_k = jnp.where(padding_kv[:, :, None, None], nan, k)
        poisoned_v = jnp.where(padding_kv[:, :, None, None], nan, v)
        poisoned_q = jnp.where(padding_q[:, :, None, None], nan, q)
        out = _jitted(attention, False)(poisoned_q, poisoned_k, poisoned_v, ids)
        real = ~padding_q
        exact = exact_attention(q, k, v, segment_ids=ids)
        values = np.asarray(out, np.float64)[real]
        assert np.isfinite(values).all(), (
            f"{attention.name!r}: NaN in padding keys/values leaks into the outputs of real "
            f"queries ({case.describe()}); masked positions must not contribute at all"
        )
        plain = _jitted(dense_attention, False)(q, k, v, ids)
        allowed = tolerance(case.dtype, _max_abs(plain, exact, real))
        error = _max_abs(out, exact, real)
        assert error <= allowed, (
            f"{attention.name!r}: with NaN in padding, real queries differ from the reference "
            f"by {error:.3g} > {allowed:.3g} ({case.describe()})"
        )

    def test_deterministic(self, attention: Attention[Any]) -> None:
        """The same inputs give the same bits: rerun, and compiled again.

        A run's vectors must not depend on the process that made them. Calling one
        compiled function twice catches only a kernel that varies as it runs; a kernel
        that picks something when it is traced or compiled (a block size timed by an
        autotuner, say) gives the same answer twice within a process and another in the
        next one, so the second comparison is with a fresh compilation. Both run in this
        one process: a choice made once and kept for the process's life is not seen.
        """
        case = self.first_supported(attention, lambda c: True)
        q, k, v, ids = attention_inputs(case)
        bias = attention_bias(case)
        first = np.asarray(_jitted(attention, case.causal)(q, k, v, ids, bias))
        again = np.asarray(_jitted(attention, case.causal)(q, k, v, ids, bias))
        assert np.array_equal(first, again, equal_nan=True), (
            f"{attention.name!r} gives different results for the same inputs on rerun "
            f"({case.describe()}, max difference {_max_abs(first, again):.3g})"
        )
        fresh = np.asarray(_recompiled(attention, case.causal)(q, k, v, ids, bias))
        assert np.array_equal(first, fresh, equal_nan=True), (
            f"{attention.name!r} gives different results for the same inputs on recompile "
            f"({case.describe()}, max difference {_max_abs(first, fresh):.3g}): a run's "
            "vectors would change from one process to the next. Choose what the kernel "
            "computes (block sizes, say) from the shapes and the config, not from timing "
            "or chance"
        )

    def test_works_without_jit(self, attention: Attention[Any]) -> None:
        case = self.first_supported(attention, lambda c: True)
        q, k, v, ids = attention_inputs(case)
        eager = attention(q, k, v, segment_ids=ids, causal=case.causal)
        jitted = _jitted(attention, case.causal)(q, k, v, ids)
        allowed = tolerance(case.dtype, 0.0)
        error = _max_abs(eager, jitted)
        assert error <= allowed, (
            f"{attention.name!r} gives other results outside jit ({error:.3g}) on {case.describe()}"
        )

    def test_relative_bias_with_nan_padding_does_not_leak(self, attention: Attention[Any]) -> None:
        """With a bias (1.2), masked positions still contribute nothing, NaN or not."""
        case = self.first_supported(attention, lambda c: c.biased and c.segmented)
        q, k, v, ids = attention_inputs(case)
        bias = attention_bias(case)
        assert ids is not None
        padding_kv = np.asarray(ids.kv) == 0
        if not padding_kv.any():
            pytest.skip("the case has no padding to poison")
        nan = jnp.asarray(np.nan, q.dtype)
        poisoned_k = jnp.where(padding_kv[:, :, None, None], nan, k)
        poisoned_v = jnp.where(padding_kv[:, :, None, None], nan, v)
        out = _jitted(attention, case.causal)(q, poisoned_k, poisoned_v, ids, bias)
        real = np.asarray(ids.q) != 0
        exact = exact_attention(q, k, v, segment_ids=ids, causal=case.causal, bias=bias)
        plain = _jitted(dense_attention, case.causal)(q, k, v, ids, bias)
        allowed = tolerance(case.dtype, _max_abs(plain, exact, real))
        error = _max_abs(out, exact, real)
        assert error <= allowed, (  # NaN compares false: a leak fails here too
            f"{attention.name!r}: with a relative bias and NaN in padding keys, real queries "
            f"differ from the reference by {error:.3g} > {allowed:.3g} ({case.describe()})"
        )

    def test_priority_is_an_integer(self, attention: Attention[Any]) -> None:
        for case in ATTENTION_CASES.values():
            rank = _asked(attention, case, "priority")
            assert isinstance(rank, int), (
                f"{attention.name!r}.priority() returned {type(rank).__name__}, not int"
            )
