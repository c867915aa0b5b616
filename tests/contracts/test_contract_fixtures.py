"""An author's fixture written as a plain method is refused at once, in one line.

The loader and sink suites call ``make_loader(directory, texts)`` and ``make_sink(directory)``,
which read like methods; an author who wrote ``def make_loader(self, directory, texts)``
hid the suite's fixture of that name, and pytest answered every check with a long
"fixture 'make_loader' not found" dump that never said why. The contract class now
refuses such a subclass when it is defined, naming the method and the fix.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts.testing import (
    AttentionContract,
    LoaderContract,
    MonitorContract,
    SinkContract,
)


def test_a_plain_make_loader_is_refused_naming_the_fix() -> None:
    with pytest.raises(TypeError) as raised:

        class CsvConformance(LoaderContract):
            def make_loader(self, directory: Path, texts: list[str | None]) -> Any:  # type: ignore[override]
                return None

    message = str(raised.value)
    assert "CsvConformance.make_loader" in message
    assert "not a pytest fixture" in message
    assert "@pytest.fixture" in message
    assert "returns the function" in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("contract", "name"),
    [
        (SinkContract, "make_sink"),
        (SinkContract, "read_output"),
        (AttentionContract, "attention"),
        (MonitorContract, "monitor_output"),
    ],
)
def test_every_suite_fixture_is_guarded(contract: type, name: str) -> None:
    def plain(self: object, *args: object) -> None:
        return None

    with pytest.raises(TypeError, match=rf"Check\.{name} .*not a pytest fixture"):
        type("Check", (contract,), {name: plain})


def test_fixtures_and_other_methods_are_accepted() -> None:
    class Check(LoaderContract):
        @pytest.fixture
        def make_loader(self) -> Callable[[Path, list[str | None]], Any]:
            return lambda directory, texts: None

        def helper(self) -> int:  # not a fixture of the suite's: the author's own
            return 1

    assert Check().helper() == 1
