"""A stopped clock for ``select: measure``: each toy candidate "takes" a fixed time.

The tuning tests time candidates without running them: ``time_candidate`` is replaced
by one that records who was timed and answers the candidate's figure from a table.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.measure import Timing

TWO_CANDIDATES = """\
pipeline: {name}
loader: {{use: list, with: {{texts: ["a b", "c d e f g"]}}}}
model: {{use: toy}}
attention: {{use: [native, long-only], select: measure, verify: false}}
monitors: [{{use: recording}}]
sink: {{use: memory}}
run: {{batch_size: 4, buckets: [4, 8]}}
"""
"""A pipeline of two measured candidates over buckets 4 and 8 (``.format(name=...)``)."""

SPEEDS = {"native": 2e-3, "long-only": 1e-3}
"""``long-only`` is the faster of :data:`TWO_CANDIDATES`."""


def stop_the_clock(
    monkeypatch: pytest.MonkeyPatch, speeds: Mapping[str, float], calls: int = 3
) -> list[str]:
    """Each candidate takes ``speeds[name]`` seconds (fastest 0.9x, slowest 1.2x of it, over
    ``calls`` calls); returns the names timed, in order, as they are timed."""
    timed: list[str] = []

    def fake(attention: Any, specs: Any) -> Timing:
        timed.append(attention.name)
        seconds = speeds[attention.name]
        return Timing(seconds, seconds * 0.9, seconds * 1.2, calls)

    monkeypatch.setattr(tuning_module, "time_candidate", fake)
    return timed
