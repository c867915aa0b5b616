"""Which machine a timing was taken on: the part of the tuning cache's key that is hardware.

A kernel's time depends on the machine under it as much as on the shape: a tuning
folder shared between machines (an NFS home, a baked image, a CI cache) ranked the
kernels of an AVX2 or 64-core node by times taken on an AVX-512 or 2-core one, and
the run said "from the tuning cache". The device kind alone does not tell them apart
(every CPU is ``cpu``), and a kernel's settings as written (``isa: auto``,
``threads: 0``) do not say what they resolve to. What they resolve to is decided by
the host, so the key holds the host:

* on a CPU: its model name (``/proc/cpuinfo``), the CPUs this process may run on
  (``os.sched_getaffinity``: what a kernel's thread pool is sized by; a container
  limited to 2 of 64 cores times differently) and the SIMD features that decide which
  code a kernel or XLA runs (:data:`SIMD_FEATURES`, those present; a VM may hide
  AVX-512 of the same model). Read from the kernel, never from
  ``$SEAMLINE_CPU_FEATURES_HIDDEN``, which hides features from the precision check only;
* on an accelerator (GPU, TPU): the device kind is in the key already, and the number of
  local devices is added.

Core names no kernel: the host is what any kernel's timings depend on, whatever it
resolves its settings to.
"""

from __future__ import annotations

import functools
import os
import platform
from typing import Any

from seamline.core.precision.hardware import first_cpuinfo_field, read_cpu_features

SIMD_FEATURES = (
    # x86 (as /proc/cpuinfo writes them)
    "sse4_2",
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512dq",
    "avx512bw",
    "avx512vl",
    "avx512_vnni",
    "avx512_bf16",
    "avx512_fp16",
    "avx_vnni",
    "amx_tile",
    "amx_bf16",
    "amx_int8",
    # Arm
    "asimd",
    "asimddp",
    "asimdhp",
    "sve",
    "sve2",
    "bf16",
    "i8mm",
)
"""The CPU features that change which code computes attention (vector width, fused
multiply-add, bfloat16 and int8 dot products); the others do not change a timing."""


def host_identity(platform_name: str, devices: int) -> dict[str, Any]:
    """What of this machine the timings of ``platform_name``'s kernels depend on.

    ``devices`` is the number of local devices of that platform (counted by the caller,
    which has JAX at hand); it is kept for an accelerator only: on a CPU the CPUs count.
    """
    if platform_name != "cpu":
        return {"devices": devices}
    model, features = _cpu()
    return {"cpu": model, "cpus": usable_cpus(), "features": features}


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity, which a container or ``taskset``
    narrows), else every CPU the system has."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        return os.cpu_count() or 1


@functools.cache
def _cpu() -> tuple[str, str]:
    """The CPU's model and its :data:`SIMD_FEATURES`, read once a process (neither changes
    while it runs)."""
    model = first_cpuinfo_field(("model name", "Model", "Hardware", "cpu model"))
    if not model:  # Arm: no model name, but who made it and which part it is
        maker = first_cpuinfo_field(("CPU implementer",))
        part = first_cpuinfo_field(("CPU part",))
        if maker and part:
            model = f"implementer {maker} part {part}"
    if not model:
        model = platform.processor() or platform.machine() or "unknown"
    found = read_cpu_features() or frozenset()
    return model[:200], ",".join(f for f in SIMD_FEATURES if f in found) or "none"
