"""How ``seamline check attention:cpu-flash`` builds this kernel for the conformance suite."""

from __future__ import annotations

import pytest

from seamline.contracts.testing import AttentionContract
from seamline_cpu_flash._library import ISA_LEVELS, KernelUnavailable, best_isa
from seamline_cpu_flash.attention import CpuFlashAttention, Isa

SETTINGS: dict[str, tuple[int, Isa]] = {
    "pool-threads": (0, "auto"),
    "one-thread": (1, "auto"),
    "avx2": (0, "avx2"),
    "baseline": (0, "baseline"),
}
"""Both thread counts (the work split must not change a bit of the answer), and each
compiled copy below the best one, which ``auto`` already covers: every copy this
machine can run passes the suite, not only the one it picks."""


class CpuFlashConformance(AttentionContract):
    @pytest.fixture(params=list(SETTINGS))
    def attention(self, request: pytest.FixtureRequest) -> CpuFlashAttention:
        threads, isa = SETTINGS[request.param]
        if isa != "auto":
            try:
                runnable = ISA_LEVELS[isa] <= best_isa()
            except KernelUnavailable:
                runnable = True  # the suite's own checks report the missing library
            if not runnable:
                pytest.skip(f"this CPU does not run the {isa} copy of the kernel")
        return CpuFlashAttention(CpuFlashAttention.Config(threads=threads, isa=isa))
