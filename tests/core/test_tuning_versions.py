"""Timings of another JAX are set aside, and ``explain`` says so: not "not measured yet".

A tester tuned under jax/jaxlib 0.10.2, then ran 0.9.0 under the same home. The timings
were rightly not used (a timing holds for the versions it was measured under), but
``explain`` said only "not measured yet: the first run measures it, or run 'seamline
tune'", as if none had ever been taken; search and ``--resume`` name the versions.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup
from seamline.adapters.cli.main import app
from seamline.contracts import versions
from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.plan import explain
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import SPEEDS, TWO_CANDIDATES, stop_the_clock

PIPELINE = TWO_CANDIDATES.format(name="versions")
THEN = f"jax {versions.installed_version('jax')}, jaxlib {versions.installed_version('jaxlib')}"


@pytest.fixture
def older_jax(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Timings taken by a run under the JAX installed here, then JAX 'downgraded' to 0.9.0."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "tuning"))
    stop_the_clock(monkeypatch, SPEEDS)
    registry = toy_registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", registry), registry).run()
    assert list((tmp_path / "tuning").glob("attention-*.json"))
    real = versions.installed_version

    def older(name: str, *args: Any) -> Any:
        return "0.9.0" if name in ("jax", "jaxlib") else real(name, *args)

    monkeypatch.setattr(tuning_module, "installed_version", older)
    monkeypatch.setattr(versions, "installed_version", older)


@pytest.mark.usefixtures("older_jax")
def test_explain_names_the_versions_of_the_timings_set_aside() -> None:
    registry = toy_registry()
    plan = explain(parse_pipeline(PIPELINE, "p.yaml", registry), registry)
    assert all(bucket.measured is None for bucket in plan.buckets)
    # The run met lengths 4 and 8 (its two documents); explain plans a longer bucket too.
    assert [b.set_aside for b in plan.buckets if b.length in (4, 8)] == [(THEN,), (THEN,)]


@pytest.mark.usefixtures("older_jax")
def test_explain_says_it_on_the_terminal_and_in_json(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["explain", "p.yaml"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert (
        f"not measured under jax 0.9.0, jaxlib 0.9.0: timings measured under {THEN} were set "
        "aside (a timing holds for the versions it was measured under); the first run "
        "measures it, or run `seamline tune`"
    ) in said
    result = CliRunner().invoke(app, ["explain", "p.yaml", "--format", "json"])
    assert result.exit_code == 0, result.output
    found = [b["tuning_set_aside"] for b in json.loads(result.stdout)["buckets"]]
    assert found.count([THEN]) == 2


@pytest.mark.usefixtures("older_jax")
def test_a_hand_edited_version_is_shown_bounded_and_on_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry's ``about.jax`` edited to 3,000 characters with a newline was printed whole
    by ``explain``, breaking its table: a version read from the cache is shown cut, its
    control characters as "\ufffd"."""
    for path in (tmp_path / "tuning").glob("attention-*.json"):
        entry = json.loads(path.read_text(encoding="utf-8"))
        entry["about"]["jax"] = "0.10.2\nx" + "y" * 3000
        path.write_text(json.dumps(entry), encoding="utf-8")
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    result = CliRunner().invoke(app, ["explain", "p.yaml", "--format", "json"])
    assert result.exit_code == 0, result.output
    found = {v for b in json.loads(result.stdout)["buckets"] for v in b["tuning_set_aside"]}
    assert found, result.stdout
    for versions_said in found:
        assert "\n" not in versions_said
        assert len(versions_said) < 120, versions_said
        assert versions_said.startswith("jax 0.10.2\ufffdxyyy"), versions_said
    result = CliRunner().invoke(app, ["explain", "p.yaml"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "y" * 100 not in result.stdout
    said = [line for line in result.stdout.splitlines() if "were set aside" in line]
    assert said, result.stdout
    assert all("\ufffdxyyy" in line for line in said), said
