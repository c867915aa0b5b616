"""A benchmark worker that ends when its driver does, however the driver ends.

The driver watches each worker (its memory, its time) and kills it when it passes a
limit. A driver that was stopped (a SIGTERM, a Ctrl-C sent to it alone) or killed left
its worker running on, adopted by init, with neither watchdog nor timeout: a measurement
of 20 GiB could go on for as long as it took. The driver kills its worker when it
stops (:func:`seamline.adapters.bench_attention.driver.run_watched`); on Linux the
kernel also kills the worker when the driver dies of a signal that no code outlives
(SIGKILL, the out-of-memory killer): :func:`dies_with_this_process`.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable

PR_SET_PDEATHSIG = 1
"""``prctl`` option (linux/prctl.h): the signal a process gets when its parent dies."""


def dies_with_this_process() -> Callable[[], None] | None:
    """A ``preexec_fn`` that has the kernel SIGKILL the child when this process ends.

    None where the kernel has no such request (not Linux) or the C library cannot be
    read: the driver's own kill on a stop still applies there.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    parent = os.getpid()

    def arm() -> None:  # in the child, between fork and exec
        prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
        if os.getppid() != parent:  # the driver died before the request was made
            os._exit(1)

    return arm
