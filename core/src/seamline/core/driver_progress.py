"""The run's progress on the driver, for the application's own monitors.

The application's monitors (``extra_monitors``: the CLI's progress bar, an embedding
application's observer) live in the driver's process. The ``local`` executor runs the
worker there, with them, and they see every event. An executor whose workers are other
processes forwards what its workers report instead (executor contract 1.2,
``Job.progress``); this turns those reports into the events those monitors already
understand, as if the run were one part:

- one ``RunStarted`` (with the whole input's ``expected`` size on a fresh run), when
  the first report comes;
- a ``BatchDone`` whenever the counts moved: ``documents`` is every item read so far
  over all shards (documents prepared and set aside alike: no ``DocumentFailed`` comes
  from here, the sink's errors hold those), ``examples`` and ``tokens`` what was added
  since the last one, ``index`` the batches so far, ``length`` 0 (many shapes at once);
- one ``RunFinished`` when the job closes, with the counts of the shards' reports:
  what the run's summary counts.

Each shard's latest report replaces its earlier one, so a retried shard is never
counted twice (its count may go back, to what its new try redoes). ``examples`` and
``tokens`` are only ever added to, past the highest total reached. The workers' own
monitors (``log``, ``metrics``) are not here: they run, and saw everything, where the
workers ran.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from seamline.contracts import (
    BatchDone,
    ExecutionReport,
    MonitorLike,
    RunCounts,
    RunFinished,
    RunStarted,
    ShardProgress,
)
from seamline.core.monitor_hub import MonitorHub


class DriverProgress:
    """Shards' reported counts in, the application's monitors' events out."""

    def __init__(self, monitors: Sequence[MonitorLike], started: Callable[[], RunStarted]) -> None:
        self._monitors = tuple(monitors)
        self._started = started
        """Makes the run's ``RunStarted`` (asked once, when the first report comes)."""
        self._hub: MonitorHub | None = None
        self._latest: dict[int, RunCounts] = {}
        self._shown: RunCounts | None = None
        self._highest = RunCounts()
        """The highest examples and tokens shown: added to, never taken from."""
        self._since = self._last = time.perf_counter()
        self._run_id = ""
        self._compilations = 0
        self.muted = False
        """Set when the application's monitors run in this process's worker: they see the
        worker's own events, and must not see the run twice."""

    @property
    def total(self) -> RunCounts:
        """Every shard's latest counts, added up."""
        return sum(self._latest.values(), RunCounts())

    def update(self, progress: ShardProgress) -> None:
        """A shard's latest counts (they replace what it reported before)."""
        if self.muted or not self._monitors:
            return
        self._latest[progress.shard.index] = progress.counts
        self._show()

    def settle(self, report: ExecutionReport) -> None:
        """Every shard's final counts, from the executor's report: the summary's figures."""
        if self.muted or not self._monitors:
            return
        for shard in report.shards:
            self._latest[shard.shard.index] = shard.counts
        self._compilations = sum(shard.compilations for shard in report.shards)
        self._show()

    def finish(self, ok: bool) -> None:
        """The run ended: a ``RunFinished`` with the counts shown, and the monitors closed."""
        hub, self._hub = self._hub, None
        self.muted = True  # nothing after the end
        if hub is None:
            return
        total = self.total
        hub.emit(
            RunFinished(
                self._run_id,
                total.documents,
                total.failed_documents,
                total.examples,
                total.tokens,
                total.batches,
                self._compilations,
                time.perf_counter() - self._since,
                ok,
            )
        )
        hub.close()

    def _show(self) -> None:
        total = self.total
        if total == self._shown:
            return
        hub = self._hub or self._start()
        highest = self._highest
        grown = RunCounts(
            examples=max(0, total.examples - highest.examples),
            tokens=max(0, total.tokens - highest.tokens),
        )
        self._highest = highest + grown
        now = time.perf_counter()
        seconds, self._last = now - self._last, now
        hub.emit(BatchDone(total.batches, 0, grown.examples, grown.tokens, seconds, total.read))
        self._shown = total

    def _start(self) -> MonitorHub:
        """The hub of the application's monitors, once it has something to show them."""
        self._hub = hub = MonitorHub(self._monitors)
        started = self._started()
        self._run_id = started.run_id
        self._last = time.perf_counter()
        hub.emit(started)
        return hub
