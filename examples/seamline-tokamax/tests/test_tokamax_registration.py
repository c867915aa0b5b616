"""``tokamax`` is found the way seamline finds every component: by its entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

from seamline_tokamax import TokamaxAttention

from seamline.contracts import Attention, ComponentConfig
from seamline.contracts.versions import compatibility_problem


def test_registered_as_tokamax_by_this_distribution() -> None:
    (entry,) = [e for e in entry_points(group="seamline.attention") if e.name == "tokamax"]
    assert entry.value == "seamline_tokamax:TokamaxAttention"
    assert entry.dist is not None
    assert entry.dist.name == "seamline-tokamax"
    assert entry.load() is TokamaxAttention


def test_declares_what_the_registry_checks() -> None:
    assert issubclass(TokamaxAttention, Attention)
    assert TokamaxAttention.kind == "attention"
    assert TokamaxAttention.name == "tokamax"
    assert compatibility_problem("attention", TokamaxAttention.contract_version) is None
    assert issubclass(TokamaxAttention.Config, ComponentConfig)
    assert TokamaxAttention.Config.model_config.get("extra") == "forbid"
    assert not TokamaxAttention.is_reference
