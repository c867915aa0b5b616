"""A Ctrl-C that Python dropped still stops the run before it publishes (core.stops).

A signal handler's ``KeyboardInterrupt`` raised while the main thread runs a callback whose
exceptions Python ignores (JAX's ``_xla_gc_callback``, a ``__del__``) was printed as
"Exception ignored" and dropped: the run went on, published over the last output, exit 0.
Here a monitor drops one the same way, from a ``__del__``, while the run is under way.
"""

from __future__ import annotations

import gc
import sys
from typing import ClassVar

import pytest

from seamline.contracts import BatchDone, ComponentConfig, Event, Monitor
from seamline.contracts.errors import NOTHING_COMMITTED
from seamline.core.config import parse_pipeline
from seamline.core.pipeline import Pipeline
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.stops import raise_kept_stop, stops_kept
from tests.core.toy import MemorySink, toy_registry


class _DropsAStop:
    """An object whose ``__del__`` raises ``KeyboardInterrupt``: Python reports it as
    unraisable and carries on, as it does for a signal that lands in a GC callback."""

    def __del__(self) -> None:
        raise KeyboardInterrupt


def drop_a_stop() -> None:
    _DropsAStop()
    gc.collect()


class DroppingMonitor(Monitor[ComponentConfig]):
    """Drops a Ctrl-C when the first batch is done."""

    name: ClassVar[str] = "dropping"
    contract_version: ClassVar[str] = "1.0"

    def observe(self, event: Event) -> None:
        if isinstance(event, BatchDone) and event.index == 1:
            drop_a_stop()


@pytest.fixture(autouse=True)
def _clean() -> None:
    MemorySink.reset()


def test_a_dropped_stop_is_raised_again_at_the_next_safe_point() -> None:
    with stops_kept():
        drop_a_stop()  # without the hook: "Exception ignored in: ... KeyboardInterrupt"
        with pytest.raises(KeyboardInterrupt):
            raise_kept_stop()
        raise_kept_stop()  # raised once, not again


class _DropsAnError:
    def __del__(self) -> None:
        raise ValueError("a __del__ bug")


def test_the_hook_before_keeps_everything_else_and_is_back_after_the_block(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[type[BaseException]] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda unraisable: seen.append(unraisable.exc_type))
    with stops_kept():
        drop_a_stop()
        _DropsAnError()
        gc.collect()
        assert seen == [ValueError], "a dropped stop is kept, anything else reported as before"
    raise_kept_stop()  # what the block kept is forgotten with it: nothing is raised
    drop_a_stop()
    assert seen == [ValueError, KeyboardInterrupt], "outside the block, Python's own hook"


def test_a_run_whose_ctrl_c_python_dropped_stops_and_publishes_nothing() -> None:
    dropping = ComponentInfo(
        "monitor",
        "dropping",
        f"{__name__}:DroppingMonitor",
        "tests",
        "0",
        "ok",
        "",
        DroppingMonitor,
        "1.0",
    )
    registry = Registry([*toy_registry().entries(), dropping])
    texts = [f"w{i} w{i}" for i in range(12)]
    text = (
        "pipeline: toy\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "monitors: [{use: dropping}]\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [8]}\n"
    )
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", registry), registry)
    with pytest.raises(KeyboardInterrupt):
        pipeline.run()
    assert True not in MemorySink.closed, "the run published after its Ctrl-C"
    assert len(MemorySink.records) < len(texts), "the run went on to the end"


@pytest.mark.parametrize("resume", [False, True])
def test_a_stop_before_the_run_met_its_output_says_nothing_was_committed(
    monkeypatch: pytest.MonkeyPatch, resume: bool
) -> None:
    # Ctrl-C in the first seconds (while the weights were pinned) said "what the sink last
    # committed is kept: run again with --resume", with no commit and no output folder.
    registry = toy_registry()
    text = (
        "pipeline: toy\n"
        "loader: {use: list, with: {texts: ['w w']}}\n"
        "model: {use: toy}\n"
        "sink: {use: memory}\n"
    )
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", registry), registry)

    def interrupted(*_: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(pipeline, "_decided", interrupted)
    with pytest.raises(KeyboardInterrupt) as stopped:
        pipeline.run(resume=resume)
    # Resuming, the last run's commit is still there to go on from.
    assert getattr(stopped.value, NOTHING_COMMITTED, False) is not resume


def test_runs_overlapping_in_two_threads_give_the_host_its_hook_back(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Two Pipeline.run()s in two threads, the first to begin ending first: each block put
    # back the hook it had found, and the host's was replaced for good by the keeping one
    # (which then stopped a later, unrelated run with a stale KeyboardInterrupt).
    import threading

    def host_hook(unraisable: object) -> None:
        pass

    monkeypatch.setattr(sys, "unraisablehook", host_hook)
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with stops_kept():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second() -> None:
        first_in.wait(10)
        with stops_kept():
            second_in.set()
            first_out.wait(10)
            assert sys.unraisablehook is not host_hook, "the second run's block lost its hook"

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert sys.unraisablehook is host_hook
    drop_a_stop()  # outside every block: the host's hook has it, nothing is kept
    raise_kept_stop()
