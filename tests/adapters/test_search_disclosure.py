"""``seamline search`` never prints a file an index record's metadata merely names.

A record's ``metadata.path`` is data: whoever can write an index can set it to
``/etc/passwd`` or to a secret of the user's. A snippet comes from the text the index
stores, or from a file under the corpus root the run recorded, and from nowhere else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli import main as cli
from seamline.adapters.search import Hit
from seamline.core.registry import Registry
from tests.adapters.test_search import TEXTS, registry, write_index

SECRET = "hunter2-the-secret-of-the-user"


def planted_index(tmp_path: Path, path_of: str) -> Path:
    """A jsonl index whose records hold no text and name ``path_of`` as their file."""
    out = tmp_path / "out" / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    lines = []
    for line in out.read_text(encoding="utf-8").splitlines():
        record = json.loads(line)
        record.pop("text", None)
        record["span"] = [0, 200]
        record["metadata"] = {"path": path_of}
        lines.append(json.dumps(record))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
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


def test_a_snippet_is_read_only_from_a_file_under_the_corpus_root(tmp_path: Path) -> None:
    root = tmp_path / "corpus"
    root.mkdir()
    (root / "doc.txt").write_text("inside the corpus", encoding="utf-8")
    outside = tmp_path / "secret.txt"
    outside.write_text(SECRET, encoding="utf-8")
    (root / "link.txt").symlink_to(outside)

    def snippet(path: str, corpus: Path | None = root) -> str:
        return Hit(1.0, "d", 0, (0, 40), {"path": path}, None, corpus).snippet()

    assert snippet(str(root / "doc.txt")) == "inside the corpus"
    assert snippet("doc.txt") == "inside the corpus"  # relative to the root
    assert snippet(str(outside)) == ""
    assert snippet(str(root / ".." / "secret.txt")) == ""
    assert snippet(str(root / "link.txt")) == ""  # a link under the root that leaves it
    assert snippet(str(root / "doc.txt"), corpus=None) == ""  # no recorded root: no file
    assert Hit(1.0, "d", 0, (0, 40), {"path": str(outside)}, "stored text").snippet() == (
        "stored text"
    )
