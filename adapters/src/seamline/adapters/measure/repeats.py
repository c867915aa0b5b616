"""Repeats of several sides, interleaved, and the spread of their times.

Interleaving is what keeps ratios fair on a shared machine: a burst of load hits every
side of a round, not all the repeats of one. The median is the figure; the fastest
and the slowest say how far to trust it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from typing import Any

from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.progress import Say, say_to_stderr


def spread(values: Sequence[float]) -> dict[str, float]:
    """The median, and the fastest and slowest around it (``median_s``, ``min_s``, ``max_s``)."""
    return {
        "median_s": statistics.median(values),
        "min_s": min(values),
        "max_s": max(values),
    }


def interleaved(
    sides: Sequence[str],
    repeats: int,
    run: Callable[[str], dict[str, Any]],
    load: LoadAverages,
    *,
    pause: float,
    say: Say = say_to_stderr,
) -> dict[str, list[dict[str, Any]]]:
    """``repeats`` rounds of one ``run(side)`` per side, in order, ``pause`` seconds before each.

    A side is anything ``run`` can time: a worker's request, an in-process run, a whole
    process started and waited for; it returns a dict with ``seconds``. The load is
    sampled after each round.
    """
    results: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for repeat in range(repeats):
        for side in sides:
            time.sleep(pause)
            result = run(side)
            results[side].append(result)
            say(f"  repeat {repeat + 1}/{repeats}  {side:<9}  {result['seconds']:8.3f} s")
        load.after_round()
    return results
