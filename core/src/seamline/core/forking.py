"""Refuse to run a model in a process forked from one whose JAX runtime had started.

XLA's runtime starts threads (its thread pools, the compilation cache's) that a
``fork()`` does not copy: a child that uses the runtime it inherited waits for ever on a
lock one of those threads held, with no error and no output (``multiprocessing``'s
default start method on Linux before Python 3.14, gunicorn's ``--preload``). It hung
both with an ``Embedder`` inherited from the parent and with one built in the child.

seamline cannot mend that, but it can say so at once: asking JAX for its devices
(:func:`seamline.core.devices.jax_devices`, which building a model does, before its first
call) marks the runtime started, and a child forked after that refuses to build or use a
model with a ``RuntimeError`` naming the fix. A runtime started by the application's own JAX
code, not seamline's, is not seen (JAX itself warns about the fork then).
"""

from __future__ import annotations

import os

_started_in: int | None = None
"""The process whose runtime seamline started (its pid), if any."""


def note_runtime_started() -> None:
    """Mark this process's JAX runtime as started (its devices were asked for).

    A record already made stays: in a child forked after the parent started the runtime it
    names the parent, and overwriting it with the child's own pid (``Pipeline.run`` asks for
    the devices before it builds the model) let the child through to hang for ever.
    """
    global _started_in
    if _started_in is None:
        _started_in = os.getpid()


def refuse_after_fork(what: str) -> None:
    """Raise ``RuntimeError`` if this process was forked after seamline started JAX here."""
    parent = _started_in
    if parent is None or parent == os.getpid():
        return
    raise RuntimeError(
        f"{what} cannot run in this process (pid {os.getpid()}): it was forked from process "
        f"{parent} after JAX's runtime started there, and a forked child waits for ever on "
        "the runtime's threads, which a fork does not copy. Start worker processes with "
        "multiprocessing.get_context('spawn') (or 'forkserver'), or fork before the parent "
        "builds or uses any model (gunicorn: no --preload)"
    )
