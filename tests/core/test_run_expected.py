"""``RunStarted.expected``: the whole input's size as the loader says it (loader contract
1.1), asked once, across the loader's seam, and never fatal to a run."""

from __future__ import annotations

from typing import Any

import pytest
import structlog

from seamline.contracts import RunStarted, Shard
from seamline.core import Pipeline, input_size
from tests.core.toy import ListLoader, MemorySink, RecordingMonitor, toy_registry

PIPELINE = {
    "pipeline": "sized",
    "loader": {"use": "list", "with": {"texts": ["one", "two", "!bad"]}},
    "model": {"use": "toy"},
    "attention": {"use": "native"},
    "sink": {"use": "memory"},
}


def expected_of_a_run() -> list[int | None]:
    MemorySink.reset()
    recorder = RecordingMonitor(RecordingMonitor.Config())
    RecordingMonitor.events.clear()
    Pipeline.from_dict(PIPELINE, registry=toy_registry()).run(extra_monitors=[recorder])
    return [e.expected for e in RecordingMonitor.events if isinstance(e, RunStarted)]


def test_a_loader_without_size_runs_with_no_total() -> None:
    assert expected_of_a_run() == [None]
    assert len(MemorySink.records) == 2


def test_the_whole_inputs_size_reaches_the_monitors(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Shard] = []

    def size(self: ListLoader, *, shard: Shard = Shard()) -> int:
        asked.append(shard)
        return len(self.config.texts)

    monkeypatch.setattr(ListLoader, "size", size, raising=False)
    assert expected_of_a_run() == [3]
    assert asked == [Shard()], "asked once, for the whole input"


@pytest.mark.parametrize("answer", [RuntimeError("disk gone"), -1, "3", True])
def test_a_failing_or_wrong_size_leaves_the_total_unknown(
    monkeypatch: pytest.MonkeyPatch, answer: Any
) -> None:
    def size(self: ListLoader, *, shard: Shard = Shard()) -> Any:
        if isinstance(answer, Exception):
            raise answer
        return answer

    monkeypatch.setattr(ListLoader, "size", size, raising=False)
    assert expected_of_a_run() == [None]
    assert len(MemorySink.records) == 2, "the run itself went on"


def test_a_slow_count_is_said_naming_the_loader(monkeypatch: pytest.MonkeyPatch) -> None:
    """A loader that counted by reading everything delayed the start without a word."""
    clock = iter([100.0, 107.5])
    monkeypatch.setattr(input_size, "monotonic", lambda: next(clock))
    monkeypatch.setattr(ListLoader, "size", lambda self, *, shard=Shard(): 3, raising=False)
    with structlog.testing.capture_logs() as logs:
        assert expected_of_a_run() == [3]
    (warning,) = [e["event"] for e in logs if "to count its input" in e["event"]]
    assert "loader 'list'" in warning
    assert "took 7.5 s" in warning
    assert "answer size() None when counting is not cheap" in warning


def test_a_quick_count_says_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ListLoader, "size", lambda self, *, shard=Shard(): 3, raising=False)
    with structlog.testing.capture_logs() as logs:
        assert expected_of_a_run() == [3]
    assert [e for e in logs if "to count its input" in e["event"]] == []
