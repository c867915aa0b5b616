"""``terminate_as_interrupt``: SIGTERM as Ctrl-C, in the main thread, for the block only."""

from __future__ import annotations

import os
import signal
import threading

import pytest

from seamline.adapters.cli.stopping import (
    Terminated,
    by_sigterm,
    exit_code,
    stopped_by,
    terminate_as_interrupt,
)


def test_sigterm_raises_terminated_in_the_block_and_the_old_handler_is_back_after() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated), terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)  # the handler runs before the next line
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_second_sigterm_during_the_stop_meets_the_handler_found_before() -> None:
    seen: list[int] = []

    def stopped_twice() -> None:
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        finally:  # the stop under way, as a run's cleanup is
            os.kill(os.getpid(), signal.SIGTERM)

    before = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(Terminated), terminate_as_interrupt():
            stopped_twice()
        assert seen == [signal.SIGTERM]
    finally:
        signal.signal(signal.SIGTERM, before)


def test_outside_the_main_thread_sigterm_is_left_alone() -> None:
    found: list[object] = []

    def work() -> None:
        with terminate_as_interrupt():
            found.append(signal.getsignal(signal.SIGTERM))

    before = signal.getsignal(signal.SIGTERM)
    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert found == [before]


def test_terminated_is_an_interrupt_with_its_own_exit_code() -> None:
    assert isinstance(Terminated(), KeyboardInterrupt)
    assert exit_code(Terminated()) == 143
    assert exit_code(KeyboardInterrupt()) == 130


def test_a_plain_interrupt_raised_for_the_sigterm_is_still_the_sigterm_s() -> None:
    told: list[tuple[bool, int]] = []

    def waiting() -> None:  # Ray's ray.wait raises a KeyboardInterrupt of its own
        try:
            os.kill(os.getpid(), signal.SIGTERM)
        except Terminated:
            raise KeyboardInterrupt from None

    def stopped() -> None:  # as errors.py tells the stop, inside the block
        try:
            waiting()
        except KeyboardInterrupt as stop:
            told.append((by_sigterm(stop), exit_code(stop)))
            raise

    with pytest.raises(KeyboardInterrupt) as caught, terminate_as_interrupt():
        stopped()
    assert told == [(True, 143)]
    assert not isinstance(caught.value, Terminated)
    assert not by_sigterm(KeyboardInterrupt()), "a later Ctrl-C is Ctrl-C's"


def test_a_failed_write_that_names_no_file_is_placed_at_the_output(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # A full disk said "No space left on device: ..." and no file: a write() names none.
    import errno

    import typer

    from seamline.adapters.cli.errors import environment_errors

    def full() -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with pytest.raises(typer.Exit) as stopped:
        environment_errors(full, "the output was not published", writing="out/emb.jsonl")
    assert stopped.value.exit_code == 1
    said = capsys.readouterr().err
    assert "No space left on device (writing 'out/emb.jsonl'): the output was not" in said
    with pytest.raises(typer.Exit):
        environment_errors(lambda: open("/nonexistent/x"), "kept")  # noqa: SIM115
    assert "No such file or directory (/nonexistent/x): kept" in capsys.readouterr().err


def test_a_components_own_failure_is_one_line_and_exit_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `seamline search` printed a third-party model's traceback when its load() raised,
    # where `seamline run` says one line naming the component.
    import typer

    from seamline.adapters.cli.errors import user_errors
    from seamline.core.seams import mark_failure

    def load() -> None:
        failure = RuntimeError("token is the masked placeholder\nsecond line")
        mark_failure(failure, "model", "remote-bag", "load")
        raise failure

    with pytest.raises(typer.Exit) as stopped:
        user_errors(load)
    assert stopped.value.exit_code == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "failed: model 'remote-bag' (load) failed: RuntimeError: token is the masked placeholder…"
    ]

    def ours() -> None:
        raise RuntimeError("seamline's own bug")  # no component's call: shown whole

    with pytest.raises(RuntimeError, match="seamline's own bug"):
        user_errors(ours)

    def broke_its_contract() -> None:
        from seamline.contracts import ContractViolation

        failure = ContractViolation("apply returned float16")
        mark_failure(failure, "model", "remote-bag", "apply")
        raise failure

    # A component that broke its contract (an executor's report, outside any shard) got
    # 80 lines of traceback where a model's or loader's got one line: one line too.
    with pytest.raises(typer.Exit) as stopped:
        user_errors(broke_its_contract)
    assert stopped.value.exit_code == 1
    assert capsys.readouterr().err.strip().splitlines() == [
        "failed: model 'remote-bag' (apply) broke its contract: ContractViolation: apply "
        "returned float16"
    ]


def test_an_inner_stop_s_exit_code_passes_an_outer_user_errors_untouched(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Ctrl-C early in start-up: the inner call's `typer.Exit(130)` reached the outer
    # backstop's `except Exception`, which imported seamline.core (half imported by the
    # interrupt): two tracebacks and exit code 1.
    import sys

    import typer

    from seamline.adapters.cli.errors import user_errors

    def interrupted_inside() -> None:
        user_errors(_raise_interrupt, kept_on_interrupt="nothing was published")

    monkeypatch.setitem(sys.modules, "seamline.core", None)  # importing it would fail now
    with pytest.raises(typer.Exit) as stopped:
        user_errors(interrupted_inside)
    assert stopped.value.exit_code == 130
    assert capsys.readouterr().err.strip() == "interrupted: nothing was published"


def _raise_interrupt() -> None:
    raise KeyboardInterrupt


def test_sighup_is_taken_as_sigterm_is_with_its_own_exit_code() -> None:
    # A closed ssh session's SIGHUP ended a run at once: exit 129, no line, locks left.
    told: list[tuple[str, int]] = []

    def hung_up() -> None:  # as errors.py tells the stop, inside the block
        try:
            os.kill(os.getpid(), signal.SIGHUP)
        except KeyboardInterrupt as stop:
            told.append((stopped_by(stop), exit_code(stop)))
            raise

    before = signal.getsignal(signal.SIGHUP)
    with pytest.raises(Terminated), terminate_as_interrupt():
        hung_up()
    assert told == [("SIGHUP", 129)]
    assert signal.getsignal(signal.SIGHUP) is before
    assert not by_sigterm(Terminated(signal.SIGHUP))


def test_a_signal_found_ignored_stays_ignored_in_the_block_and_after() -> None:
    # nohup starts a run with SIGHUP ignored; the block made it stop the run all the same.
    before = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        with terminate_as_interrupt():
            assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN
            os.kill(os.getpid(), signal.SIGHUP)  # ignored: the block goes on
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, before)
