"""Asking an attention ``supports(spec)`` with a time limit.

``supports()`` is a third party's code, called before any work: one that blocked (on
a GPU driver, a lock, the network) hung ``seamline explain``, ``components
--auto-order`` and every ``auto`` run, naming nothing, though no pipeline named it.
It is asked on a daemon thread and refused when it does not answer in
:data:`SUPPORTS_TIMEOUT_S`, as a monitor that does not return is left behind
(:mod:`seamline.core.monitor_hub`); a candidate that timed out once is refused at
once afterwards, so a hang costs a command one timeout, not one per shape.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from typing import Any

from seamline.contracts import Attention, AttentionSpec

SUPPORTS_TIMEOUT_S = 5.0
"""How long ``supports()`` may take: it answers from shapes and names, in microseconds."""

_HUNG: weakref.WeakSet[Attention[Any]] = weakref.WeakSet()
"""The candidates whose ``supports()`` did not answer in time (each is left behind)."""


class SupportsTimeout(Exception):
    """``supports()`` did not answer in time."""


def asked(candidate: Attention[Any], spec: AttentionSpec) -> object:
    """``candidate.supports(spec)``, or :class:`SupportsTimeout`; what it raises, raised."""
    said = f"supports() did not answer in {SUPPORTS_TIMEOUT_S:g} s"
    if candidate in _HUNG:
        raise SupportsTimeout(f"{said} (asked earlier)")
    answer: list[object] = []
    failure: list[BaseException] = []

    def ask() -> None:
        try:
            answer.append(candidate.supports(spec))
        except BaseException as err:  # handed to the caller, on its own thread
            failure.append(err)

    context = contextvars.copy_context()
    thread = threading.Thread(
        target=context.run, args=(ask,), name=f"supports-{candidate.name}", daemon=True
    )
    thread.start()
    thread.join(SUPPORTS_TIMEOUT_S)
    if thread.is_alive():
        _HUNG.add(candidate)
        raise SupportsTimeout(said)
    if failure:
        raise failure[0]
    return answer[0]
