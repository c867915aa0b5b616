"""SIGTERM and SIGHUP stop a command as Ctrl-C does: the same clean stop, the same line.

Ctrl-C reaches Python as a ``KeyboardInterrupt`` raised in the main thread, and every
layer of a run already stops cleanly on one: the orchestrator ends the part without
publishing, the sink keeps its last checkpoint, and :mod:`.errors` prints one line that
says how to go on. A job scheduler, ``timeout``, Kubernetes or systemd stop a process
with SIGTERM instead, whose default action ends it at once: no line, no word of
``--resume``. While a command does its work, :func:`terminate_as_interrupt` makes
SIGTERM raise :class:`Terminated` (a ``KeyboardInterrupt``) in the main thread, so it
takes that very path; only the exit code tells the two apart (:func:`exit_code`). SIGHUP
(an ssh session closed, a CI runner's job cancelled) is taken the same way: its default
action ended a run with exit code 129, no line, and its locks left behind. The
handler also records which signal came (:func:`stopped_by`): a library the interrupt
passes through may raise a plain ``KeyboardInterrupt`` of its own in its place (Ray's
``ray.wait`` does, for any exception a signal handler raised while it waited).

The handler is installed by the command that wants it (``seamline run``), in the main
thread only (Python delivers signals there), and only for the duration of the work:
``seamline serve`` keeps uvicorn's own SIGTERM handling, and an application that embeds
seamline keeps its own. A second SIGTERM while the first one's stop is under way ends
the process at once, as the handler found before (by default: killed by SIGTERM); the
last checkpoint is kept either way, as after a SIGKILL. A SIGHUP is such a second signal
after a SIGTERM, and the other way round.

A signal the process was started with ignored stays ignored: ``nohup`` starts a command
with SIGHUP ignored so that it outlives the session, and a run under it still stopped
("interrupted (SIGHUP): nothing was published") when the terminal closed, its work lost.
"""

from __future__ import annotations

import _thread
import atexit
import contextlib
import functools
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, NoReturn

INTERRUPTED = 130
"""The exit code of Ctrl-C (128 + SIGINT, as a shell reports a process SIGINT ended)."""
TERMINATED = 128 + signal.SIGTERM
"""The exit code of a SIGTERM (143), as a shell reports a process SIGTERM ended."""
HUNG_UP = 129
"""The exit code of a SIGHUP (128 + 1), as a shell reports a process SIGHUP ended."""
STOPPED = (INTERRUPTED, TERMINATED, HUNG_UP)
"""The exit codes of a command a stop ended."""
_SIGNALS = tuple(
    found for found in (signal.SIGTERM, getattr(signal, "SIGHUP", None)) if found is not None
)
"""The signals taken as Ctrl-C (Windows has no SIGHUP)."""


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised as Ctrl-C's ``KeyboardInterrupt`` is, so that it stops a run
    the same way; ``signum`` is the signal's number."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__()
        self.signum = signum


_received = {"signum": 0}
"""The signal whose handler of the current :func:`terminate_as_interrupt` block ran (0: none)."""


def stopped_by(stop: KeyboardInterrupt) -> str:
    """The signal that raised ``stop`` (``SIGTERM``, ``SIGHUP``), or "" for Ctrl-C's own:
    :class:`Terminated`'s, or the one whose handler ran when a library raised ``stop``."""
    signum = stop.signum if isinstance(stop, Terminated) else _received["signum"]
    return signal.Signals(signum).name if signum else ""


def by_sigterm(stop: KeyboardInterrupt) -> bool:
    """Whether ``stop`` is a SIGTERM's: :class:`Terminated`, or what a library raised for it."""
    return stopped_by(stop) == "SIGTERM"


def exit_code(stop: KeyboardInterrupt) -> int:
    """143 for a SIGTERM, 129 for a SIGHUP, 130 for Ctrl-C (128 + the signal's number)."""
    name = stopped_by(stop)
    return 128 + signal.Signals[name].value if name else INTERRUPTED


