"""An index written by another seamline version is searched with a warning, once, on stderr.

A query is embedded by the seamline searching; the documents' vectors by the one that
wrote the index (its manifest's ``versions``). Where those differ, search answered as if
nothing had changed: no word that the scores might not compare.
"""

from __future__ import annotations

import json
from pathlib import Path

import jax
import numpy as np
import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from seamline.adapters.cli import main as cli
from seamline.adapters.search import Searcher
from seamline.adapters.serve.bodies import SearchRequest
from seamline.adapters.serve.index import IndexSearch
from seamline.core.registry import Registry
from tests.adapters.test_search import TEXTS, registry, restored_logging, write_index

__all__ = ["restored_logging"]  # a fixture, used by name

OUTPUT = Path("out/emb.jsonl")


@pytest.fixture
def index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A jsonl index written here, in a working folder of its own, and the command's
    registry the one that wrote it."""
    monkeypatch.chdir(tmp_path)
    write_index(tmp_path, f"{{use: jsonl, with: {{path: {OUTPUT}}}}}")
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    return OUTPUT


def written_with_jax(version: str) -> None:
    """Make the index's manifest say another jax computed its vectors."""
    manifest = OUTPUT.with_name("emb.manifest.json")
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["versions"]["jax"] = version
    manifest.write_text(json.dumps(data), encoding="utf-8")


@pytest.mark.usefixtures("restored_logging")
def test_the_same_version_searches_without_a_word(index: Path) -> None:
    shown = CliRunner().invoke(cli.app, ["search", str(index), TEXTS[1], "-k", "1"])
    assert shown.exit_code == 0, shown.output
    assert "warning" not in shown.stderr


@pytest.mark.usefixtures("restored_logging")
def test_another_jax_is_named_on_stderr_and_the_results_are_still_given(index: Path) -> None:
    written_with_jax("0.4.30")
    shown = CliRunner().invoke(
        cli.app, ["search", str(index), TEXTS[1], "-k", "1", "--format", "json"]
    )
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)  # the results alone on stdout
    assert document["hits"][0]["id"] == "d1"
    warnings = [line for line in shown.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1, shown.stderr
    assert warnings[0].startswith(f"warning: {index} was written by another seamline version")
    assert f"jax 0.4.30 then, {jax.__version__} now" in warnings[0]
    assert "run the pipeline again" in warnings[0]


@pytest.mark.usefixtures("restored_logging")
def test_a_version_the_writer_did_not_record_is_said_so_not_absent(index: Path) -> None:
    # An older seamline recorded fewer versions; "numpy absent then" said numpy was not
    # installed when it was.
    manifest = OUTPUT.with_name("emb.manifest.json")
    data = json.loads(manifest.read_text(encoding="utf-8"))
    del data["versions"]["numpy"]
    manifest.write_text(json.dumps(data), encoding="utf-8")
    shown = CliRunner().invoke(cli.app, ["search", str(index), TEXTS[1], "-k", "1"])
    assert shown.exit_code == 0, shown.output
    said = " ".join(shown.stderr.split())
    assert f"numpy not recorded then, {np.__version__} now" in said, shown.stderr


def test_the_server_warns_once_for_each_index_it_opens_not_for_each_search(
    index: Path,
) -> None:
    written_with_jax("0.4.30")
    served = IndexSearch(registry(), index)
    try:
        with capture_logs() as logs:
            for _ in range(3):
                assert served.find(SearchRequest(TEXTS[1], 1, None))["data"][0]["id"] == "d1"
    finally:
        served.close()
    said = [entry for entry in logs if "another seamline version" in entry["event"]]
    assert len(said) == 1, logs
    assert said[0]["log_level"] == "warning"
    assert "jax 0.4.30 then" in said[0]["event"]


def test_a_hostile_version_is_shown_short_and_visible(index: Path) -> None:
    written_with_jax("\x1b[2J" + "9" * 500)
    with Searcher(registry(), index) as searcher:
        said = searcher.version_warning
    assert said is not None
    assert "\x1b" not in said
    assert len(said) < 600
