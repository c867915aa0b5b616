"""The status ``seamline components`` shows: the registry's, or ``unavailable`` and why.

The registry's ``ok`` says an entry point loads and keeps its contract. The listing said
``ok`` of the ray executor where Ray is not installed, and of cpu-flash where its
compiled library was never built, which then failed the run; a component says why it
cannot be used here through :meth:`~seamline.contracts.Component.unavailable` (cheap: it
imports nothing heavy), and the listing shows that instead. Only the listing: the
registry, and the run's own refusals, are unchanged.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from seamline.core import ComponentInfo

UNAVAILABLE = "unavailable"


def listed(info: ComponentInfo) -> tuple[str, str]:
    """``(status, reason)`` as the listing shows them."""
    if info.status != "ok" or info.cls is None:
        return info.status, info.reason
    why = _why_unavailable(info.cls)
    return (UNAVAILABLE, why) if why else (info.status, info.reason)


def _why_unavailable(cls: type) -> str | None:
    probe = getattr(cls, "unavailable", None)
    if not callable(probe):
        return None
    try:
        why = probe()
    except Exception:  # a plugin's own probe that fails: the listing shows what it knows
        return None
    return why if isinstance(why, str) and why else None