class Block:
    """What a :func:`terminate_as_interrupt` block learns from its command."""

    def __init__(self) -> None:
        self.after: tuple[str, str] | None = None
        """Set once the command's work is done and told (``seamline run``: its output
        published, its summary printed): where a signal after the block finds it, and what
        that leaves (``("after the output was published", "out/emb.jsonl is complete;
        ...")``)."""


_process = {"ends_with_command": False}
"""Whether this process ends when its command does (the ``seamline`` entry point)."""


def ending_with_the_command() -> None:
    """Say that the process ends with its command (:func:`.main.main`, not a test's runner).

    Then a block whose command told :attr:`Block.after` leaves its handler in place of the
    one found before: a signal while Python exits (the teardown of JAX's modules takes
    seconds) met SIGTERM's default action and ended a finished run, its summary printed,
    killed by the signal with no line. In a process that goes on after the command (a
    test's runner) the handlers found before are put back, as always.
    """
    _process["ends_with_command"] = True


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[Block]:
    """Within the block, SIGTERM and SIGHUP raise :class:`Terminated` in the main thread.

    Outside the main thread (where no signal handler can be installed) the block runs with
    the signals as they were, and so does a signal found ignored (``nohup``'s SIGHUP: the
    user asked that it not stop the command). The handlers found before are put back when
    the block ends, and as soon as one of the signals came (a second one then does not
    wait), except after a block whose command told :attr:`Block.after`, in a process that
    ends with it (:func:`ending_with_the_command`): there a signal says that line and ends
    the process with the signal's exit code. A stop is told inside the block (:mod:`.errors`
    within it), where :func:`stopped_by` still knows of the signal.
    """
    block = Block()
    if threading.current_thread() is not threading.main_thread():
        yield block
        return
    found = {signum: signal.getsignal(signum) for signum in _SIGNALS}
    before = {signum: signal.SIG_DFL if was is None else was for signum, was in found.items()}

    def put_back() -> None:
        for signum, handler in before.items():
            signal.signal(signum, handler)

    def stop(signum: int, frame: FrameType | None) -> None:
        put_back()  # a second signal does not wait for the first one's stop
        _received["signum"] = signum
        raise Terminated(signum)

    # A signal ignored by the one who started the process (nohup's SIGHUP) stays so.
    taken = [signum for signum, was in found.items() if was is not signal.SIG_IGN]
    _received["signum"] = 0
    for signum in taken:
        signal.signal(signum, stop)
    try:
        yield block
    finally:
        _received["signum"] = 0  # the stop was told inside the block
        if block.after is not None and _process["ends_with_command"]:
            from seamline.adapters.cli.render.console import lines_are_records

            as_record = lines_are_records()  # the command's --log-format json, still in force
            late = functools.partial(_stopped_late, *block.after, put_back, as_record)
            for signum in taken:
                signal.signal(signum, late)
        else:
            put_back()


def _stopped_late(
    when: str,
    kept: str,
    put_back: Callable[[], None],
    as_record: bool,
    signum: int,
    frame: FrameType | None,
) -> None:
    """A signal after the command finished (while Python exits): the line (a JSON record
    under ``--log-format json``, as :func:`.render.console.interrupted` writes), then the
    exit."""
    put_back()
    for stream in (sys.stdout, sys.stderr):  # the summary first, as it was printed
        with contextlib.suppress(Exception):
            stream.flush()
    name = signal.Signals(signum).name
    said = f"interrupted ({name}) {when}: {kept}\n"
    if as_record:
        from seamline.adapters.cli.render.console import record

        fields = {"signal": name, "when": when, "kept": kept, "exit_code": 128 + signum}
        said = record("warning", "interrupted", **fields) + "\n"
    with contextlib.suppress(OSError):
        os.write(2, said.encode("utf-8", errors="replace"))
    if not sys.is_finalizing():  # the exit handlers have not run yet
        atexit._run_exitfuncs()
    os._exit(128 + signum)


