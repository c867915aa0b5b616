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


def test_the_suites_use_pytest_s_public_api_only() -> None:
    # A third party runs these suites under whatever pytest it has: a private import
    # (``_pytest.*``) is what breaks on pytest's next release.
    import seamline.contracts.testing as testing
    import seamline.pytest_plugin as plugin

    sources = [Path(plugin.__file__), *Path(testing.__file__).parent.rglob("*.py")]
    private = [
        f"{source.name}:{number}"
        for source in sources
        for number, line in enumerate(source.read_text(encoding="utf-8").splitlines(), 1)
        if line.lstrip().startswith(("import _pytest", "from _pytest"))
    ]
    assert not private, f"private pytest imports: {private}"


def test_with_a_pytest_that_cannot_tell_fixtures_nothing_is_refused(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # pytest before 8.4 returns the function itself from @pytest.fixture: the check
    # then steps aside (pytest's own error stands) rather than refusing every method.
    from seamline.contracts.testing import _common

    monkeypatch.setattr(_common, "FIXTURE_TYPE", None)

    def plain(self: object, *args: object) -> None:
        return None

    assert _common.hidden_fixture(type("Check", (LoaderContract,), {"make_loader": plain})) is None
