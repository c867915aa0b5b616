"""``seamline components`` lists the ``seamline.conformance`` entry points too.

They were listed nowhere (text or JSON, not even under ``not read:``), though the docs
said ``components`` lists every entry point of the ``seamline.*`` groups: a suite
registered under a name ``seamline check`` never asks for, or naming a module that is
not installed, went unnoticed until someone ran ``check``. None is imported to list it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app


@pytest.fixture(autouse=True)
def suites_installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    info = tmp_path / "seamline_fixture_suites-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seamline-fixture-suites\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[seamline.conformance]\n"
        "sink:fixture-ok = seamline_fixture_suites:Suite\n"
        "bogus = seamline_fixture_suites:Suite\n"
        "monitor:gone = seamline_fixture_suites_missing:Suite\n",
        encoding="utf-8",
    )
    marker = tmp_path / "imported"
    (tmp_path / "seamline_fixture_suites.py").write_text(
        f"open({str(marker)!r}, 'w').close()\nclass Suite:\n    pass\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    return marker


def components(*args: str) -> str:
    result = CliRunner().invoke(app, ["components", *args], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    return result.stdout


def test_the_json_document_lists_every_conformance_entry_point_with_a_status(
    suites_installed: Path,
) -> None:
    document = json.loads(
        components("--format", "json", "--distribution", "seamline-fixture-suites")
    )
    listed = {suite["name"]: suite for suite in document["conformance"]}
    assert set(listed) == {"sink:fixture-ok", "bogus", "monitor:gone"}
    assert (listed["sink:fixture-ok"]["status"], listed["sink:fixture-ok"]["reason"]) == ("ok", "")
    assert listed["bogus"]["status"] == "broken"
    assert listed["bogus"]["reason"].startswith("its name 'bogus' is not KIND:NAME")
    assert listed["monitor:gone"]["status"] == "broken"
    assert listed["monitor:gone"]["reason"] == (
        "no module named 'seamline_fixture_suites_missing' is installed (entry point target "
        "'seamline_fixture_suites_missing:Suite')"
    )
    assert listed["monitor:gone"]["file"] is None
    assert not suites_installed.exists(), "listing a suite imported it"


def test_the_text_listing_shows_them_in_a_table_of_their_own_filtered_by_kind() -> None:
    shown = " ".join(components().split())
    assert "seamline.conformance (seamline check KIND:NAME)" in shown
    assert "fixture-ok │ seamline-fixture-suites │ 0.1.0 │ - │ ok" in shown
    assert "bogus │ seamline-fixture-suites │ 0.1.0 │ - │ broken" in shown
    sinks = components("--kind", "sink")
    assert "fixture-ok" in sinks
    assert "bogus" not in sinks
    assert "gone" not in sinks


def test_a_distribution_that_registers_only_suites_is_one_the_filter_knows() -> None:
    shown = components("--distribution", "seamline-fixture-suites")
    assert "fixture-ok" in shown
