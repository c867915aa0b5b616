"""Telling a machine that ran out of memory or open files from a kernel that failed.

A candidate kernel that fails to plan, compile or run is demoted for that shape and
the next one is tried; but a ``MemoryError``, XLA's ``RESOURCE_EXHAUSTED`` or
"Too many open files" says nothing about the kernel: every other candidate fails the
same way, and the run ended as a user error ("no attention candidate can serve", exit
code 2). :func:`exhausted` recognizes such an error, so that the caller stops the run
with :class:`~seamline.contracts.ResourceExhausted` instead of demoting anything.

On-chip memory a kernel's tiling asks for (a TPU's VMEM or SMEM, a GPU's shared
memory) is the kernel's choice for the shape, not the machine's limit: that stays a
demotion. So does an accelerator's own memory (HBM) running out: XLA's
``RESOURCE_EXHAUSTED`` on a GPU or TPU is what a kernel that materializes the whole
score matrix meets at long sequences where a flash kernel fits, and negotiation then
takes the next candidate, as it always has. On the CPU backend the same error is the
host's memory, which every candidate shares: that one stops the run.
"""

from __future__ import annotations

import errno

from seamline.contracts import ResourceExhausted

MEMORY = "memory"
OPEN_FILES = "open files"

_RUNTIME_ERRORS = frozenset({"XlaRuntimeError", "JaxRuntimeError"})
"""XLA's errors (their messages carry a host callback's exception, type name first)."""
_MEMORY_WORDS = ("RESOURCE_EXHAUSTED", "MemoryError", "Out of memory", "bad_alloc")
_OPEN_FILES_WORDS = ("Too many open files",)
_ON_CHIP = ("vmem", "smem", "shared memory", "scoped memory")
_ERRNOS = {errno.EMFILE: OPEN_FILES, errno.ENFILE: OPEN_FILES, errno.ENOMEM: MEMORY}


def exhausted_resource(error: BaseException) -> str | None:
    """``memory`` or ``open files`` when ``error`` (or one it was raised from) says the
    machine ran out of that; None otherwise."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _resource_of(current)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def exhausted(error: BaseException, where: str, detail: str) -> ResourceExhausted | None:
    """``error`` as a :class:`ResourceExhausted` (``where``: what was under way; ``detail``:
    the error in one line), or None when it is not one of running out."""
    resource = exhausted_resource(error)
    return None if resource is None else ResourceExhausted(resource, where, detail)


def _resource_of(error: BaseException) -> str | None:
    if isinstance(error, ResourceExhausted):
        return error.resource
    if isinstance(error, MemoryError):
        return MEMORY
    if isinstance(error, OSError):
        return _ERRNOS.get(error.errno or 0)
    if type(error).__name__ not in _RUNTIME_ERRORS:
        return None
    text = str(error)
    if any(word in text for word in _OPEN_FILES_WORDS):
        return OPEN_FILES
    if any(word in text for word in _MEMORY_WORDS):
        lowered = text.lower()
        if any(word in lowered for word in _ON_CHIP) or not _host_memory():
            return None
        return MEMORY
    return None


def _host_memory() -> bool:
    """Whether XLA's memory is the host's: the CPU backend (an accelerator's is its own)."""
    import jax

    return bool(jax.default_backend() == "cpu")
