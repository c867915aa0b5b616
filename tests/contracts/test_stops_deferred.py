"""A stop (Ctrl-C, SIGTERM, SIGHUP) that comes while an output is published waits for the
publication's last rename, then takes its course: a publication is never half done.

One that came between two renames of a group (the manifest's and the primary file's)
left the new manifest beside the old files, the files not yet renamed deleted by the
group's cleanup. Each test sends the process the signal itself, from inside a step of
the publication (a wrapped step, so the moment is exact).
"""

from __future__ import annotations

import signal
import threading
from typing import TYPE_CHECKING, Any

import pytest

from seamline.contracts.sink_kit import AtomicFile, AtomicGroup, stops_deferred

if TYPE_CHECKING:
    from pathlib import Path

SIGNALS = [signal.SIGINT, signal.SIGTERM, signal.SIGHUP]


class Stopped(Exception):
    """What the test's handler raises for a signal (as the CLI's raises Terminated)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@pytest.fixture
def handlers() -> Any:
    """SIGINT, SIGTERM and SIGHUP raise :class:`Stopped` (put back after the test)."""
    found = {signum: signal.getsignal(signum) for signum in SIGNALS}

    def stop(signum: int, frame: Any) -> None:
        raise Stopped(signum)

    for signum in SIGNALS:
        signal.signal(signum, stop)
    yield stop
    for signum, handler in found.items():
        signal.signal(signum, handler)


def signal_after_the_first_rename(monkeypatch: pytest.MonkeyPatch, signum: int) -> list[Path]:
    """Send ``signum`` once the group's first file is renamed; what was renamed by then."""
    real = AtomicFile.publish
    renamed: list[Path] = []

    def publish(self: AtomicFile, **keywords: Any) -> None:
        real(self, **keywords)
        renamed.append(self.destination)
        if len(renamed) == 1:
            signal.raise_signal(signum)  # its handler runs before the next line

    monkeypatch.setattr(AtomicFile, "publish", publish)
    return renamed


@pytest.mark.parametrize("signum", SIGNALS, ids=lambda s: signal.Signals(s).name)
def test_a_stop_between_the_renames_of_a_group_comes_after_the_last(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, handlers: Any, signum: int
) -> None:
    names = ["out.manifest.json", "out.errors.jsonl", "out.jsonl"]
    for name in names:
        (tmp_path / name).write_text("old\n", encoding="utf-8")
    group = AtomicGroup()
    for name in names:
        group.open(tmp_path / name, purpose=name).write(b"new\n")
    renamed = signal_after_the_first_rename(monkeypatch, signum)
    with pytest.raises(Stopped) as stopped:
        group.publish()
    assert stopped.value.signum == signum
    assert renamed == [tmp_path / name for name in names], "every rename, then the stop"
    assert {p.name: p.read_text(encoding="utf-8") for p in tmp_path.iterdir()} == {
        name: "new\n" for name in names
    }, "the whole new output, no partial file left"
    assert signal.getsignal(signum) is handlers, "the handler found before is back"


def test_the_handlers_are_put_back_and_nothing_is_raised_without_a_signal(
    handlers: Any,
) -> None:
    with stops_deferred():
        assert all(signal.getsignal(signum) is not handlers for signum in SIGNALS)
    assert all(signal.getsignal(signum) is handlers for signum in SIGNALS)


def test_an_ignored_signal_stays_ignored(handlers: Any) -> None:
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    with stops_deferred():
        signal.raise_signal(signal.SIGHUP)
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def nested(steps: list[str]) -> None:
    with stops_deferred():
        with stops_deferred():
            signal.raise_signal(signal.SIGTERM)
            steps.append("inner done")
        steps.append("outer done")


def test_nested_blocks_hand_the_stop_out_to_the_outermost(handlers: Any) -> None:
    steps: list[str] = []
    with pytest.raises(Stopped):
        nested(steps)
    assert steps == ["inner done", "outer done"]


def failing() -> None:
    with stops_deferred():
        signal.raise_signal(signal.SIGINT)
        raise OSError("disk full")


def test_a_stop_that_comes_while_the_block_fails_still_comes(handlers: Any) -> None:
    with pytest.raises(Stopped) as stopped:
        failing()
    assert isinstance(stopped.value.__context__, OSError), "the failure is kept as context"


def test_off_the_main_thread_the_block_changes_nothing(handlers: Any) -> None:
    seen: list[Any] = []

    def publish() -> None:
        with stops_deferred():
            seen.append(signal.getsignal(signal.SIGTERM))

    thread = threading.Thread(target=publish)
    thread.start()
    thread.join()
    assert seen == [handlers]
