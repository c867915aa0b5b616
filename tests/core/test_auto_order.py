"""The auto order has one source of truth: the kernels' priorities, shown in docs/attention.md."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from seamline.contracts import Attention, AttentionSpec, Support
from seamline.core.attention.order import UNRANKED, auto_order, auto_order_table
from seamline.core.config.user import user_trust
from seamline.core.registry import Registry

DOCS = Path(__file__).resolve().parents[2] / "docs" / "attention.md"
BLOCK = re.compile(r"<!-- auto-order:begin[^>]*-->\n(.*?)<!-- auto-order:end -->", re.DOTALL)
#: seamline's own attention distributions: the components and the compiled kernels.
FIRST_PARTY = ("seamline-components", "seamline-cpu-flash")


def first_party_attentions() -> list[Attention[Any]]:
    registry = Registry.discover(user_trust())
    return [
        registry.create("attention", info.name)  # type: ignore[misc]
        for info in registry.entries("attention")
        if info.usable and info.distribution in FIRST_PARTY
    ]


def test_the_docs_table_is_the_live_order() -> None:
    match = BLOCK.search(DOCS.read_text(encoding="utf-8"))
    assert match, f"{DOCS} has no auto-order block"
    live = auto_order_table(first_party_attentions())
    assert match.group(1) == live, (
        "docs/attention.md's auto-order table is out of date; regenerate it with "
        "`seamline components --auto-order --distribution seamline-components "
        "--distribution seamline-cpu-flash` "
        f"and paste it between the markers. Live table:\n{live}"
    )


class _Ranked(Attention[Any]):
    name = "ranked"
    contract_version = "1.1"

    def __init__(self, name: str, rank: int | None) -> None:
        self.name = name  # type: ignore[misc]
        self._rank = rank

    def supports(self, spec: AttentionSpec) -> Support:
        return Support.yes()

    def priority(self, spec: AttentionSpec) -> int:
        if self._rank is None:
            raise RuntimeError("a buggy priority()")
        return self._rank

    def __call__(self, q: Any, k: Any, v: Any, **kwargs: Any) -> Any:
        return q


def test_order_is_priority_then_name_and_a_raising_priority_goes_last() -> None:
    spec = AttentionSpec(1, 8, 8, 2, 2, 4, "float32", False, False, "cpu", "cpu")
    candidates = [_Ranked("b", 1), _Ranked("broken", None), _Ranked("a", 1), _Ranked("c", 5)]
    assert [c.name for c in auto_order(candidates, spec)] == ["c", "a", "b", "broken"]
    assert UNRANKED < -1000
