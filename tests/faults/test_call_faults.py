"""A kernel failing *while running* a compiled shape: demoted and the batch re-run, or a stop.

The fixture kernels (``plugin/``) are right until their ``at``-th execution (a host
callback counts them), then raise or return NaN; ``fault-shape`` returns the wrong
shape. Verification is off where it would spend calls, so that ``at`` counts batches.
Each scenario runs once per session (:mod:`tests.faults.call_scenarios`, through the
``fault_outcomes`` fixture); these tests assert on what it did, and the faults table
of docs/reliability.md shows it.
"""

from __future__ import annotations

import numpy as np
import pytest

from seamline.contracts import ContractViolation, ShardFailed
from seamline.core.attention.steps import AttentionCallFailed
from seamline.core.seams import failed_at
from tests.faults.call_scenarios import DOCUMENTS, KernelRun
from tests.faults.outcomes import FaultOutcomes


def written(run: KernelRun) -> dict[str, np.ndarray]:
    """The vectors the run wrote, by document: the run finished, every document exactly once."""
    if run.error is not None:
        raise run.error
    assert run.closed == (True,)
    assert len(run.vectors) == run.records == DOCUMENTS, "every document exactly once"
    return dict(run.vectors)


@pytest.mark.parametrize(
    ("key", "kernel", "said"),
    [
        ("kernel-raises", "fault-raise", "failed while running: "),
        ("kernel-nan", "fault-nan", "returned NaN or infinity"),
    ],
)
def test_a_kernel_failing_while_running_falls_back_and_the_batch_is_rerun(
    fault_outcomes: FaultOutcomes, key: str, kernel: str, said: str
) -> None:
    expected = written(fault_outcomes.kernel_reference)  # native alone
    run = fault_outcomes[key]  # [kernel, native], the kernel failing from its 3rd call on
    got = written(run)
    assert got.keys() == expected.keys()
    for doc_id, vector in expected.items():
        np.testing.assert_array_equal(got[doc_id], vector)  # the re-run batch is native's
    failed = run.fallbacks
    assert failed, "a Fallback event is emitted"
    assert {(f.failed, f.replacement) for f in failed} == {(kernel, "native")}
    assert all(said in f.reason for f in failed), [f.reason for f in failed]
    events = run.fault_events
    assert events, "the batch's span records the fault"
    assert {name for name, _ in events} == {"seamline.model.apply"}
    assert all(attributes["seamline.attention.name"] == kernel for _, attributes in events)


def test_outputs_the_reference_makes_non_finite_too_do_not_demote_and_stop_the_run(
    fault_outcomes: FaultOutcomes,
) -> None:
    # The toy model's outputs made NaN for every kernel: the model is to blame, not the
    # kernel. They were written (the memory sink checks nothing), and the run finished.
    run = fault_outcomes["non-finite-model"]
    assert run.fallbacks == ()
    assert isinstance(run.error, ContractViolation), run.error
    assert str(run.error).startswith("model 'toy' returned NaN or infinity for ")
    assert failed_at(run.error) == "model 'toy' (apply, from tests 0)"
    assert run.records == 0
    assert run.closed == (False,)


def test_on_failure_raise_stops_with_the_last_checkpoint_intact(
    fault_outcomes: FaultOutcomes,
) -> None:
    run = fault_outcomes["on-failure-raise"]
    assert isinstance(run.error, ShardFailed), run.error
    message = str(run.error)
    assert "attention 'fault-raise' (call, from seamline-fixture-faults 0.1.0)" in message
    assert "on_failure is 'raise'" in message
    assert "--resume" in message
    assert isinstance(run.error.__cause__, AttentionCallFailed)
    assert not run.published, "nothing is published"
    assert run.checkpoint_cursor == "7", "the commit after 8 documents stands"
    assert run.fallbacks == ()


@pytest.mark.parametrize("key", ["shape-auto", "shape-list"])
def test_a_wrong_shape_under_auto_or_a_list_falls_back(
    fault_outcomes: FaultOutcomes, key: str
) -> None:
    run = fault_outcomes[key]
    written(run)
    shape = [f for f in run.fallbacks if f.failed == "fault-shape"]
    assert shape, "fault-shape (first under auto, and in the list) was chosen, then demoted"
    assert all(f.reason.startswith("broke the contract: attention 'fault-shape'") for f in shape)
    if key != "shape-auto":
        assert {f.replacement for f in shape} == {"native"}


def test_a_failure_reason_is_one_line_without_the_callback_traceback(
    fault_outcomes: FaultOutcomes,
) -> None:
    run = fault_outcomes["kernel-raises"]
    written(run)
    (fallback, *_) = run.fallbacks
    assert "\n" not in fallback.reason
    assert "Traceback" not in fallback.reason
    assert fallback.reason.endswith("RuntimeError: injected kernel fault at call 3")
