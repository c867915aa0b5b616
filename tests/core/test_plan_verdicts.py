"""``explain``'s verdicts are core's: every candidate of a bucket, chosen or not, and why.

The rule lives in :meth:`BucketPlan.verdicts`, not in the code that prints the table,
so that any form of the plan (the terminal's table, a later JSON) says the same.
"""

from __future__ import annotations

from seamline.core import BucketPlan, CandidateVerdict, Verdict
from seamline.core.attention.planner import MeasuredTimes, Refusal


def bucket(**changes: object) -> BucketPlan:
    fields: dict[str, object] = {
        "length": 64,
        "batch_size": 8,
        "signature": "B8xT64",
        "order": ("tpu-only", "fast", "spare", "refused-later"),
        "chosen": "fast",
        "reason": "highest priority for this shape, and it supports it",
        "refusals": (Refusal("tpu-only", ("needs a TPU", "this is cpu")),),
        "spare": (Refusal("spare", ()), Refusal("refused-later", ("float16 only",))),
    }
    fields.update(changes)
    return BucketPlan(**fields)  # type: ignore[arg-type]


def test_each_candidate_in_order_with_its_verdict_and_why() -> None:
    assert bucket().verdicts() == (
        CandidateVerdict("tpu-only", Verdict.CANNOT_SERVE, "needs a TPU; this is cpu"),
        CandidateVerdict(
            "fast", Verdict.CHOSEN, "highest priority for this shape, and it supports it"
        ),
        CandidateVerdict("spare", Verdict.COULD_SERVE, "fast comes first"),
        CandidateVerdict("refused-later", Verdict.CANNOT_SERVE, "float16 only"),
    )


def test_measured_candidates_that_serve_were_slower_and_carry_their_times() -> None:
    measured = MeasuredTimes({"fast": 0.001, "spare": 0.002}, cached=True, key="k")
    rows = {row.candidate: row for row in bucket(measured=measured).verdicts()}
    assert rows["fast"] == CandidateVerdict(
        "fast", Verdict.CHOSEN, "highest priority for this shape, and it supports it", 0.001
    )
    assert rows["spare"] == CandidateVerdict(
        "spare", Verdict.COULD_SERVE, "slower, as measured", 0.002
    )
    assert rows["tpu-only"].measured is None


def test_when_none_can_serve_every_candidate_says_why() -> None:
    plan = bucket(
        order=("a", "b"),
        chosen=None,
        reason="no attention can serve",
        refusals=(Refusal("a", ("too long",)), Refusal("b", ("no segments",))),
        spare=(),
    )
    assert [(v.candidate, v.verdict, v.why) for v in plan.verdicts()] == [
        ("a", Verdict.CANNOT_SERVE, "too long"),
        ("b", Verdict.CANNOT_SERVE, "no segments"),
    ]


def test_a_verdict_reads_as_the_table_shows_it() -> None:
    assert [str(v) for v in Verdict] == ["chosen", "cannot serve", "could serve", "left out"]


def test_a_candidate_that_failed_to_build_comes_last_left_out_with_why() -> None:
    why = "failed to build (acme 0.3): RuntimeError: no GPU driver"
    rows = bucket(left_out={"broken": why}).verdicts()
    assert rows[:-1] == bucket().verdicts()
    assert rows[-1] == CandidateVerdict("broken", Verdict.LEFT_OUT, why)
