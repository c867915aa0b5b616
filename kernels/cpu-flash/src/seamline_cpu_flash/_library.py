"""Finding, loading and registering the compiled kernel, once per process.

The shared library is built with the package (see setup.py). It is loaded lazily,
on the first ``supports()`` or call, so that listing components never pays for it,
and a library that fails to load becomes a refusal with its reason instead of an
import error that would hide the component.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.metadata
import importlib.util
import re

TARGET = "seamline_cpu_flash_f32"
"""The FFI target name the kernel is registered under (float32 in, float32 out)."""

BF16_TARGET = "seamline_cpu_flash_bf16"
"""The bfloat16 kernel's target (bfloat16 in and out, the CPU's bfloat16 dot products);
registered beside the float32 one, called only where ``best_isa()`` reaches
``ISA_LEVELS["avx512-bf16"]``."""

_MODULE = "seamline_cpu_flash._cpu_flash"

ISA_LEVELS = {"baseline": 1, "avx2": 2, "avx512": 3, "avx512-bf16": 4}
"""The ``isa`` attribute's values for each compiled copy of the kernel (0 is auto).
``avx512-bf16`` is the AVX-512 copy plus the bfloat16 kernel; below it, bfloat16 inputs
are widened to float32."""


class KernelUnavailable(RuntimeError):
    """The compiled library is missing or does not load here; the message says why."""


JAXLIB_NEEDED = (0, 9, 1)
"""The oldest jaxlib the library runs with. It is built against the FFI headers of the
jaxlib in pyproject.toml's [build-system] (API 0.3): jaxlib 0.5 to 0.9.0 refuse its handler
at the first call ("API version (0.3) is incompatible with the framework's API version
(0.1)"), and before 0.5 there is no ``jax.ffi`` at all."""


def _old_jaxlib() -> str | None:
    """Why the installed jaxlib cannot run the library, or None (its metadata is read: no
    import of jax)."""
    try:
        installed = importlib.metadata.version("jaxlib")
    except importlib.metadata.PackageNotFoundError:
        return "jaxlib is not installed"
    release = re.match(r"(\d+)(?:\.(\d+))?(?:\.(\d+))?", installed)
    if release is None or tuple(int(n or 0) for n in release.groups()) >= JAXLIB_NEEDED:
        return None
    needed = ".".join(map(str, JAXLIB_NEEDED))
    return (
        f"jaxlib {installed} is older than {needed}, whose FFI the kernel is built for: "
        f"install jax and jaxlib {needed} or later (pip install -U 'jax>={needed}')"
    )


def missing() -> str | None:
    """Why the compiled library cannot run here, or None: not installed, or a jaxlib too old
    for it. Found, not loaded (a listing of components asks it, and never pays for loading
    the library)."""
    old = _old_jaxlib()
    if old is not None:
        return old
    spec = importlib.util.find_spec(_MODULE)
    if spec is None or spec.origin is None:
        return (
            f"the compiled library {_MODULE} is not installed: reinstall seamline-cpu-flash "
            "so that its C++ source is built (needs a C++17 compiler)"
        )
    return None


@functools.cache
def _load() -> ctypes.CDLL:
    """The loaded library, with its entry points looked up.

    Raises :class:`KernelUnavailable` when the library is absent, as from a source tree
    that was never built, or cannot load (or is an older build without an entry point).
    Success is cached; a failure is not (``functools.cache`` keeps no exceptions).
    """
    absent = missing()
    if absent is not None:
        raise KernelUnavailable(absent)
    spec = importlib.util.find_spec(_MODULE)
    assert spec is not None  # as missing() found it
    assert spec.origin is not None
    try:
        library = ctypes.CDLL(spec.origin)
        library.SeamlineCpuFlashF32  # noqa: B018 (looked up to fail here, not at the first call)
        library.SeamlineCpuFlashBF16  # noqa: B018
        library.SeamlineCpuFlashIsaLevel.restype = ctypes.c_int64
    except (OSError, AttributeError) as error:
        raise KernelUnavailable(
            f"the compiled library {spec.origin} does not load: {error} (reinstall "
            "seamline-cpu-flash so that its C++ source is built again)"
        ) from error
    return library


@functools.cache
def ensure_registered() -> str:
    """Load the library and register its handler with XLA for the CPU; the target name.

    Raises :class:`KernelUnavailable` when the library is absent, as from a source tree
    that was never built, or cannot load. Success is cached (the library is loaded and
    registered once); a failure is not, so the cheap look-up is simply asked again.
    """
    import jax

    library = _load()
    jax.ffi.register_ffi_target(
        TARGET, jax.ffi.pycapsule(library.SeamlineCpuFlashF32), platform="cpu"
    )
    jax.ffi.register_ffi_target(
        BF16_TARGET, jax.ffi.pycapsule(library.SeamlineCpuFlashBF16), platform="cpu"
    )
    return TARGET


def best_isa() -> int:
    """The highest ``ISA_LEVELS`` value this CPU runs, as the library's own check finds it."""
    return int(_load().SeamlineCpuFlashIsaLevel())
