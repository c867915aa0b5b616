"""``seamline components`` lists the ``seamline.conformance`` entry points too.

They were listed nowhere (text or JSON, not even under ``not read:``), though the docs
said ``components`` lists every entry point of the ``seamline.*`` groups: a suite
registered under a name ``seamline check`` never asks for, or naming a module that is
not installed, went unnoticed until someone ran ``check``. None is imported to list it;
one whose import would fail (a misspelt class, a module that does not parse or imports a
package that is not installed) is ``broken`` with the error, read from its source.
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
        "monitor:gone = seamline_fixture_suites_missing:Suite\n"
        "sink:misspelt = seamline_fixture_suites:Suit\n"
        "sink:needs = seamline_fixture_suites_needs:Suite\n"
        "sink:unparsable = seamline_fixture_suites_typo:Suite\n",
        encoding="utf-8",
    )
    marker = tmp_path / "imported"
    touch = f"open({str(marker)!r}, 'w').close()\n"
    (tmp_path / "seamline_fixture_suites.py").write_text(
        f"{touch}class Suite:\n    pass\n", encoding="utf-8"
    )
    (tmp_path / "seamline_fixture_suites_needs.py").write_text(
        f"{touch}import seamline_fixture_not_installed.sub\nclass Suite:\n    pass\n",
        encoding="utf-8",
    )
    (tmp_path / "seamline_fixture_suites_typo.py").write_text(
        f"{touch}class Suite(:\n    pass\n", encoding="utf-8"
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
    assert set(listed) == {
        "sink:fixture-ok",
        "bogus",
        "monitor:gone",
        "sink:misspelt",
        "sink:needs",
        "sink:unparsable",
    }
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


def test_a_suite_whose_import_would_fail_is_broken_with_the_error_not_ok(
    suites_installed: Path,
) -> None:
    # A misspelt class, a module that imports a package not installed, or one that does
    # not parse was listed ok until `seamline check` imported it. Told from the source:
    # still nothing is imported.
    document = json.loads(
        components("--format", "json", "--distribution", "seamline-fixture-suites")
    )
    listed = {suite["name"]: suite for suite in document["conformance"]}
    folder = suites_installed.parent
    assert (listed["sink:misspelt"]["status"], listed["sink:misspelt"]["reason"]) == (
        "broken",
        "import would fail: AttributeError: module 'seamline_fixture_suites' has no attribute "
        f"'Suit' (read from {folder / 'seamline_fixture_suites.py'})",
    )
    assert (listed["sink:needs"]["status"], listed["sink:needs"]["reason"]) == (
        "broken",
        "import would fail: ModuleNotFoundError: No module named "
        "'seamline_fixture_not_installed', which its module imports "
        f"({folder / 'seamline_fixture_suites_needs.py'}:2)",
    )
    assert listed["sink:unparsable"]["status"] == "broken"
    assert listed["sink:unparsable"]["reason"].startswith("import would fail: SyntaxError: ")
    assert listed["sink:unparsable"]["reason"].endswith("seamline_fixture_suites_typo.py:2)")
    assert listed["sink:fixture-ok"]["status"] == "ok"
    assert not suites_installed.exists(), "listing a suite imported it"
    shown = " ".join(components("--kind", "sink").split())
    assert "misspelt │ seamline-fixture-suites │ 0.1.0 │ - │ broken │ import would fail" in shown
