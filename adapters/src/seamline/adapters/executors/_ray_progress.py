"""The ``ray`` executor's view of its busy actors' progress, forwarded to the driver.

The application's monitors (the CLI's progress bar) live in the driver, the shards run
in actors. Every ``INTERVAL`` seconds the driver asks each busy actor how far its shard
has got (``ShardActor.progress``, answered from the actor's second concurrency slot while
``run`` holds the first) and hands each answer to ``job.progress`` (executor contract
1.2).

Why asking rather than the actors pushing to a queue: the answer is one small value per
actor (the last counts, not every event), no extra actor or queue has to be kept alive,
drained or sized, and an actor that dies or restarts simply does not answer. Nothing
waits: a question is sent and its answer collected on a later turn of the driver's loop
(``ray.wait`` with no timeout), and an actor is not asked again until it has answered.
An answer is forwarded only if the task it was asked about is still the one running
(the run's object ref): an answer about a try that failed meanwhile is dropped, so a
retried shard's counts are never those of an earlier try.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from seamline.contracts import Job, ShardProgress, ShardTask

INTERVAL = 0.5
"""Seconds between two questions to one actor: a progress bar's pace."""

Running = Mapping[Any, tuple[Any, ShardTask]]
"""A running task's object ref → the actor it runs on and the task."""


class ProgressPoller:
    """Asks busy actors for their shard's progress; forwards what they answer to the job."""

    def __init__(self, ray: Any, job: Job, interval: float = INTERVAL) -> None:
        self.ray = ray
        self.job = job
        self.interval = interval
        self._asked: dict[Any, Any] = {}
        """A question's object ref → the object ref of the task it asked about."""
        self._next = time.monotonic() + interval

    @property
    def questions(self) -> list[Any]:
        """The questions not answered yet (their object refs), to cancel when the run stops."""
        return list(self._asked)

    def wait_seconds(self) -> float:
        """How long the driver may wait for a shard before it should ask again."""
        return max(0.0, self._next - time.monotonic())

    def poll(self, running: Running) -> None:
        """Forward the answers that came; ask the busy actors again when it is time."""
        self._collect(running)
        if time.monotonic() < self._next:
            return
        self._next = time.monotonic() + self.interval
        waiting = set(self._asked.values())
        for task_ref, (actor, _) in running.items():
            if task_ref not in waiting:
                self._asked[actor.progress.remote()] = task_ref

    def _collect(self, running: Running) -> None:
        if not self._asked:
            return
        ready, _ = self.ray.wait(list(self._asked), num_returns=len(self._asked), timeout=0)
        for answer_ref in ready:
            task_ref = self._asked.pop(answer_ref)
            try:
                answer = self.ray.get(answer_ref)
            except Exception:  # the actor died: its task's fate comes with the task
                continue
            current = running.get(task_ref)
            if isinstance(answer, ShardProgress) and current and answer.shard == current[1].shard:
                self.job.progress(answer)
