"""Which attention candidates a pipeline may trust when it sets ``require_conformance``.

Trust is a passing conformance record for the candidate's version and
configuration, on the JAX, jaxlib, platform and device kind of this process (the
policy and the record store: :mod:`seamline.core.conformance`). A candidate that
is not trusted is refused for every shape, with the reason and the command that
would earn the trust.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from seamline.contracts import Attention
from seamline.contracts.conformance import current_environment
from seamline.core.conformance import load_records, trust_problem
from seamline.core.registry import ComponentInfo


def untrusted_candidates(
    candidates: Sequence[Attention[Any]],
    infos: Mapping[str, ComponentInfo | None],
    required: bool,
) -> dict[str, str]:
    """Candidate name -> why it is not trusted; empty when conformance is not required.

    ``infos`` maps each candidate's name to the registry's entry for it (None for a
    component no entry point registers), whose version a record must match.
    """
    if not required:
        return {}
    environment = current_environment()
    records = load_records()
    problems = {}
    for candidate in candidates:
        problem = trust_problem(candidate, infos.get(candidate.name), environment, records)
        if problem is not None:
            problems[candidate.name] = problem
    return problems
