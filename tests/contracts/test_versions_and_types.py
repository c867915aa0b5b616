"""The contracts' small rules: version compatibility, Support, specs, seam checks."""

from __future__ import annotations

from dataclasses import replace

import jax.numpy as jnp
import numpy as np
import pytest

from seamline.contracts import (
    AttentionSpec,
    Batch,
    ContractViolation,
    Document,
    DocumentError,
    Example,
    Loaded,
    Shard,
    Support,
)
from seamline.contracts.seams import (
    check_attention_inputs,
    check_attention_output,
    check_batch,
    check_examples,
    check_finite_outputs,
    check_loaded,
    check_model_output,
)
from seamline.contracts.versions import compatibility_problem, parse_version


@pytest.mark.parametrize(
    ("declared", "problem"),
    [
        ("1.0", None),
        ("1.0.3", None),
        ("2.0", "major versions differ"),
        ("0.9", "major versions differ"),
        ("1.1", None),  # a kernel written before the relative bias (1.2) is still hosted
        ("1.7", "but seamline-contracts 0.1.0 hosts attention contract 1.0 to 1.2: upgrade"),
        ("1.7", "declare that one as its contract_version"),
        ("one", "is not MAJOR.MINOR[.PATCH]: declare the attention contract version"),
        ("1².0", "is not MAJOR.MINOR"),  # str.isdigit() took '²', which int() refuses
        ("1." + "0" * 5000, "is not MAJOR.MINOR"),
        # One version, one spelling: a record pins it as written (these were accepted).
        ("01.02", "'01.02' is not written plainly (no spaces, no leading zeros): write '1.2'"),
        (" 1.1 ", "' 1.1 ' is not written plainly (no spaces, no leading zeros): write '1.1'"),
        ("1.00", "write '1.0'"),
    ],
)
def test_contract_version_rule(declared: str, problem: str | None) -> None:
    found = compatibility_problem("attention", declared)
    if problem is None:
        assert found is None
    else:
        assert found is not None
        assert problem in found


def test_parse_version() -> None:
    assert parse_version("3.12.1") == (3, 12)
    with pytest.raises(ValueError, match=r"MAJOR\.MINOR"):
        parse_version("3")


def test_support_requires_reasons_to_refuse() -> None:
    assert Support.yes()
    refused = Support.no("needs a TPU")
    assert not refused
    assert refused.reasons == ("needs a TPU",)
    with pytest.raises(ValueError, match="must say why"):
        Support.no()


def test_spec_signature_is_stable_and_distinguishes_masks() -> None:
    spec = AttentionSpec(2, 128, 128, 12, 4, 64, "float32", True, False, "cpu", "cpu")
    assert spec.signature() == "B2xTq128xTk128xN12xK4xH64:float32:causal,cpu"
    other = AttentionSpec(2, 128, 128, 12, 4, 64, "float32", False, True, "cpu", "cpu")
    assert other.signature() != spec.signature()


def test_shards_partition_positions() -> None:
    shards = [Shard(i, 3) for i in range(3)]
    owners = [[s.index for s in shards if s.owns(p)] for p in range(10)]
    assert all(len(o) == 1 for o in owners)
    with pytest.raises(ValueError, match="does not exist"):
        Shard(3, 3)


def test_attention_seam_checks_name_the_component() -> None:
    q = jnp.zeros((1, 4, 6, 8))
    k = jnp.zeros((1, 5, 4, 8))
    with pytest.raises(ContractViolation, match=r"'kernel-x'.*multiple of key heads"):
        check_attention_inputs("kernel-x", q, k, k)
    with pytest.raises(ContractViolation, match="rank-4"):
        check_attention_inputs("kernel-x", q[0], k, k)
    with pytest.raises(ContractViolation, match="'kernel-x' returned bfloat16"):
        check_attention_output("kernel-x", q, q.astype(jnp.bfloat16))
    check_attention_output("kernel-x", q, q)


def test_model_seam_checks() -> None:
    example = Example("d", 0, (0, 3), 3, {"ids": np.zeros(3)})
    check_examples("m", [example], max_length=3)
    with pytest.raises(ContractViolation, match=r"lengths must be in 1\.\.2"):
        check_examples("m", [example], max_length=2)
    check_examples("m", [example], 3, "abc")
    outputs = np.zeros((2, 4), np.float32)
    outputs[1] = np.nan  # a padding row: discarded, not looked at
    check_finite_outputs("m", outputs, batch := Batch((example,), {}, 2, 3))
    outputs[0, 2] = np.inf
    with pytest.raises(ContractViolation, match=r"'m' returned NaN or infinity for 1 of the 1 "):
        check_finite_outputs("m", outputs, batch)
    for span, problem in [
        ((0, 4), r"0 <= start <= end <= 3"),
        ((2, 1), r"0 <= start <= end <= 3"),
        ((-1, 2), r"0 <= start <= end <= 3"),
        ((0, 1.5), "must be two integers"),
    ]:
        with pytest.raises(ContractViolation, match=rf"'m' prepared example d#0 .*{problem}"):
            check_examples("m", [replace(example, span=span)], 3, "abc")
    batch = Batch((example,), {"ids": np.zeros((2, 4))}, 2, 4)
    check_batch("m", batch, 2, 4)
    with pytest.raises(ContractViolation, match="asked for 2x8"):
        check_batch("m", batch, 2, 8)
    with pytest.raises(ContractViolation, match=r"requires \[2, \.\.\.\] of float32"):
        check_model_output("m", np.zeros((3, 5), np.float32), 2, np.dtype(np.float32))
    with pytest.raises(ContractViolation, match="Loaded"):
        check_loaded("l", ("cursor", "doc"))
    # Document("d1", None) failed later as "'NoneType' object has no attribute 'encode'",
    # naming no component; an empty id was written as a record nobody can tell apart.
    with pytest.raises(ContractViolation, match=r"document 'd1' whose text is a NoneType"):
        check_loaded("l", Loaded("0", Document("d1", None)))  # type: ignore[arg-type]
    with pytest.raises(ContractViolation, match=r"a Document whose id is ''; .*non-empty str"):
        check_loaded("l", Loaded("0", Document("", "text")))
    with pytest.raises(ContractViolation, match=r"a DocumentError whose id is 5"):
        check_loaded("l", Loaded("0", DocumentError(5, "unreadable")))  # type: ignore[arg-type]
    fine = Loaded("0", Document("d1", ""))
    assert check_loaded("l", fine) is fine, "an empty text is a document (set aside by a rule)"
