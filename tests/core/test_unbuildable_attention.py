"""An attention that cannot be built never takes down the pipelines that do not name it.

An attention class that left ``supports`` and ``__call__`` unimplemented (abstract) was
listed ``ok``; every ``auto`` pipeline, naming it or not, then failed building it with
``TypeError: Can't instantiate abstract class`` naming neither the component nor its
distribution, and ``explain`` printed a traceback. Discovery now refuses such a class;
and under ``auto`` a candidate whose constructor raises is left out, with the reason,
while a pipeline naming it is told which component and distribution failed. ``explain``
lists it too, ``left out`` with why: it was missing from the table and the JSON, and
only a log line said so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from structlog.testing import capture_logs

from seamline.components.attention.native import NativeAttention
from seamline.contracts import Attention, ComponentConfig
from seamline.core.attention.candidates import build_candidates
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry, refusal_reason
from seamline.core.seams import failed_at
from tests.core.toy import MemorySink, toy_registry, two_document_pipeline, with_attention


class Unimplemented(Attention[ComponentConfig]):
    """Forgot ``supports`` and ``__call__``."""

    name: ClassVar[str] = "notimpl"
    contract_version: ClassVar[str] = "1.0"
    Config: ClassVar[type[ComponentConfig]] = ComponentConfig


class RaisesWhenBuilt(NativeAttention):
    name: ClassVar[str] = "raises"
    contract_version: ClassVar[str] = "1.1"
    is_reference: ClassVar[bool] = False

    def __init__(self, config: Any) -> None:
        raise RuntimeError("no GPU driver")


def test_an_abstract_attention_is_refused_naming_what_it_leaves_out() -> None:
    reason = refusal_reason("attention", "notimpl", Unimplemented)
    assert reason is not None
    assert reason.startswith("does not implement __call__, supports")
    assert refusal_reason("attention", "native", NativeAttention) is None


def registry() -> Registry:
    return with_attention(toy_registry(), RaisesWhenBuilt, "acme-raises", "0.3")


def pipeline(attention: str, reg: Registry) -> Any:
    return two_document_pipeline(attention, reg)


def test_auto_leaves_out_a_candidate_that_fails_to_build_and_says_why() -> None:
    reg = registry()
    resolved = pipeline("{use: auto}", reg)
    assert "raises" in [c.name for c in resolved.attention.candidates]
    candidates = build_candidates(resolved.attention, reg)
    try:
        assert "raises" not in [a.name for a in candidates.implementations]
        assert candidates.left_out == {
            "raises": "failed to build (acme-raises 0.3): RuntimeError: no GPU driver"
        }
    finally:
        candidates.close()
    MemorySink.reset()
    summary = Orchestrator(resolved, reg).run()
    assert summary.counts.documents == 2
    assert "raises" not in summary.attention.values()


def test_a_named_attention_that_fails_to_build_is_named_with_its_distribution() -> None:
    reg = registry()
    with pytest.raises(RuntimeError) as failed:
        Orchestrator(pipeline("{use: raises}", reg), reg)
    assert failed_at(failed.value) == "attention 'raises' (build, from acme-raises 0.3)"


def test_the_auto_order_table_leaves_it_out_with_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # `components --auto-order` built every usable attention unguarded: one whose
    # constructor raised ended the command with a traceback.
    from typer.testing import CliRunner

    from seamline.adapters.cli import loading
    from seamline.adapters.cli.main import app

    monkeypatch.setattr(loading, "registry", registry)
    result = CliRunner().invoke(app, ["components", "--auto-order"])
    assert result.exit_code == 0, result.output
    assert "warning: attention 'raises' (acme-raises 0.3) is left out: it failed to build " in (
        " ".join(result.output.split())
    )
    assert "| shape |" in result.output
    assert "native (" in result.output


EXPLAINED = """\
pipeline: p
loader: {use: list, with: {texts: ["a b", "c d e"]}}
model: {use: toy}
attention: {use: auto}
sink: {use: memory}
run: {batch_size: 2, buckets: [4, 8]}
"""


@pytest.mark.parametrize("format_", ["text", "json"])
def test_explain_lists_it_as_left_out_with_why(
    format_: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from typer.testing import CliRunner

    from seamline.adapters import logging_setup
    from seamline.adapters.cli.main import app

    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: registry()))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(EXPLAINED, encoding="utf-8")
    with capture_logs() as logs:  # the warning, kept off stdout
        result = CliRunner().invoke(
            app, ["explain", "p.yaml", "--format", format_], env={"COLUMNS": "200"}
        )
    assert result.exit_code == 0, result.output
    assert [e["event"] for e in logs] == ["attention left out of auto: it failed to build"]
    why = "failed to build (acme-raises 0.3): RuntimeError: no GPU driver"
    if format_ == "text":
        rows = [" ".join(line.split()) for line in result.stdout.splitlines()]
        assert sum(row.startswith("length ") for row in rows) >= 2
        tables = sum(row.startswith("┃ candidate ") for row in rows)  # buckets alike share one
        assert rows.count(f"│ raises │ left out │ {why} │") == tables  # in every table
        return
    document = json.loads(result.stdout)
    assert document["attention"]["left_out"] == [{"name": "raises", "why": why}]
    for bucket in document["buckets"]:
        assert bucket["chosen"] != "raises"
        assert bucket["candidates"][-1] == {
            "name": "raises",
            "verdict": "left out",
            "why": why,
            "measured_seconds": None,
        }
