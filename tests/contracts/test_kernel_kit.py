"""The kernel kit's helpers against the plain definitions they stand in for.

``rows_with_keys`` and ``poisoned_rows`` find empty and NaN-attending rows from the
segment ids without building the ``[Tq, Tk]`` mask; here they are compared with the
mask itself (``attention_mask``) on random ids, causal or not, with more queries
than keys and fewer. The kit must import with jax and numpy alone, since a third
party's kernel depends on seamline-contracts only.
"""

from __future__ import annotations

import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seamline.contracts import SegmentIds
from seamline.contracts import kernel_kit as kit


def test_the_kit_imports_jax_and_numpy_alone() -> None:
    code = (
        "import sys\n"
        "import seamline.contracts.kernel_kit\n"
        "loaded = {name.split('.')[0] for name in sys.modules}\n"
        "print(sorted(loaded & {'pydantic', 'pytest', 'hypothesis'}))\n"
        "print(sorted(n for n in sys.modules if n.startswith('seamline.')"
        " and not n.startswith('seamline.contracts')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split("\n")[:2] == ["[]", "[]"], result.stdout


@pytest.mark.parametrize(
    ("length", "multiple", "expected"), [(0, 128, 128), (1, 8, 8), (8, 8, 8), (9, 8, 16)]
)
def test_round_up_gives_at_least_one_whole_block(length: int, multiple: int, expected: int) -> None:
    assert kit.round_up(length, multiple) == expected


@pytest.mark.parametrize(("n", "expected"), [(1, 1), (2, 2), (3, 4), (16, 16), (17, 32)])
def test_next_power_of_two(n: int, expected: int) -> None:
    assert kit.next_power_of_two(n) == expected


def test_pad_axis_copies_nothing_when_there_is_nothing_to_add() -> None:
    x = jnp.ones((2, 3))
    assert kit.pad_axis(x, 1, 0, 0) is x
    padded = kit.pad_axis(x, 1, 1, 2, -1)
    assert padded.shape == (2, 6)
    assert np.asarray(padded)[:, [0, 4, 5]].tolist() == [[-1, -1, -1]] * 2


def test_padding_id_is_below_every_query_id() -> None:
    ids = jnp.asarray([[3, 0, -2, 5]])
    assert int(kit.padding_id(ids)) == -3


Layout = tuple[int, int, SegmentIds | None, bool]


@st.composite
def layouts(draw: st.DrawFn) -> Layout:
    """Lengths (either side longer), causal or not, and arbitrary ids or none."""
    q_len = draw(st.sampled_from([1, 5, 8]))
    kv_len = draw(st.sampled_from([1, 5, 8]))
    causal = draw(st.booleans())
    if not draw(st.booleans()):
        return q_len, kv_len, None, causal
    q_ids = draw(st.lists(st.integers(0, 3), min_size=q_len, max_size=q_len))
    kv_ids = draw(st.lists(st.integers(0, 3), min_size=kv_len, max_size=kv_len))
    ids = SegmentIds(jnp.asarray([q_ids], jnp.int32), jnp.asarray([kv_ids], jnp.int32))
    return q_len, kv_len, ids, causal


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(layout=layouts())
def test_rows_with_keys_agrees_with_the_mask(layout: Layout) -> None:
    q_len, kv_len, ids, causal = layout
    mask = kit.attention_mask(q_len, kv_len, ids, causal)
    found = kit.rows_with_keys(ids, q_len, kv_len, causal)
    expected = np.ones((1, q_len), bool) if mask is None else np.asarray(mask.any(axis=-1))[:, 0]
    if found is None:
        assert expected.all(), "None claims every query has a key"
    else:
        assert np.array_equal(np.broadcast_to(np.asarray(found), expected.shape), expected)


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(layout=layouts(), flagged=st.lists(st.booleans(), min_size=16, max_size=16))
def test_poisoned_rows_are_the_rows_that_may_attend_a_flagged_key(
    layout: Layout, flagged: list[bool]
) -> None:
    q_len, kv_len, ids, causal = layout
    broken = np.asarray(flagged[: kv_len * 2]).reshape(1, kv_len, 2)  # [B, Tk, K]
    found = np.asarray(kit.poisoned_rows(jnp.asarray(broken), ids, q_len, 4, causal))
    mask = kit.attention_mask(q_len, kv_len, ids, causal)
    allowed = np.ones((1, q_len, kv_len), bool) if mask is None else np.asarray(mask)[:, 0]
    per_kv_head = np.einsum("bqk,bkh->bqh", allowed, broken) > 0  # [B, Tq, K]
    assert np.array_equal(found, np.repeat(per_kv_head, 2, axis=2))


def test_clean_keys_zeroes_and_flags_non_finite_keys_and_values() -> None:
    k = np.ones((1, 3, 2, 4), np.float32)
    v = np.ones((1, 3, 2, 4), np.float32)
    k[0, 1, 0, 2] = np.inf
    v[0, 2, 1, 0] = np.nan
    clean_k, clean_v, broken = kit.clean_keys(jnp.asarray(k), jnp.asarray(v))
    assert np.isfinite(np.asarray(clean_k)).all()
    assert np.isfinite(np.asarray(clean_v)).all()
    assert float(clean_k[0, 1, 0, 2]) == 0.0
    assert np.asarray(broken).tolist() == [[[False, False], [True, False], [False, True]]]


def test_zero_rows_and_poison_replace_whole_rows() -> None:
    out = jnp.full((1, 3, 2, 4), jnp.nan)
    zeroed = np.asarray(kit.zero_rows(out, jnp.asarray([[True, False, True]])))
    assert (zeroed[0, 1] == 0).all()
    assert np.isnan(zeroed[0, [0, 2]]).all()
    assert kit.zero_rows(out, None) is out
    marked = np.asarray(kit.poison(jnp.zeros((1, 2, 2, 4)), jnp.asarray([[[True, False]] * 2])))
    assert np.isnan(marked[:, :, 0]).all()
    assert (marked[:, :, 1] == 0).all()


def test_static_scale_passes_numbers_and_folds_a_traced_scale_into_q() -> None:
    q = jnp.full((1, 2, 1, 16), 2.0)
    same, scale = kit.static_scale(q, None)
    assert same is q
    assert scale == 0.25
    assert kit.static_scale(q, 0.5) == (q, 0.5)

    def traced(s: jax.Array) -> tuple[jax.Array, jax.Array]:
        folded, static = kit.static_scale(q, s)
        return folded, jnp.asarray(static)

    folded, static = jax.jit(traced)(jnp.asarray(0.5))
    assert float(static) == 1.0
    assert np.asarray(folded).tolist() == np.ones((1, 2, 1, 16)).tolist()
