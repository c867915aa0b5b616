"""A component's call answered within a time limit, or left behind on its thread.

The host asks an attention's ``supports()`` and ``priority()`` this way before any work
(``seamline.core.attention.asking``), and the conformance suite asks them the same way
(``seamline.contracts.testing.attention``), so that a component slower than the host's
limit fails the suite rather than passing it and then stopping every run. One function
serves both, so the suite's way of asking cannot drift from the host's.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import TypeVar

_R = TypeVar("_R")


def answered_within(
    call: Callable[[], _R], seconds: float, name: str
) -> tuple[_R | None, threading.Thread | None]:
    """``(answer, None)`` when ``call`` returns within ``seconds``; ``(None, thread)`` when it
    does not, the daemon thread still running it left behind (a call cannot be stopped).

    It runs on a thread named ``name``, in a copy of the caller's context (its span, its
    context variables); what it raises is raised here, on the caller's thread.
    """
    answer: list[_R] = []
    failure: list[BaseException] = []

    def ask() -> None:
        try:
            answer.append(call())
        except BaseException as err:  # handed to the caller, on its own thread
            failure.append(err)

    context = contextvars.copy_context()
    thread = threading.Thread(target=context.run, args=(ask,), name=name, daemon=True)
    thread.start()
    thread.join(seconds)
    if thread.is_alive():
        return None, thread
    if failure:
        raise failure[0]
    return answer[0], None
