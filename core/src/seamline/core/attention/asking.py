"""Asking an attention ``supports(spec)`` or ``priority(spec)`` with a time limit.

Both are a third party's code, called before any work: a ``supports()`` that blocked
(on a GPU driver, a lock, the network) hung ``seamline explain``, ``components
--auto-order`` and every ``auto`` run, naming nothing, though no pipeline named it; a
``priority()`` that blocked did the same, since ``auto`` asks it first, to order the
candidates. Each is asked on a daemon thread and given up on when it does not answer in
:data:`ASK_TIMEOUT_S`, as a monitor that does not return is left behind
(:mod:`seamline.core.monitor_hub`). While that answer is still outstanding the
candidate is refused at once for the same call, so a hang costs a command one timeout,
not one per shape; once it has come (a stall, not a hang), the candidate is asked again.
Refusing it for good after one slow answer made a server whose attention was pinned
answer 500 for every new shape for the rest of its life, while ``/healthz`` said ready.
Each timeout is a warning: under ``auto`` the shape goes to the next candidate, which an
operator should hear about.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any, Literal

from seamline.contracts import Attention, AttentionSpec
from seamline.contracts.attention import ASK_TIMEOUT_S
from seamline.contracts.logs import get_logger
from seamline.contracts.time_limit import answered_within

Question = Literal["supports", "priority"]
"""The two methods asked before any work."""

_HUNG: weakref.WeakKeyDictionary[Attention[Any], dict[Question, threading.Thread]] = (
    weakref.WeakKeyDictionary()
)
"""The candidates with a call that did not answer in time, each with the thread still
asking (each is left behind)."""

log = get_logger("seamline.core")


class AskTimeout(Exception):
    """``supports()`` or ``priority()`` did not answer in time."""


def asked(
    candidate: Attention[Any], spec: AttentionSpec, question: Question = "supports"
) -> object:
    """``candidate.supports(spec)`` (or ``.priority(spec)``), or :class:`AskTimeout`; what it
    raises, raised."""
    said = f"{question}() did not answer in {ASK_TIMEOUT_S:g} s"
    hung = _HUNG.get(candidate, {})
    waiting = hung.get(question)
    if waiting is not None:
        if waiting.is_alive():
            raise AskTimeout(f"{said} (asked earlier, and still not answered)")
        del hung[question]  # it answered in the end: a stall, asked again
    method = getattr(candidate, question)
    answer, thread = answered_within(
        lambda: method(spec), ASK_TIMEOUT_S, f"{question}-{candidate.name}"
    )
    if thread is not None:
        _HUNG.setdefault(candidate, {})[question] = thread
        log.warning(
            f"attention {question}() did not answer in time; refused for this shape",
            attention=candidate.name,
            seconds=ASK_TIMEOUT_S,
            spec=str(spec)[:200],
        )
        raise AskTimeout(said)
    return answer
