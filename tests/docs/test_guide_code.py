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

import functools
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
        return guide_plain_attention()


@functools.cache
def guide_plain_attention() -> Attention[Any]:
    """The guide's ``PlainAttention``, built once: every check of the class gets this one.

    As one instance serves every batch of a run; the suite then compiles a case's call once
    and reuses it wherever a check needs it again, instead of compiling it per check for a
    class object made anew each time.
    """
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


def test_the_decoder_block_pools_each_windows_last_token_left_or_right_padded() -> None:
    """The guide's decoder excerpt (``collate_for_last_token``, ``last_token``): run as a
    reader copies it, it marks each example's last token whichever side it pads, and pools
    that token's hidden state (zeros for a padding row)."""
    import jax
    import numpy as np

    from seamline.contracts import Example

    block = next(
        b for b in PYTHON_BLOCK.findall(GUIDE.read_text(encoding="utf-8")) if "def last_token(" in b
    )
    namespace: dict[str, Any] = {}
    exec(compile(block, str(GUIDE), "exec"), namespace)  # the page's code
    eos, windows = 2, [[5, 6, 7, 2], [9, 2]]
    examples = [
        Example("d", i, (0, 0), len(ids), {"input_ids": np.asarray(ids, np.int32)})
        for i, ids in enumerate(windows)
    ]
    for left in (True, False):
        arrays = namespace["collate_for_last_token"](examples, 3, 6, 0, left=left)
        assert all(a.shape == (3, 6) for a in arrays.values())
        assert arrays["positions"][arrays["segment"] == 1].tolist() == [0, 1, 2, 3, 0, 1]
        hidden = jax.nn.one_hot(arrays["input_ids"], 10)  # each token's hidden state: its id
        pooled = np.asarray(namespace["last_token"](hidden, arrays["last"]))
        assert pooled.argmax(axis=1)[:2].tolist() == [eos, eos]
        assert not pooled[2].any()
