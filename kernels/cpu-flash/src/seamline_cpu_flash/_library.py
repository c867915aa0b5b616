"""Finding, loading and registering the compiled kernel, once per process.

The shared library is built with the package (see setup.py). It is loaded lazily,
on the first ``supports()`` or call, so that listing components never pays for it,
and a library that fails to load becomes a refusal with its reason instead of an
import error that would hide the component.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util

import jax

TARGET = "seamline_cpu_flash_f32"
"""The FFI target name the kernel is registered under (float32 in, float32 out)."""

_MODULE = "seamline_cpu_flash._cpu_flash"


class KernelUnavailable(RuntimeError):
    """The compiled library is missing or does not load here; the message says why."""


@functools.cache
def ensure_registered() -> str:
    """Load the library and register its handler with XLA for the CPU; the target name.

    Raises :class:`KernelUnavailable` when the library is absent, as from a source tree
    that was never built, or cannot load. Success is cached (the library is loaded and
    registered once); a failure is not, so the cheap look-up is simply asked again.
    """
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or spec.origin is None:
        raise KernelUnavailable(
            f"the compiled library {_MODULE} is not installed: reinstall seamline-cpu-flash "
            "so that its C++ source is built (needs a C++17 compiler)"
        )
    try:
        library = ctypes.CDLL(spec.origin)
        handler = library.SeamlineCpuFlashF32
    except (OSError, AttributeError) as error:
        raise KernelUnavailable(
            f"the compiled library {spec.origin} does not load: {error}"
        ) from error
    jax.ffi.register_ffi_target(TARGET, jax.ffi.pycapsule(handler), platform="cpu")
    return TARGET
