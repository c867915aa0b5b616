"""How ``seamline check attention:cpu-flash`` builds this kernel for the conformance suite."""

from __future__ import annotations

import pytest

from seamline.contracts.testing import AttentionContract
from seamline_cpu_flash.attention import CpuFlashAttention


class CpuFlashConformance(AttentionContract):
    @pytest.fixture(params=[0, 1], ids=["pool-threads", "one-thread"])
    def attention(self, request: pytest.FixtureRequest) -> CpuFlashAttention:
        # Both thread counts: the work split must not change a single bit of the answer.
        return CpuFlashAttention(CpuFlashAttention.Config(threads=request.param))
