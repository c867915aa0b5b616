"""The load average through a run, and what it says about the numbers.

Benchmarks here run on shared machines. A 1-minute load above :data:`LOAD_WARNING`
means other processes competed for the CPUs: absolute times are inflated, and only
ratios of sides that were interleaved (each round hit alike) survive it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from seamline.adapters.measure.progress import Say, say_to_stderr

LOAD_WARNING = 1.5
"""A 1-minute load average above this means other processes competed for the CPUs."""


def load_now() -> list[float]:
    """The 1-, 5- and 15-minute load averages now."""
    return list(os.getloadavg())


@dataclass
class LoadAverages:
    """The load at the start, after each round and at the end of a run.

    Created at the start of a run; says a warning at once if the machine is already busy.
    The JSON form is ``{"start": [1, 5, 15 min], "end": [...], "after_each_round": [[...]]}``.
    """

    say: Say = say_to_stderr
    start: list[float] = field(default_factory=load_now)
    rounds: list[list[float]] = field(default_factory=list)
    end: list[float] | None = None

    def __post_init__(self) -> None:
        if self.start[0] > LOAD_WARNING:
            self.say(f"warning: the 1-minute load average is {self.start[0]:.2f} at the start")

    def after_round(self) -> list[float]:
        """Sample after a round (a repeat of every side, or one length of a sweep)."""
        sample = load_now()
        self.rounds.append(sample)
        return sample

    def finish(self) -> None:
        self.end = load_now()

    @property
    def exceeded(self) -> bool:
        """Whether any sample's 1-minute load was above :data:`LOAD_WARNING`."""
        samples = [self.start, *self.rounds, *([self.end] if self.end else [])]
        return max(sample[0] for sample in samples) > LOAD_WARNING

    def as_json(self) -> dict[str, Any]:
        return {"start": self.start, "end": self.end, "after_each_round": self.rounds}


def describe_load(
    load: Mapping[str, Any], warning: bool, cpus: int | None, *, interleaved: bool = True
) -> list[str]:
    """A report's load samples as a line, and the warning as a second one if it fired.

    ``load`` is a report's JSON form (``start``, ``end``, optionally ``after_each_round``).
    ``interleaved``: whether the sides took turns, so that ratios survive the load.
    """
    rounds = load.get("after_each_round") or []
    after = f" 1-min after each round {', '.join(f'{s[0]:.2f}' for s in rounds)};" if rounds else ""
    lines = [
        f"load average (1, 5, 15 min): start {_triple(load['start'])}, end "
        f"{_triple(load.get('end') or load['start'])};{after} {cpus} CPUs"
    ]
    if warning:
        lines.append(
            f"warning: the 1-minute load average exceeded {LOAD_WARNING}: other processes "
            "competed for the CPUs, so absolute times are inflated"
            + (" (ratios less so)" if interleaved else ", and ratios with them")
        )
    return lines


def _triple(values: Sequence[float]) -> str:
    return "/".join(f"{v:.2f}" for v in values)
