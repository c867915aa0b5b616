"""What the CLI prints shows every value as written, wherever it came from.

A pipeline's name (its file), a span's name (a trace file anyone may have written), a
component's name and version (package metadata anyone can publish): none is rich
markup, so ``[draft]`` is not a style that vanishes, ``[/]`` is not a closing tag that
makes rich raise (a traceback instead of the report), ``:x:`` is not an emoji code, and
an escape sequence is shown as "�", never sent to the terminal. One place does this for
every command: ``seamline.adapters.cli.render.console``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import MemorySink, toy_registry

HOSTILE = "a[/]b [draft] :x: \x1b[2J"
"""A closing tag with nothing to close, a style, an emoji code, an escape sequence."""
SHOWN = "a[/]b [draft] :x: \N{REPLACEMENT CHARACTER}[2J"

PIPELINE = """\
pipeline: {name}
loader: {{use: list, with: {{texts: [one, two]}}}}
model: {{use: toy}}
attention: {{use: native}}
sink: {{use: memory}}
"""


@pytest.fixture
def toy_cli(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """The CLI sees the toy components and leaves global logging and tracing alone; the
    working directory is the test's own, holding ``pipeline.yaml`` named HOSTILE."""
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    MemorySink.reset()
    monkeypatch.chdir(tmp_path)
    name = json.dumps(HOSTILE)  # a YAML double-quoted scalar: "\u001b" is the escape
    (tmp_path / "pipeline.yaml").write_text(PIPELINE.format(name=name), encoding="utf-8")
    return tmp_path / "pipeline.yaml"


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "300"})
    assert "\x1b" not in result.output, result.output
    assert "Traceback" not in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    return result


@pytest.mark.parametrize("spelling", ["relative", "absolute"])
def test_run_shows_the_pipelines_name_as_written(spelling: str, toy_cli: Path) -> None:
    path = "pipeline.yaml" if spelling == "relative" else str(toy_cli)
    result = invoke("run", path, "--no-compile-cache")
    assert result.exit_code == 0, result.output
    assert f"done {SHOWN}: 2 documents" in result.output


@pytest.mark.usefixtures("toy_cli")
@pytest.mark.parametrize("command", ["validate", "explain"])
def test_validate_and_explain_show_the_pipelines_name_as_written(command: str) -> None:
    result = invoke(command, "pipeline.yaml")
    assert result.exit_code == 0, result.output
    # validate quotes it (repr: the escape as \x1b); explain's heading shows it.
    expected = repr(HOSTILE) if command == "validate" else f"{SHOWN}: attention"
    assert expected in result.output


def test_trace_summarize_shows_span_names_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    spans = [
        {"name": HOSTILE, "span_id": "r", "start_ns": 0, "end_ns": 2_000_000},
        {"name": "[red]x[/]", "parent_span_id": "r", "start_ns": 0, "end_ns": 1_000_000},
    ]
    Path("t.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    result = invoke("trace", "summarize", "t.jsonl")
    assert result.exit_code == 0, result.output
    assert SHOWN in result.output
    assert "[red]x[/]" in result.output


def test_components_shows_package_metadata_as_written(monkeypatch: pytest.MonkeyPatch) -> None:
    module = ComponentInfo(
        "monitor", "[/]odd", "x:y", "[bold]dist", "1.0 :x:", "broken", "why [/] \x1b[31m", None
    )
    monkeypatch.setattr(
        Registry, "discover", classmethod(lambda cls, trust=None: Registry([module]))
    )
    result = invoke("components", "--kind", "monitor")
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if "[/]odd" in line)
    for cell in ("[bold]dist", "1.0 :x:", "why [/] \N{REPLACEMENT CHARACTER}[31m"):
        assert cell in row, row
