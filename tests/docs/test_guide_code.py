"""The complete code docs/writing-a-component.md gives passes the conformance suite.

A reader copies a block the page calls complete into a package, registers it and runs
``seamline check``; the page's ``PlainAttention`` once failed that check (a NaN in a
padding key leaked into real rows), and nothing here ran it. So each complete block is
taken from the page as it stands, executed as the module it would be, and put through
its kind's contract class, as ``seamline check KIND:NAME`` would. The page's other
Python blocks are excerpts, and it says so where it shows them.

docs/shipping-a-component.md shows the example package's loader conformance class, the
fixture form an author copies; it must be the class ``seamline check loader:csv`` runs
(tests/adapters/test_third_party_package.py), as it stands in the package.
"""

from __future__ import annotations

import re
import sys
import types
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts import Attention, Monitor
from seamline.contracts.testing import AttentionContract, MonitorContract
from tests.docs.workdir import ROOT

GUIDE = ROOT / "docs" / "writing-a-component.md"
SHIPPING = ROOT / "docs" / "shipping-a-component.md"
CSV_CONFORMANCE = (
    ROOT / "examples/plugins/seamline-example-csv/src/seamline_example_csv/conformance.py"
)
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


def guide_block(class_name: str, page: Path = GUIDE) -> str:
    """The one ``python`` block of ``page`` that defines ``class_name``."""
    text = page.read_text(encoding="utf-8")
    blocks = [b for b in PYTHON_BLOCK.findall(text) if f"class {class_name}(" in b]
    assert len(blocks) == 1, f"{page.name}: {len(blocks)} python blocks define {class_name}"
    return str(blocks[0])


def guide_class(class_name: str) -> type[Any]:
    """``class_name`` as the guide's block defines it, the block run as a module of its own.

    The module goes into ``sys.modules`` so that whatever looks a class up by its module
    (pydantic, a test report's identity) finds it, as it would in a reader's package.
    """
    module_name = f"guide_{class_name.lower()}"
    module = types.ModuleType(module_name)
    module.__file__ = str(GUIDE)
    sys.modules[module_name] = module
    exec(compile(guide_block(class_name), str(GUIDE), "exec"), module.__dict__)  # the page's code
    cls = module.__dict__[class_name]
    assert isinstance(cls, type)
    return cls


class TestGuidePlainAttention(AttentionContract):
    """The guide's "complete implementation that matches ``native``"."""

    @pytest.fixture
    def attention(self) -> Attention[Any]:
        cls = guide_class("PlainAttention")
        instance = cls(cls.Config())
        assert isinstance(instance, Attention)
        return instance


class TestGuideBatchCounter(MonitorContract):
    """The guide's monitor, ``BatchCounter``, which prints to stderr."""

    @pytest.fixture
    def monitor(self) -> Monitor[Any]:
        cls = guide_class("BatchCounter")
        instance = cls(cls.Config())
        assert isinstance(instance, Monitor)
        return instance

    @pytest.fixture
    def monitor_output(self, capsys: pytest.CaptureFixture[str]) -> Callable[[], str]:
        return lambda: capsys.readouterr().err


def test_the_shipping_page_shows_the_checked_loader_fixture() -> None:
    block = guide_block("CsvConformance", SHIPPING)
    source = CSV_CONFORMANCE.read_text(encoding="utf-8")
    assert block in source, f"{SHIPPING.name} must show {CSV_CONFORMANCE.name}'s class verbatim"