@contextlib.contextmanager
def dropped_stops_raised_again() -> Iterator[None]:
    """Within the block, a Ctrl-C or SIGTERM that Python would drop is raised again.

    A signal's handler raises its ``KeyboardInterrupt`` (or :class:`Terminated`) in
    whatever Python code the main thread runs at that moment. In a callback whose
    exceptions Python ignores (JAX's garbage-collection callback ``_xla_gc_callback``, a
    ``__del__``, a weakref callback) Python printed "Exception ignored in: ..." and
    dropped it: ``seamline explain`` or ``search`` then did its work and exited 0 (3 of
    12 Ctrl-C's). ``sys.unraisablehook`` is where Python reports what it drops; the hook
    installed here posts such a stop again (:func:`_post_again`), to be raised at the
    main thread's next instruction, outside the callback, where it takes the path every
    other stop takes: the ``interrupted`` line and exit code 130 (143, 129). Anything
    else Python drops goes to the hook found before, as it did; that hook is put back
    after the block. (A run keeps the stops dropped while it works for its next safe
    point instead: :func:`seamline.core.stops_kept`, installed over this one.)
    """
    before = sys.unraisablehook

    def hook(unraisable: Any) -> None:
        stop = unraisable.exc_value
        if not (isinstance(stop, KeyboardInterrupt) and _post_again(stop)):
            before(unraisable)

    sys.unraisablehook = hook
    try:
        yield
    finally:
        if sys.unraisablehook is hook:  # a host that replaced it meanwhile keeps its own
            sys.unraisablehook = before


def _post_again(stop: KeyboardInterrupt) -> bool:
    """Have ``stop`` raised again in the main thread once Python's report of it is over;
    False where it cannot be (outside the main thread, where no signal's handler raised it).

    A Ctrl-C is posted again to SIGINT's handler (Python's, or ``serve``'s server's, which
    stops it its own way). A SIGTERM's handler is already gone by now
    (:func:`terminate_as_interrupt`'s puts back the one found before as it raises), as is
    a Ctrl-C's where SIGINT is not Python's: there a handler of one use is installed,
    which puts back the one it found and raises ``stop``. :func:`_thread.interrupt_main`
    runs the handler as if the signal had come again. Not from here: Python runs a
    signal's handler at the next instruction, which would be in the hook itself, whose
    exceptions Python drops too; a thread posts it once the hook has returned
    (:func:`_post_when_out`).
    """
    if threading.current_thread() is not threading.main_thread():
        return False
    signum = stop.signum if isinstance(stop, Terminated) else signal.SIGINT
    found = signal.getsignal(signum)

    def again(signum: int, frame: FrameType | None) -> None:
        signal.signal(signum, signal.SIG_DFL if found is None else found)
        raise stop

    if isinstance(stop, Terminated) or not callable(found):
        signal.signal(signum, again)
    hook = sys._getframe(1)
    threading.Thread(
        target=_post_when_out, args=(signum, hook), name="seamline-stop-again", daemon=True
    ).start()
    return True


def _post_when_out(signum: int, hook: FrameType) -> None:
    """Post ``signum`` to the main thread once its stack no longer holds ``hook``'s frame
    (at most a few seconds later: a hook that hangs does not keep the stop back)."""
    main = threading.main_thread().ident
    for _ in range(5000):
        frame = sys._current_frames().get(main or 0)
        while frame is not None and frame is not hook:
            frame = frame.f_back
        if frame is None:
            break
        time.sleep(0.001)
    del frame, hook
    _thread.interrupt_main(signal.Signals(signum))


def leave_after_stop(code: int) -> NoReturn:
    """End the process of a command a stop ended (exit ``code``) without Python's teardown.

    A Ctrl-C during a run's first compile leaves XLA compiling in a thread of JAX's own:
    Python's exit then tore the modules down, JAX's client among them, under that
    compile, and the process died of a segmentation fault after its ``interrupted`` line
    (exit code 139, not 130, and a core file of some 300 MB in the working folder where
    core dumps are on); a stop during jaxlib's import could abort the same way (134).
    By the time a command's exit reaches here its own cleanup has run (the ``finally``
    blocks: the part ended unpublished, the checkpoint kept, the line printed); what is
    left is what Python's exit does first: the exit handlers (:mod:`atexit`: the last
    spans of the trace written, the logs flushed) run here, stdout and stderr are
    flushed, and the process ends with ``code``, skipping only the teardown of modules.
    """
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):  # a closed pipe, a full disk: the code stands
            stream.flush()
    os._exit(code)
