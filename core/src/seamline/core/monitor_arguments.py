"""The check of monitors a program passes in: ``Pipeline.run(extra_monitors=...)`` and
``Embedder(monitors=...)`` refuse the same mistakes, with the same words, before any work.

Without it an object lacking ``bind`` failed a run as a ``ShardFailed`` advising
``--resume``, and an ``Embedder`` took it with a logged "monitor failed" and went on, so a
monitor a program thought it had attached observed nothing it was meant to.
"""

from __future__ import annotations

from collections.abc import Sequence

from seamline.contracts.untrusted import a_type

MONITOR_NEEDS = "a name (a str), bind(publish), observe(event) and close()"


def check_monitors(monitors: object, argument: str, *, hint: str = "") -> None:
    """Refuse ``monitors`` unless it is a sequence of monitor instances, naming ``argument``.

    ``hint`` ends the message for a value that is not a sequence at all (what the caller
    may have meant instead).
    """
    if isinstance(monitors, str | bytes) or not isinstance(monitors, Sequence):
        raise TypeError(
            f"{argument} must be a list of monitors (objects with {MONITOR_NEEDS}: "
            f"subclass seamline.contracts.Monitor), not {type(monitors).__name__}{hint}"
        )
    for index, monitor in enumerate(monitors):
        if isinstance(monitor, type):  # its methods are there, unbound: every call failed
            raise TypeError(
                f"{argument}[{index}] is the class {monitor.__name__}, not a monitor: "
                f"pass an instance ({monitor.__name__}(...))"
            )
        missing = [] if isinstance(getattr(monitor, "name", None), str) else ["a name (a str)"]
        missing += [
            f"{method}()"
            for method in ("bind", "observe", "close")
            if not callable(getattr(monitor, method, None))
        ]
        if missing:
            raise TypeError(
                f"{argument}[{index}] is {a_type(monitor)} without {', '.join(missing)}: "
                f"a monitor has {MONITOR_NEEDS} (subclass seamline.contracts.Monitor, which "
                "gives bind() and close() their defaults)"
            )
