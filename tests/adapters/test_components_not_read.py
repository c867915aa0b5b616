"""``seamline components`` names the entry points it does not read.

A third party that registers its monitor under ``seamline.monitors`` (a plural) saw it
listed nowhere: ``components`` showed every other component, and only a pipeline that
asked for it by name learnt why it was not found.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app

STRAY = Path(__file__).parents[1] / "fixtures" / "plugins" / "seamline_fixture_stray"
SAID = (
    "not read: seamline-fixture-stray registers 'counting' in the entry-point group "
    "'seamline.monitors', which seamline does not read: register it in one of "
    "seamline.attention, seamline.model, seamline.loader, seamline.monitor, seamline.sink, "
    "seamline.executor"
)


@pytest.fixture(autouse=True)
def stray_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(STRAY))


def components(*args: str) -> str:
    result = CliRunner().invoke(app, ["components", *args], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_listing_names_an_entry_point_in_a_group_it_does_not_read() -> None:
    shown = components()
    assert SAID in " ".join(shown.split()), shown
    assert SAID in " ".join(components("--kind", "monitor").split())
    assert "not read" not in components("--kind", "attention")  # another kind's group


def test_the_json_document_lists_them_under_not_read() -> None:
    document = json.loads(components("--format", "json"))
    assert document["not_read"] == [
        {"group": "seamline.monitors", "name": "counting", "distribution": "seamline-fixture-stray"}
    ]
    mine = json.loads(components("--format", "json", "--distribution", "seamline-components"))
    assert mine["not_read"] == []


@pytest.mark.parametrize(
    "extra", [("--format", "json"), ("--kind", "sink")], ids=["format-json", "kind"]
)
def test_auto_order_refuses_options_it_cannot_honour(extra: tuple[str, ...]) -> None:
    # `components --auto-order --format json | jq .` printed Markdown and exited 0 (jq
    # failed on a success); --kind sink printed the attention table.
    result = CliRunner().invoke(app, ["components", "--auto-order", *extra])
    assert result.exit_code == 2, result.output
    assert "--auto-order prints one Markdown table of the attention implementations: it " in (
        " ".join(result.output.split())
    )
