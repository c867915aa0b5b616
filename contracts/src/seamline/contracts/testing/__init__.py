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
"""

from seamline.contracts.testing.attention import AttentionContract
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
}

__all__ = [
    "CONTRACTS",
    "AttentionContract",
    "LoaderContract",
    "ModelContract",
    "MonitorContract",
    "SinkContract",
]
