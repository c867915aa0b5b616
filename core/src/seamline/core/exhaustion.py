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

A file that reached the size limit (``ulimit -f``: EFBIG), a full disk (ENOSPC) or an
exhausted quota (EDQUOT) is running out too: the fix is the machine's, not the component's.

Libraries written in Rust say these in their own words: LanceDB raises a ``RuntimeError``
whose text carries Rust's ``(os error 24)`` ("Too many open files"; 27, 28 and 122 for
the file size, the disk and the quota, which it said as a component's failure with the
path of its build's source and no fix), and where it cannot even
start its runtime, a pyo3 ``PanicException``, which is a ``BaseException`` that no
``except Exception`` of the run takes (a traceback, where ``OSError`` EMFILE is one line
naming ``ulimit -n``). Both are recognized by their text (:func:`ran_out_in_panic` turns
the panic into an ordinary error where a component's call is left); a panic that says
anything else stays what it is.
"""

from __future__ import annotations

import errno
import os
import re

from seamline.contracts import ResourceExhausted
from seamline.contracts.errors import (
    DISK_QUOTA,
    DISK_SPACE,
    FILE_SIZE,
    MEMORY,
    OPEN_FILES,
)

_RUNTIME_ERRORS = frozenset({"XlaRuntimeError", "JaxRuntimeError"})
"""XLA's errors (their messages carry a host callback's exception, type name first)."""
_MEMORY_WORDS = ("RESOURCE_EXHAUSTED", "MemoryError", "Out of memory", "bad_alloc")
_ERRNOS = {
    errno.EMFILE: OPEN_FILES,
    errno.ENFILE: OPEN_FILES,
    errno.ENOMEM: MEMORY,
    errno.EFBIG: FILE_SIZE,
    errno.ENOSPC: DISK_SPACE,
    errno.EDQUOT: DISK_QUOTA,
}
_RUST_WORDS = (
    (os.strerror(errno.EMFILE), OPEN_FILES),
    *(
        (words, resource)
        for number, resource in _ERRNOS.items()
        if resource != MEMORY  # a library's "out of memory" is not the host's for sure
        for words in (f"(os error {number})", f"Os {{ code: {number},")
    ),
)
"""Rust's ``std::io::Error`` shows EMFILE as "Too many open files (os error 24)", and
its ``Debug`` form (a panic's) as ``Os { code: 24, ..., message: "Too many open files" }``;
likewise EFBIG ("File too large (os error 27)"), ENOSPC (28) and EDQUOT (122). Only the
number is taken for those: "File too large" alone may be a library's own refusal."""
_RUST_SOURCE = re.compile(r",? */\S+\.rs:\d+:\d+")
"""Where in its source a Rust library raised the error (``, /root/.cargo/registry/src/
.../structural.rs:258:9``): the path of the library's build, nothing a user can act on."""
_PANIC = "PanicException"
"""pyo3's exception for a Rust panic (each extension module has its own class of it)."""
_ON_CHIP = ("vmem", "smem", "shared memory", "scoped memory")


def exhausted_resource(error: BaseException) -> str | None:
    """What ran out (``memory``, ``open files``, ``disk space``, ...) when ``error`` (or
    one it was raised from) says the machine ran out of it; None otherwise."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        found = _resource_of(current)
        if found is not None:
            return found
        current = current.__cause__ or current.__context__
    return None


def exhausted(
    error: BaseException, where: str, detail: str, step: str = ""
) -> ResourceExhausted | None:
    """``error`` as a :class:`ResourceExhausted` (``where``: what was under way; ``detail``:
    the error in one line, less a Rust library's source location; ``step``: the component's
    call it left, by which the remedy is chosen), or None when it is not one of running
    out."""
    resource = exhausted_resource(error)
    if resource is None:
        return None
    return ResourceExhausted(resource, where, without_rust_sources(detail), step)


def without_rust_sources(text: str) -> str:
    """``text`` less the places in a Rust library's source it names (``, /root/.cargo/
    registry/src/.../tempfile.rs:52:23``): the paths of the library's build, which a
    user can do nothing with, in the one line a failed run ends with."""
    return _RUST_SOURCE.sub("", text)


def ran_out_in_panic(
    error: BaseException, where: str, detail: str, step: str = ""
) -> ResourceExhausted | None:
    """A Rust library's panic (pyo3's ``PanicException``) that says the machine ran out of
    open files, as a :class:`ResourceExhausted` (an ``Exception``, which the run's failure
    handling takes); None for any other error, a ``KeyboardInterrupt`` above all."""
    if isinstance(error, Exception) or type(error).__name__ != _PANIC:
        return None
    return exhausted(error, where, detail, step)


def _resource_of(error: BaseException) -> str | None:
    if isinstance(error, ResourceExhausted):
        return error.resource
    if isinstance(error, MemoryError):
        return MEMORY
    if isinstance(error, OSError):
        return _ERRNOS.get(error.errno or 0)
    name = type(error).__name__
    if not isinstance(error, RuntimeError) and name not in _RUNTIME_ERRORS and name != _PANIC:
        return None
    text = str(error)
    for words, resource in _RUST_WORDS:
        if words in text:
            return resource
    if name not in _RUNTIME_ERRORS:  # a library's memory words are not the host's for sure
        return None
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
