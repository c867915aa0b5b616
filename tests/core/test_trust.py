"""require_conformance: only components with a passing record for the versions installed now."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts import AttentionChosen, UnsupportedError
from seamline.contracts.conformance import (
    CheckResult,
    ConformanceRecord,
    Environment,
    current_environment,
)
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.trust import (
    STORE_VARIABLE,
    attribute,
    load_records,
    save,
    untrusted_candidates,
)
from seamline.core.trust.records import MAX_RECORD_BYTES
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry

TEXTS = ["one two", "three four five"]


@pytest.fixture(autouse=True)
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    directory = tmp_path / "records"
    monkeypatch.setenv(STORE_VARIABLE, str(directory))
    return directory


def registered_contract(name: str) -> str:
    """The contract version the registry lists the attention with (what a record pins)."""
    return toy_registry().get("attention", name).contract_version or ""


def record(
    name: str,
    *,
    outcome: str = "passed",
    environment: Environment | None = None,
    config: dict[str, Any] | None = None,
    contract: str | None = None,
) -> ConformanceRecord:
    (component,) = candidates(name)
    unattributed = ConformanceRecord(
        kind="attention",
        name=name,
        component_class=f"{type(component).__module__}:{type(component).__qualname__}",
        distribution=None,
        distribution_version=None,
        contract_version=contract or registered_contract(name),
        config=config if config is not None else component.config.model_dump(mode="json"),
        environment=environment or current_environment(),
        created="2026-11-29T00:00:00+00:00",
        results=(CheckResult(check="feature_case[plain-f32]", outcome=outcome),),  # type: ignore[arg-type]
    )
    # As `seamline check` does: the registry says which distribution (and version) made it.
    return attribute(unattributed, toy_registry())


def run(attention: str) -> list[AttentionChosen]:
    registry = toy_registry()
    text = (
        "pipeline: trust\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "monitors: [{use: recording}]\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4]}\n"
    )
    Orchestrator(parse_pipeline(text, "t.yaml", registry), registry).run()
    return [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]


def candidates(*names: str) -> list[Any]:
    registry = toy_registry()
    return [registry.create("attention", name) for name in names]


def untrusted(*names: str, required: bool = True) -> dict[str, str]:
    registry = toy_registry()
    implementations = candidates(*names)
    infos = {c.name: registry.info_of(c) for c in implementations}
    return untrusted_candidates(implementations, infos, required)


def test_not_required_means_no_check() -> None:
    assert untrusted("native", "off-by-ten", required=False) == {}


def test_without_records_nothing_is_trusted_and_the_fix_is_named() -> None:
    problems = untrusted("native")
    assert problems == {
        "native": "no conformance record; run 'seamline check attention:native --record'"
    }


def test_only_the_candidate_with_a_passing_record_serves(store: Path) -> None:
    save(record("native"), store)
    chosen = run("{use: [off-by-ten, native], require_conformance: true}")
    assert [e.chosen for e in chosen] == ["native"]
    (reason,) = chosen[0].rejected["off-by-ten"]
    assert reason.startswith("conformance required: no conformance record")


def test_a_jax_upgrade_withdraws_trust(store: Path) -> None:
    now = current_environment()
    older = now.model_copy(update={"jax": "0.0.1", "jaxlib": "0.0.1"})
    save(record("native", environment=older), store)
    problem = untrusted("native")["native"]
    assert f"jax 0.0.1 (now: {now.jax})" in problem
    assert f"jaxlib 0.0.1 (now: {now.jaxlib})" in problem
    with pytest.raises(UnsupportedError, match="conformance required"):
        run("{use: native, require_conformance: true}")


def test_a_failing_record_does_not_count(store: Path) -> None:
    save(record("native", outcome="failed"), store)
    problem = untrusted("native")["native"]
    assert "fails (1 failed)" in problem


def test_a_record_for_another_configuration_does_not_count(store: Path) -> None:
    save(record("native", config={"something": "else"}), store)
    problem = untrusted("native")["native"]
    assert "another configuration" in problem


def test_a_record_for_another_contract_version_does_not_count(store: Path) -> None:
    # A record earned against an older contract cleared a component that now declares a
    # newer one, whose suite has checks the record never ran.
    save(record("native", contract="0.9"), store)
    problem = untrusted("native")["native"]
    assert f"contract 0.9 (the component's now: {registered_contract('native')})" in problem
    save(record("native"), store)
    assert untrusted("native") == {}


def test_all_skipped_proves_nothing(store: Path) -> None:
    save(record("native", outcome="skipped"), store)
    assert "native" in untrusted("native")


def test_damaged_records_are_ignored(store: Path) -> None:
    store.mkdir(parents=True)
    (store / "attention-native-broken.json").write_text("{not json", encoding="utf-8")
    save(record("native"), store)
    assert untrusted("native") == {}


def test_a_fifo_or_an_oversized_file_in_the_store_is_skipped_not_waited_on(
    store: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The store is read by every run that requires conformance: a FIFO named like a record
    # used to block it forever (a plain read waits for a writer), and a file of any size
    # was read whole. Relative, from a working directory of the test's own, too.
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv(STORE_VARIABLE, "records")
    store.mkdir(parents=True)
    passing = record("native")
    os.mkfifo(store / "attention-native-fifo.json")
    padded = passing.model_dump_json().encode() + b" " * MAX_RECORD_BYTES  # valid, too big
    (store / "attention-native-huge.json").write_bytes(padded)
    found: list[list[ConformanceRecord]] = []
    reader = threading.Thread(target=lambda: found.append(load_records()), daemon=True)
    reader.start()
    reader.join(timeout=30)
    assert found, "reading the record store waited on a FIFO"
    assert found[0] == []  # neither counts: the oversized one is valid but over the bound
    save(passing, store)
    assert load_records() == [passing]
    assert untrusted("native") == {}
