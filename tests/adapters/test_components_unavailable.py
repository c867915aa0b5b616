"""``seamline components`` says which components cannot be used here, and why.

It listed the ray executor as ``ok`` where Ray is not installed, and cpu-flash as ``ok``
where its compiled library was never built; each then failed the run. A component says
so through ``Component.unavailable()`` (found, not imported); the modules are hidden here
by setting them to None in ``sys.modules``, as where they are not installed.
"""

from __future__ import annotations

import json
import sys
from typing import Any, ClassVar

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.availability import listed
from seamline.adapters.cli.main import app
from seamline.contracts import ComponentConfig, Monitor
from seamline.core import ComponentInfo


def listing(kind: str) -> dict[str, dict[str, Any]]:
    result = CliRunner().invoke(app, ["components", "--kind", kind, "--format", "json"])
    assert result.exit_code == 0, result.output
    return {c["name"]: c for c in json.loads(result.stdout)["components"]}


def test_the_ray_executor_without_ray_is_unavailable_and_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    found = listing("executor")
    assert found["ray"]["status"] == "unavailable"
    assert found["ray"]["reason"] == "Ray is not installed: pip install 'seamline-adapters[ray]'"
    assert (found["local"]["status"], found["local"]["reason"]) == ("ok", "")


def test_cpu_flash_without_its_library_is_unavailable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "seamline_cpu_flash._cpu_flash", None)
    found = listing("attention")
    assert found["cpu-flash"]["status"] == "unavailable"
    assert (
        "the compiled library seamline_cpu_flash._cpu_flash is not installed"
        in (found["cpu-flash"]["reason"])
    )
    assert found["native"]["status"] == "ok"


def test_the_text_listing_shows_it_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)
    result = CliRunner().invoke(app, ["components", "--kind", "executor"], env={"COLUMNS": "300"})
    row = next(line for line in result.stdout.splitlines() if " ray " in line)
    assert "unavailable" in row
    assert "Ray is not installed" in row


class Probing(Monitor[ComponentConfig]):
    name: ClassVar[str] = "probing"
    contract_version: ClassVar[str] = "1.0"
    answer: ClassVar[Any] = None

    @classmethod
    def unavailable(cls) -> str | None:
        if isinstance(cls.answer, Exception):
            raise cls.answer
        return cls.answer  # type: ignore[no-any-return]


def info_of(cls: type, status: str = "ok") -> ComponentInfo:
    return ComponentInfo("monitor", "probing", "t:P", "t", "1", status, "", cls, "1.0")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("answer", "shown"),
    [
        (None, ("ok", "")),
        ("", ("ok", "")),
        ("needs a GPU", ("unavailable", "needs a GPU")),
        (RuntimeError("probe broke"), ("ok", "")),  # the listing goes on
        (3, ("ok", "")),  # not a reason
    ],
)
def test_what_a_component_answers_is_shown(
    monkeypatch: pytest.MonkeyPatch, answer: Any, shown: tuple[str, str]
) -> None:
    monkeypatch.setattr(Probing, "answer", answer)
    assert listed(info_of(Probing)) == shown


def test_a_component_the_registry_refused_keeps_its_status() -> None:
    assert listed(info_of(Probing, "broken")) == ("broken", "")
