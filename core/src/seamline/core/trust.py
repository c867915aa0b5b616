"""Which attention candidates a pipeline may trust when it sets ``require_conformance``.

Trust is a passing conformance record (see :mod:`seamline.contracts.conformance`)
for this component's version and configuration, on the JAX, jaxlib, platform and
device kind of this process. Nothing else counts: not the record of another JAX
release, not a record for another configuration. So a JAX upgrade withdraws a
kernel's trust until ``seamline check`` passes again, and the planner says why.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seamline.contracts import Attention
from seamline.contracts.conformance import current_environment, load_records, trust_problem


def untrusted_candidates(candidates: Sequence[Attention[Any]], required: bool) -> dict[str, str]:
    """Candidate name -> why it is not trusted; empty when conformance is not required."""
    if not required:
        return {}
    environment = current_environment()
    records = load_records()
    problems = {}
    for candidate in candidates:
        problem = trust_problem(candidate, environment, records)
        if problem is not None:
            problems[candidate.name] = problem
    return problems
