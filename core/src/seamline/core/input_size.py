"""How many items a loader says the whole input holds: the total of a run's progress bar.

The question is optional (loader contract 1.1, ``Loader.size``) and the answer is for
progress only, so nothing here may end a run: a loader that fails to count, or answers
what is not a count, leaves the total unknown, with a warning; ``read`` says what is
wrong, in the run's own terms.
"""

from __future__ import annotations

from collections.abc import Mapping
from time import monotonic
from typing import Any

from seamline.contracts import Loader, Shard
from seamline.contracts.logs import get_logger
from seamline.core.monitor_hub import MonitorHub
from seamline.core.registry import ComponentInfo
from seamline.core.seams import Seam

log = get_logger("seamline.core")

SLOW_SIZE_S = 5.0
"""Seconds past which a loader's count is said: the run waits for it before it starts."""


def whole_input_size(
    loader: Loader[Any], info: ComponentInfo | None, hidden: Mapping[str, str] | None = None
) -> int | None:
    """The items of the whole input (``Shard()``: every shard's bar counts toward it).

    The call crosses the loader's seam (span ``seamline.loader.size``) but reports to no
    monitor: it comes before ``RunStarted``. ``hidden``: as for :class:`Seam`.
    """
    seam = Seam(loader, info, MonitorHub(()), hidden)
    started = monotonic()
    try:
        with seam.call("size"):
            said = loader.size(shard=Shard())
    except Exception as err:  # a missing total must not end a run
        log.warning("the loader could not count its input", error=repr(err))
        return None
    finally:
        _say_if_slow(loader, info, monotonic() - started)
    if said is not None and (isinstance(said, bool) or not isinstance(said, int) or said < 0):
        log.warning("the loader's size is not a count; ignored", size=repr(said))
        return None
    return said


def _say_if_slow(loader: Loader[Any], info: ComponentInfo | None, seconds: float) -> None:
    """Warn when the count held the start ``SLOW_SIZE_S`` or more: a loader that read every
    document to count them (the contract asks it to answer None when counting is not
    cheap) delayed the first batch by as long as a pass over its input, without a word."""
    if seconds < SLOW_SIZE_S:
        return
    origin = f" (from {info.distribution} {info.version})" if info is not None else ""
    log.warning(
        f"loader {loader.name!r}{origin} took {seconds:.1f} s to count its input, for the "
        "progress bar only, before the run could start: a loader should answer size() "
        "None when counting is not cheap (loader contract 1.1)"
    )
