"""How many items a loader says the whole input holds: the total of a run's progress bar.

The question is optional (loader contract 1.1, ``Loader.size``) and the answer is for
progress only, so nothing here may end a run: a loader that fails to count, or answers
what is not a count, leaves the total unknown, with a warning; ``read`` says what is
wrong, in the run's own terms.
"""

from __future__ import annotations

from typing import Any

from seamline.contracts import Loader, Shard
from seamline.contracts.logs import get_logger
from seamline.core.monitor_hub import MonitorHub
from seamline.core.registry import ComponentInfo
from seamline.core.seams import Seam

log = get_logger("seamline.core")


def whole_input_size(loader: Loader[Any], info: ComponentInfo | None) -> int | None:
    """The items of the whole input (``Shard()``: every shard's bar counts toward it).

    The call crosses the loader's seam (span ``seamline.loader.size``) but reports to no
    monitor: it comes before ``RunStarted``.
    """
    seam = Seam(loader, info, MonitorHub(()))
    try:
        with seam.call("size"):
            said = loader.size(shard=Shard())
    except Exception as err:  # a missing total must not end a run
        log.warning("the loader could not count its input", error=repr(err))
        return None
    if said is not None and (isinstance(said, bool) or not isinstance(said, int) or said < 0):
        log.warning("the loader's size is not a count; ignored", size=repr(said))
        return None
    return said
