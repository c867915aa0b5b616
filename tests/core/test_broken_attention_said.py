"""An attention plugin that no longer imports is said wherever ``auto`` is, never dropped silently.

A tester switched JAX 0.10.2 to 0.9.0 with a third-party attention whose module imports
``jax.lax.stack`` (new in 0.10). ``seamline components`` listed it broken, but ``auto``
took the usable names only: ``explain``, ``components --auto-order`` and ``run -v`` never
mentioned it, and ``attention: {use: auto, with: {acme-eager: {}}}`` was refused as "not a
candidate (did you mean 'acme-lazy'?)", as if it were a typo. It is now a "cannot serve"
row with its reason, a warning in the run, and a refusal in each decision (the event's
``rejected``, the span's refusals), as an unavailable kernel is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs
from typer.testing import CliRunner

from seamline.contracts import AttentionChosen, ComponentConfig, ConfigError
from seamline.core.attention.candidates import build_candidates
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.test_registry import with_fixture_plugins  # noqa: F401 (a fixture)
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry, two_document_pipeline

FAILURE = "import failed: ImportError: cannot import name 'stack' from 'jax.lax'"
WHY = f"broken: {FAILURE}"
WARNING = "attention installed but not usable: auto leaves it out"


def registry() -> Registry:
    """The toy registry and an attention whose module raised ImportError on import."""
    broken = ComponentInfo(
        "attention", "acme-eager", "acme_stack.eager:EagerStack", "acme-stack", "0.1.0",
        "broken", FAILURE,
    )  # fmt: skip
    return Registry([*toy_registry().entries(), broken])


def test_discovery_names_a_plugin_that_failed_to_import_as_unusable(
    with_fixture_plugins: Registry,  # noqa: F811
) -> None:
    unusable = with_fixture_plugins.unusable("attention")
    assert unusable["exploding"].startswith("broken: import failed: ")
    assert "native" not in unusable


def test_a_run_warns_once_and_each_decision_rejects_it() -> None:
    reg = registry()
    resolved = two_document_pipeline("{use: auto}", reg)
    assert resolved.attention.unusable == {"acme-eager": WHY}
    MemorySink.reset()
    RecordingMonitor.events.clear()
    with capture_logs() as logs:
        recording = RecordingMonitor(ComponentConfig())
        summary = Orchestrator(resolved, reg, extra_monitors=[recording]).run()
    assert summary.counts.documents == 2
    assert [e["why"] for e in logs if e["event"] == WARNING] == [f"acme-eager: {WHY}"]
    chosen = [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]
    assert chosen, "no attention decision was reported"
    assert all(e.rejected.get("acme-eager") == (WHY,) for e in chosen)


def test_the_planner_refuses_it_for_every_shape_first() -> None:
    reg = registry()
    candidates = build_candidates(two_document_pipeline("{use: auto}", reg).attention, reg)
    try:
        planner = candidates.planner(measure=False)
        assert [r.text() for r in planner.unusable] == [f"acme-eager: {WHY}"]
    finally:
        candidates.close()


def test_settings_for_it_say_it_is_installed_but_broken() -> None:
    with pytest.raises(ConfigError) as refused:
        two_document_pipeline("{use: auto, with: {acme-eager: {}}}", registry())
    message = str(refused.value)
    assert "installed but cannot be a candidate: it is broken: import failed" in message
    assert "did you mean" not in message


EXPLAINED = """\
pipeline: p
loader: {use: list, with: {texts: ["a b", "c d e"]}}
model: {use: toy}
attention: {use: auto}
sink: {use: memory}
run: {batch_size: 2, buckets: [4, 8]}
"""


@pytest.mark.parametrize("format_", ["text", "json"])
def test_explain_lists_it_as_cannot_serve_with_why(
    format_: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from seamline.adapters import logging_setup
    from seamline.adapters.cli.main import app

    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(EXPLAINED, encoding="utf-8")
    with capture_logs() as logs:
        result = CliRunner().invoke(
            app, ["explain", "p.yaml", "--format", format_], env={"COLUMNS": "300"}
        )
    assert result.exit_code == 0, result.output
    assert [e["event"] for e in logs] == [WARNING]
    if format_ == "text":
        rows = [" ".join(line.split()) for line in result.stdout.splitlines()]
        assert sum(row.startswith("length ") for row in rows) >= 2
        tables = sum(row.startswith("┃ candidate ") for row in rows)  # buckets alike share one
        assert rows.count(f"│ acme-eager │ cannot serve │ {WHY} │") == tables
        return
    for bucket in json.loads(result.stdout)["buckets"]:
        row = next(c for c in bucket["candidates"] if c["name"] == "acme-eager")
        assert (row["verdict"], row["why"]) == ("cannot serve", WHY)


def test_the_auto_order_table_warns_of_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from seamline.adapters.cli import loading
    from seamline.adapters.cli.main import app

    monkeypatch.setattr(loading, "registry", registry)
    result = CliRunner().invoke(app, ["components", "--auto-order"])
    assert result.exit_code == 0, result.output
    said = " ".join(result.output.split())
    assert f"warning: attention 'acme-eager' (acme-stack 0.1.0) is left out: it is {WHY}" in said
