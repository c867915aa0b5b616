"""A process's own peak resident set size, the figure every benchmark's memory column is.

Linux's ``VmHWM`` (``/proc/self/status``), where there is one. ``ru_maxrss`` is kept
across ``exec``, so a worker started by a large parent reports the parent's peak, not
its own (measured: a 600 MiB pytest parent, a 13 MiB child reporting 613 MiB); every
benchmark starts its sides as children of a driver that has loaded a model, so it must
not read ``ru_maxrss`` where ``VmHWM`` exists.
"""

from __future__ import annotations

import resource
from pathlib import Path

STATUS = Path("/proc/self/status")


def peak_rss_bytes() -> int:
    """This process's peak resident set size so far, in bytes.

    ``VmHWM`` where Linux has it; elsewhere ``ru_maxrss`` (KiB on Linux; the benchmarks
    run on Linux, so macOS's bytes are not handled).
    """
    try:
        with STATUS.open(encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss) * 1024


def peak_rss_kib() -> int:
    """:func:`peak_rss_bytes` in KiB, the unit of the checkout benchmarks' JSON."""
    return peak_rss_bytes() // 1024
