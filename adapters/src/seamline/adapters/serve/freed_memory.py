"""Handing the memory a closed query model freed back to the system (glibc's ``malloc_trim``).

Why: a served index that is written again (``seamline run`` republishing it) has its query
model built anew, a whole embedder, and the old one closed. What the closed one freed
stayed with glibc's malloc, spread over the arenas of the threads that had built and used
it (the search's worker threads, XLA's), and the server grew by about 27 MiB a republish:
817 to 1,500 MiB over 25 (``benchmarks/memory/republish.py``). Trimming after each close
kept it between 822 and 945 MiB in the same run (875 at the end). Building and closing
every model on one dedicated thread, so that one arena took them all, was measured too
and did not help (+388 MiB over 10, as much as nothing): the memory is not only that
thread's.
"""

from __future__ import annotations

import ctypes
import functools
from collections.abc import Callable


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none (musl, macOS).

    Looked up among the symbols the process already has (``CDLL(None)``: the C library is
    loaded in every Python process), not by ``ctypes.util.find_library("c")``, which on
    Linux runs ``ldconfig -p`` in a subprocess: a server forked a program at its first
    republish to find a library it had loaded all along.
    """
    try:
        trim = ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_freed_memory() -> bool:
    """Hand the memory malloc holds free, in every arena, back to the system (glibc; a few
    milliseconds, once a republish); whether it could."""
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
