"""Fault-injection components for the reliability tests, registered through entry points.

Like the scaling tests' components, this is an installed-looking distribution (this
module and its ``dist-info``), so that ``seamline run`` subprocesses discover it from
``PYTHONPATH`` and errors name its distribution, ``seamline-fixture-faults``.

- ``fault-raise``, ``fault-nan``: attention that is right until its ``at``-th call
  *while running* (a host callback counts the executions of the compiled code, the
  verification probe's included), then raises, or returns NaN, on every call;
- ``fault-shape``: attention that returns the wrong shape (found at trace time); it
  ranks itself first under ``auto``;
- ``fault-loader``: ``documents`` short documents ``d0``, ``d1``..., cursor = index;
  reading document ``raise_at`` (or the one ``SEAMLINE_FAULT_RAISE=read:<i>`` names)
  raises;
- ``fault-jsonl``: the ``jsonl`` sink, whose n-th write or commit raises
  (``SEAMLINE_FAULT_RAISE=write:<n>`` or ``commit:<n>``), and which kills its own
  process with SIGKILL at the point that
  ``SEAMLINE_FAULT_KILL=<point>:<n>`` names (so a kill needs no change to the
  pipeline file, which a resume would refuse): ``write`` (before the n-th write),
  ``commit`` (before the n-th commit), ``mid-commit`` (the n-th commit, after the
  partial files are synced and the new checkpoint written, just before it is renamed
  into place), ``after-commit`` (just after the n-th commit), ``publish`` (before the
  n-th rename while publishing: 1 is the errors file, the last is the manifest);
  ``SEAMLINE_FAULT_SLOW=<seconds>`` makes it sleep that long before each write, so
  that a run lasts longer than the moments a test kills it at, on any machine;
  ``SEAMLINE_FAULT_HOLD=<file>`` makes it wait before its first write until that file
  exists (five minutes at most), holding the destination for as long as a test needs,
  however slowly the machine starts what the test runs meanwhile;
- ``fault-sharded``: an executor that runs ``shards`` shards one after the other in the
  driver's process (so a kill of it is a kill of the driver), for the staged publication
  of parquet and lancedb; ``SEAMLINE_FAULT_KILL`` names where it dies: ``planned:1``
  (the staging area begun, before any shard runs), ``staged-rename:<n>`` (before the n-th
  rename into the output's folder while the driver publishes: 1 is the errors file, the
  last is the manifest) or ``staged-renamed:<n>`` (just after it: after the manifest,
  before the staging area is deleted);
- ``SEAMLINE_FAULT_WRITE_FD1=1`` makes the sink write a line to file descriptor 1 at each
  write, as a C library would;
- ``SEAMLINE_FAULT_DROP_STOP=1`` makes importing this module drop a ``KeyboardInterrupt``
  the way Python drops a Ctrl-C that lands in JAX's garbage-collection callback while
  JAX is imported ("Exception ignored in: ... KeyboardInterrupt"), during discovery.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from pydantic import Field

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.contracts import (
    Attention,
    AttentionSpec,
    ComponentConfig,
    Document,
    DocumentError,
    ExecutionReport,
    Executor,
    Job,
    Loaded,
    Loader,
    OutputRecord,
    SegmentIds,
    Shard,
    Support,
)
from seamline.contracts.kernel_kit import reference_attention


class _DropsAStop:
    def __del__(self) -> None:
        raise KeyboardInterrupt


if os.environ.get("SEAMLINE_FAULT_DROP_STOP"):
    _DropsAStop()  # dropped at once (no reference is kept): "Exception ignored in"

KILL = "SEAMLINE_FAULT_KILL"
RAISE = "SEAMLINE_FAULT_RAISE"
SLOW = "SEAMLINE_FAULT_SLOW"
HOLD = "SEAMLINE_FAULT_HOLD"
HOLD_LIMIT_S = 300.0
WRITE_FD1 = "SEAMLINE_FAULT_WRITE_FD1"
"""Faults named by the environment, not the pipeline file: a resume refuses a changed one."""


def _point(variable: str) -> tuple[str, int] | None:
    """``<point>:<n>`` from the environment variable, or None."""
    value = os.environ.get(variable)
    if not value:
        return None
    point, _, count = value.partition(":")
    return point, int(count or 1)


class FaultAttentionConfig(ComponentConfig):
    at: int = Field(default=1, ge=1, description="The first call that fails (1-based).")


class _FaultAttention(Attention[FaultAttentionConfig]):
    contract_version: ClassVar[str] = "1.1"
    Config = FaultAttentionConfig
    is_reference: ClassVar[bool] = False

    def __init__(self, config: FaultAttentionConfig) -> None:
        super().__init__(config)
        self.calls = 0

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.yes()

    def _failing(self, _: Any) -> np.ndarray:
        """Host side of the callback: count this execution; whether it is to fail."""
        self.calls += 1
        return np.asarray(self.calls >= self.config.at)

    def _reference(
        self, q: jax.Array, k: jax.Array, v: jax.Array, **kwargs: Any
    ) -> tuple[jax.Array, jax.Array]:
        out = reference_attention(q, k, v, **kwargs)
        failing = jax.pure_callback(
            self._failing, jax.ShapeDtypeStruct((), jnp.bool_), q[0, 0, 0, 0]
        )
        return out, failing


class RaisingAttention(_FaultAttention):
    name: ClassVar[str] = "fault-raise"

    def _failing(self, anything: Any) -> np.ndarray:
        if super()._failing(anything):
            raise RuntimeError(f"injected kernel fault at call {self.calls}")
        return np.asarray(False)

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        out, failing = self._reference(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)
        return jnp.where(failing, jnp.zeros_like(out), out)  # keeps the callback alive


class NanAttention(_FaultAttention):
    name: ClassVar[str] = "fault-nan"

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        out, failing = self._reference(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)
        return jnp.where(failing, jnp.full_like(out, jnp.nan), out)


class WrongShapeAttention(_FaultAttention):
    name: ClassVar[str] = "fault-shape"
    auto_priority: ClassVar[int] = 1000

    def __call__(
        self,
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        out = reference_attention(q, k, v, segment_ids=segment_ids, causal=causal, scale=scale)
        return out[:, :, :1]


class FaultLoaderConfig(ComponentConfig):
    documents: int = Field(ge=0)
    raise_at: int | None = None


class FaultLoader(Loader[FaultLoaderConfig]):
    """``d<i>``: a few words that vary with ``i``; the position is the cursor.

    ``SEAMLINE_FAULT_RAISE=init:1`` makes its constructor fail as a plugin's that opens a
    missing file does (an OSError with an errno), ``init:2`` with a RuntimeError."""

    name: ClassVar[str] = "fault-loader"
    contract_version: ClassVar[str] = "1.0"
    Config = FaultLoaderConfig

    def __init__(self, config: FaultLoaderConfig) -> None:
        super().__init__(config)
        injected = _point(RAISE)
        if injected == ("init", 1):
            open("/nonexistent-seamline-fault/input.txt", encoding="utf-8").close()
        if injected == ("init", 2):
            raise RuntimeError("injected constructor fault")

    def read(self, *, shard: Shard = Shard(), after: str | None = None) -> Iterator[Loaded]:
        first = 0 if after is None else int(after) + 1
        injected = _point(RAISE)
        raise_at = injected[1] if injected and injected[0] == "read" else self.config.raise_at
        for i in range(first, self.config.documents):
            if not shard.owns(i):
                continue
            if i == raise_at:
                raise RuntimeError(f"injected loader fault at document d{i}")
            item: Document | DocumentError = Document(
                f"d{i}", " ".join(f"w{(i * 7 + j) % 13}" for j in range(1 + i % 6))
            )
            yield Loaded(str(i), item)


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _wait_for(release: Path) -> None:
    """Wait until ``release`` exists, or :data:`HOLD_LIMIT_S` has passed (then go on: a test
    that never releases its run fails on what it asserts, not by hanging the suite)."""
    deadline = time.monotonic() + HOLD_LIMIT_S
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.02)


class FaultSink(JsonlSink):
    name: ClassVar[str] = "fault-jsonl"

    def __init__(self, config: JsonlSinkConfig) -> None:
        super().__init__(config)
        self._counts: dict[str, int] = {}
        self._kill = _point(KILL)
        self._raise = _point(RAISE)
        self._slow = float(os.environ.get(SLOW) or 0)
        self._hold = os.environ.get(HOLD)

    def _reached(self, point: str) -> bool:
        """Count ``point``; die there if it is the kill point, raise if it is the fault's."""
        self._counts[point] = self._counts.get(point, 0) + 1
        if self._raise == (point, self._counts[point]):
            raise RuntimeError(f"injected sink fault at {point} {self._counts[point]}")
        return self._kill is not None and self._kill == (point, self._counts[point])

    def relocated(self, directory: Any) -> FaultSink:
        config = self.config.model_copy(
            update={
                "path": directory / self.config.path.name,
                "errors_path": directory / self.config.resolved_errors_path().name,
            }
        )
        return FaultSink(config)

    def write(self, records: Sequence[OutputRecord]) -> None:
        if os.environ.get(WRITE_FD1):  # as a C library writes: below Python's sys.stdout
            os.write(1, b"fault-jsonl wrote to descriptor 1\n")
        if self._slow:
            time.sleep(self._slow)
        if self._hold:
            _wait_for(Path(self._hold))
            self._hold = None
        if self._reached("write"):
            _die()
        super().write(records)

    def commit(self, cursor: str) -> None:
        if self._reached("commit"):
            _die()
        mid = self._reached("mid-commit")
        with _dying_at_rename(1) if mid else contextlib.nullcontext():
            super().commit(cursor)
        if self._reached("after-commit"):
            _die()

    def close(self, complete: bool = True) -> None:
        kill = self._kill
        if complete and kill is not None and kill[0] == "publish":
            with _dying_at_rename(kill[1]):
                super().close(complete)
            return
        super().close(complete)


