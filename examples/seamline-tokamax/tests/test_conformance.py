"""seamline's conformance suite, run against ``tokamax`` exactly as any third party runs it."""

import pytest
from seamline_tokamax import TokamaxAttention

from seamline.contracts.testing import AttentionContract


class TestTokamaxConformance(AttentionContract):
    @pytest.fixture
    def attention(self) -> TokamaxAttention:
        return TokamaxAttention(TokamaxAttention.Config())
