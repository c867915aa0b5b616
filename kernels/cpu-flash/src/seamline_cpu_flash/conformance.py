"""How ``seamline check attention:cpu-flash`` builds this kernel for the conformance suite."""

from __future__ import annotations

import pytest

from seamline.contracts.testing import AttentionContract
from seamline_cpu_flash._library import ISA_LEVELS, KernelUnavailable, best_isa
from seamline_cpu_flash.attention import CpuFlashAttention, Isa

SETTINGS: dict[str, tuple[int, Isa]] = {
    "pool-threads": (0, "auto"),
    "one-thread": (1, "auto"),
    "avx512": (0, "avx512"),
    "avx2": (0, "avx2"),
    "baseline": (0, "baseline"),
}
"""Both thread counts (the work split must not change a bit of the answer), and each
compiled copy below the best one, which ``auto`` already covers: every copy this
machine can run passes the suite, not only the one it picks. On a CPU with bfloat16 dot
products ``auto`` computes the suite's bfloat16 cases with the bfloat16 kernel, and
``avx512`` computes them widened to float32."""


class CpuFlashConformance(AttentionContract):
    @pytest.fixture(params=list(SETTINGS))
    def attention(self, request: pytest.FixtureRequest) -> CpuFlashAttention:
        threads, isa = SETTINGS[request.param]
        if isa != "auto":
            try:
                best = best_isa()
            except KernelUnavailable:
                best = ISA_LEVELS[isa]  # skipped below: the auto settings report the library
            if ISA_LEVELS[isa] > best:
                pytest.skip(f"this CPU does not run the {isa} copy of the kernel")
            if ISA_LEVELS[isa] == best:
                pytest.skip(f"auto runs the {isa} copy on this CPU (tested as pool-threads)")
        config = CpuFlashAttention.Config(threads=threads, isa=isa)
        return CpuFlashAttention(config)
