"""Asking an attention ``supports(spec)`` with a time limit.

``supports()`` is a third party's code, called before any work: one that blocked (on
a GPU driver, a lock, the network) hung ``seamline explain``, ``components
--auto-order`` and every ``auto`` run, naming nothing, though no pipeline named it.
It is asked on a daemon thread and refused when it does not answer in
:data:`SUPPORTS_TIMEOUT_S`, as a monitor that does not return is left behind
(:mod:`seamline.core.monitor_hub`). While that answer is still outstanding the
candidate is refused at once, so a hang costs a command one timeout, not one per shape;
once it has come (a stall, not a hang), the candidate is asked again. Refusing it for
good after one slow answer made a server whose attention was pinned answer 500 for every
new shape for the rest of its life, while ``/healthz`` said ready. Each timeout is a
warning: under ``auto`` the shape goes to the next candidate, which an operator should
hear about.
"""

from __future__ import annotations

import contextvars
import threading
import weakref
from typing import Any

from seamline.contracts import Attention, AttentionSpec
from seamline.contracts.logs import get_logger

SUPPORTS_TIMEOUT_S = 5.0
"""How long ``supports()`` may take: it answers from shapes and names, in microseconds."""

_HUNG: weakref.WeakKeyDictionary[Attention[Any], threading.Thread] = weakref.WeakKeyDictionary()
"""The candidates whose ``supports()`` did not answer in time, with the thread still
asking (each is left behind)."""

log = get_logger("seamline.core")


class SupportsTimeout(Exception):
    """``supports()`` did not answer in time."""


def asked(candidate: Attention[Any], spec: AttentionSpec) -> object:
    """``candidate.supports(spec)``, or :class:`SupportsTimeout`; what it raises, raised."""
    said = f"supports() did not answer in {SUPPORTS_TIMEOUT_S:g} s"
    waiting = _HUNG.get(candidate)
    if waiting is not None:
        if waiting.is_alive():
            raise SupportsTimeout(f"{said} (asked earlier, and still not answered)")
        del _HUNG[candidate]  # it answered in the end: a stall, asked again
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
        _HUNG[candidate] = thread
        log.warning(
            "attention supports() did not answer in time; refused for this shape",
            attention=candidate.name,
            seconds=SUPPORTS_TIMEOUT_S,
            spec=str(spec)[:200],
        )
        raise SupportsTimeout(said)
    if failure:
        raise failure[0]
    return answer[0]