@contextlib.contextmanager
def _dying_at_rename(n: int) -> Iterator[None]:
    """SIGKILL this process instead of the ``n``-th ``os.replace`` under this block."""
    real = os.replace
    seen = 0

    def replace(source: Any, destination: Any) -> None:
        nonlocal seen
        seen += 1
        if seen == n:
            _die()
        real(source, destination)

    os.replace = replace  # type: ignore[assignment]
    try:
        yield
    finally:
        os.replace = real


class FaultShardedConfig(ComponentConfig):
    shards: int = Field(default=3, ge=2)


class FaultShardedExecutor(Executor[FaultShardedConfig]):
    """Every shard in the driver's process, one after the other; then, if
    ``SEAMLINE_FAULT_KILL`` says so, the driver dies at a rename of the publication."""

    name: ClassVar[str] = "fault-sharded"
    contract_version: ClassVar[str] = "1.0"
    Config = FaultShardedConfig

    def execute(self, job: Job) -> ExecutionReport:
        kill = _point(KILL)
        tasks = job.plan(self.config.shards)
        if kill == ("planned", 1):
            _die()
        worker = job.worker()
        try:
            reports = tuple(worker.run(task) for task in tasks)
        finally:
            worker.close()
        if kill is not None and kill[0] in ("staged-rename", "staged-renamed"):
            _dying_at_output_rename(kill[1], after=kill[0] == "staged-renamed")
        return ExecutionReport(self.name, reports, 1, 0.0)


def _dying_at_output_rename(n: int, *, after: bool) -> None:
    """SIGKILL this process before (``after``: just after) the ``n``-th ``os.replace`` of a
    temporary onto a file that is not hidden, in a folder that is not hidden (the output's,
    not its staging area's, nor a checkpoint, nor a previous file put back) from now on:
    the shards are done, so these are the driver's publication."""
    real = os.replace
    seen = 0

    def replace(source: Any, destination: Any) -> None:
        nonlocal seen
        path, temporary = Path(destination), Path(source).name
        published = temporary.startswith(".") and temporary.endswith(".tmp")
        ours = published and not path.name.startswith(".") and not path.parent.name.startswith(".")
        seen += ours
        if ours and seen == n and not after:
            _die()
        real(source, destination)
        if ours and seen == n and after:
            _die()

    os.replace = replace  # type: ignore[assignment]
