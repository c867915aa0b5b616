"""Starting Ray in a driver must not take over the process's SIGTERM.

``ray.init`` installs two SIGTERM handlers of its own in the driver: a Python one that
calls ``sys.exit(15)``, and (through its core worker) a C++ one that prints "*** SIGTERM
received ..." with a stack before handing on. A ``seamline run`` with the ``ray``
executor that a scheduler stopped therefore printed Ray's crash lines and exited 1,
instead of the clean stop the command gives a SIGTERM (``seamline.adapters.cli.stopping``:
nothing published, the checkpoint kept, one line, exit code 143). An application that
embeds seamline has the same claim to its own handling. :func:`sigterm_kept` puts back
whatever SIGTERM did before Ray started, Python's handler and the process's action alike
(setting a handler through :mod:`signal` replaces the C++ one too).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


@contextlib.contextmanager
def sigterm_kept() -> Iterator[None]:
    """Within the block (``ray.init``), SIGTERM may be taken over; after it, it is as before.

    Only in the main thread, the only one where Python sets signal handlers (and where
    Ray sets its own); a handler installed outside Python (None) is left as Ray made it.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.getsignal(signal.SIGTERM)
    try:
        yield
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)
