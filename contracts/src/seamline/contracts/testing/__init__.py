"""seamline's conformance suite: prove that a component keeps its contract.

Subclass the contract class of your component's kind, give it the one fixture that
builds your component, and run pytest::

    from seamline.contracts.testing import AttentionContract

    class TestMyAttention(AttentionContract):
        @pytest.fixture
        def attention(self):
            return MyAttention(MyAttention.Config())

``seamline check KIND:NAME`` runs the same classes against any installed
component. Needs the ``testing`` extra (``pip install seamline-contracts[testing]``).

A kernel's own tests can build the suite's attention cases and compare with its
yardstick instead of copying them::

    from seamline.contracts.testing import AttentionCase, attention_inputs, exact_attention

    case = AttentionCase(q_len=5, kv_len=300, heads=8, kv_heads=2, causal=True)
    assert MyAttention(MyAttention.Config()).supports(case.spec())
    q, k, v, segment_ids = attention_inputs(case)
    expected = exact_attention(q, k, v, segment_ids=segment_ids, causal=case.causal)

- :class:`AttentionCase`: shapes, dtype, mask kind and seed of one call;
  ``case.spec(platform, device_kind)`` asks about hardware that is not here;
- :data:`ATTENTION_CASES`: the suite's fixed cases by name, each feature alone and
  in the combinations kernels get wrong; :func:`random_attention_cases`: the
  hypothesis strategy of its random ones;
- :func:`attention_inputs`: the case's q, k, v and segment ids, the same every time;
  :func:`attention_bias`: its relative-position bias (attention contract 1.2), or None;
- :func:`exact_attention`: the contract in float64 numpy, the suite's yardstick;
  :func:`dense_attention`: the obvious JAX computation, whose error in a dtype
  scales the suite's tolerance (:func:`~seamline.contracts.testing.attention.tolerance`),
  and :func:`chunked_attention`, the same over key chunks (the two the model suite
  serves a model with).
"""

from seamline.contracts.testing._attention_cases import (
    ATTENTION_CASES,
    AttentionCase,
    attention_bias,
    attention_inputs,
    random_attention_cases,
)
from seamline.contracts.testing._reference import (
    chunked_attention,
    dense_attention,
    exact_attention,
)
from seamline.contracts.testing.attention import AttentionContract
from seamline.contracts.testing.executor import ExecutorContract
from seamline.contracts.testing.loader import LoaderContract
from seamline.contracts.testing.model import ModelContract
from seamline.contracts.testing.monitor import MonitorContract
from seamline.contracts.testing.sink import SinkContract

CONTRACTS = {
    "attention": AttentionContract,
    "model": ModelContract,
    "loader": LoaderContract,
    "monitor": MonitorContract,
    "sink": SinkContract,
    "executor": ExecutorContract,
}

__all__ = [
    "ATTENTION_CASES",
    "CONTRACTS",
    "AttentionCase",
    "AttentionContract",
    "ExecutorContract",
    "LoaderContract",
    "ModelContract",
    "MonitorContract",
    "SinkContract",
    "attention_bias",
    "attention_inputs",
    "chunked_attention",
    "dense_attention",
    "exact_attention",
    "random_attention_cases",
]
