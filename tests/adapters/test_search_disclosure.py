"""``seamline search`` never prints a file that an index's records or manifest merely name.

A record's ``metadata.path`` is data: whoever can write an index can set it to
``/etc/passwd`` or to a secret of the user's; and the manifest's
``provenance.corpus_root`` is in the same folder, as easily edited. A snippet is the
text the index stores (sink contract 1.2), and comes from nowhere else.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli import main as cli
from seamline.adapters.search import Hit
from seamline.core.registry import Registry
from tests.adapters.tampered_search import edit_records
from tests.adapters.test_search import TEXTS, registry, write_index

SECRET = "hunter2-the-secret-of-the-user"


def planted_index(tmp_path: Path, path_of: str) -> Path:
    """A jsonl index whose records hold no text and name ``path_of`` as their file (its
    manifest's sha256 edited with them: the records alone edited are refused first)."""
    out = tmp_path / "out" / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")

    def plant(records: list[dict[str, Any]]) -> None:
        for record in records:
            record.pop("text", None)
            record["span"] = [0, 200]
            record["metadata"] = {"path": path_of}

    edit_records(out, plant)
    return out


@pytest.mark.parametrize("target", ["secret", "/etc/passwd"])
def test_search_does_not_print_a_file_outside_the_corpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    path = str(secret) if target == "secret" else target
    index = planted_index(tmp_path, path)
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    result = CliRunner().invoke(cli.app, ["search", str(index), TEXTS[0]], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    assert "root:" not in result.output  # the first line of /etc/passwd


@pytest.mark.parametrize("relative", [False, True])
def test_a_corpus_root_in_the_manifest_does_not_open_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool
) -> None:
    """The manifest's ``corpus_root`` set to the secret's folder: still nothing read from it."""
    secret = tmp_path / "home" / "secret.txt"
    secret.parent.mkdir()
    secret.write_text(SECRET, encoding="utf-8")
    index = planted_index(tmp_path, "secret.txt")
    manifest = index.with_name("emb.manifest.json")
    data = json.loads(manifest.read_text(encoding="utf-8"))
    data["provenance"]["corpus_root"] = str(secret.parent)
    manifest.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    if relative:  # as a user types it, from a working directory of the test's own
        monkeypatch.chdir(tmp_path)
    shown = "out/emb.jsonl" if relative else str(index)
    result = CliRunner().invoke(cli.app, ["search", shown, TEXTS[0]], env={"COLUMNS": "300"})
    assert result.exit_code == 0, result.output
    assert SECRET not in result.output
    assert "(no text stored)" in result.output


def test_a_snippet_is_only_the_text_the_output_stores(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET, encoding="utf-8")
    assert Hit(1.0, "d", 0, (0, 40), {"path": str(secret)}).snippet() == ""
    assert Hit(1.0, "d", 0, (0, 40), {"path": str(secret)}, "stored text").snippet() == (
        "stored text"
    )
