"""Every output says where it came from: components, distributions, versions, pipeline hashes.

A toy run (toy loader and model, seamline's real ``jsonl`` sink as discovery
registers it) writes a manifest; its provenance must name the distribution of each
stage and the sha256 of the pipeline file's bytes, which must change when the file
does, while the resolved spec's hash changes only when what runs changes.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.core.config import load_pipeline
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.core.toy import toy_registry

PIPELINE = """\
pipeline: provenance
loader: {use: list, with: {texts: [one two, three four five]}}
model: {use: toy}
attention: {use: native}
sink: {use: jsonl, with: {path: OUT}}
"""


def with_jsonl(discovered: Registry) -> Registry:
    """The toy components (distribution "tests") and seamline's own jsonl sink."""
    return Registry([*toy_registry().entries(), discovered.get("sink", "jsonl")])


def run(path: Path, reg: Registry, overrides: tuple[str, ...] = ()) -> tuple[Any, dict[str, Any]]:
    pipeline = Pipeline(load_pipeline(path, reg, overrides), reg)
    summary = pipeline.run()
    out = Path(pipeline.resolved.sink.config.model_dump()["path"])
    manifest = json.loads(out.with_name(f"{out.stem}.manifest.json").read_text(encoding="utf-8"))
    return summary, manifest["provenance"]


def write(tmp_path: Path, extra: str = "") -> Path:
    path = tmp_path / "pipeline.yaml"
    text = PIPELINE.replace("OUT", str(tmp_path / "out" / "emb.jsonl")) + extra
    path.write_text(text, encoding="utf-8")
    return path


def test_the_manifest_names_each_stages_distribution_and_the_file_hash(
    tmp_path: Path, registry: Registry
) -> None:
    reg = with_jsonl(registry)
    path = write(tmp_path)
    summary, provenance = run(path, reg)
    components = provenance["components"]
    assert components["sink"] == {
        "use": "jsonl",
        "distribution": "seamline-components",
        "version": metadata.version("seamline-components"),
    }
    assert components["loader"] == {"use": "list", "distribution": "tests", "version": "0"}
    assert components["model"]["distribution"] == "tests"
    assert [a["use"] for a in components["attention"]] == ["native"]
    assert provenance["pipeline_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
    assert provenance["pipeline_file"] == str(path)
    assert dict(summary.provenance) == provenance  # the run summary says the same

    # A comment changes the file's bytes, not what runs.
    edited = write(tmp_path, "# an edit\n")
    _, after_edit = run(edited, reg)
    assert after_edit["pipeline_sha256"] != provenance["pipeline_sha256"]
    assert after_edit["spec_sha256"] == provenance["spec_sha256"]

    # --set changes what runs, not the file.
    _, overridden = run(edited, reg, ("run.batch_size=4",))
    assert overridden["pipeline_sha256"] == after_edit["pipeline_sha256"]
    assert overridden["spec_sha256"] != after_edit["spec_sha256"]


def test_run_and_validate_print_the_provenance(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = with_jsonl(registry)
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: reg))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    path = write(tmp_path)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    for command in (["validate", str(path)], ["run", str(path), "--no-compile-cache", "-v"]):
        result = CliRunner().invoke(app, command, env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert f"pipeline sha256 {digest} (file)" in result.output
        assert "sink jsonl (seamline-components " in result.output


def test_the_environment_that_changes_the_numbers_is_recorded_by_name(
    tmp_path: Path, registry: Registry, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two outputs made under different ``XLA_FLAGS`` (or a matmul precision, 64-bit types)
    had identical provenance: nothing said their vectors were computed otherwise."""
    reg = with_jsonl(registry)
    path = write(tmp_path)
    for name in ("XLA_FLAGS", "JAX_DEFAULT_MATMUL_PRECISION", "JAX_ENABLE_X64", "LIBTPU_INIT_ARGS"):
        monkeypatch.delenv(name, raising=False)
    _, plain = run(path, reg)
    assert plain.get("environment") == {}

    monkeypatch.setenv("XLA_FLAGS", "--xla_cpu_enable_fast_math=false")
    monkeypatch.setenv("JAX_DEFAULT_MATMUL_PRECISION", "highest")
    monkeypatch.setenv("LIBTPU_INIT_ARGS", "x" * 5000)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "hunter2")  # not a named one: never recorded
    _, flagged = run(path, reg)
    environment = flagged["environment"]
    assert set(environment) == {"XLA_FLAGS", "JAX_DEFAULT_MATMUL_PRECISION", "LIBTPU_INIT_ARGS"}
    assert environment["XLA_FLAGS"] == "--xla_cpu_enable_fast_math=false"
    assert environment["JAX_DEFAULT_MATMUL_PRECISION"] == "highest"
    assert len(environment["LIBTPU_INIT_ARGS"]) < 4200, "bounded"
    assert "hunter2" not in json.dumps(flagged)
    assert flagged["spec_sha256"] == plain["spec_sha256"]  # the pipeline is the same
    assert flagged != plain, "the two outputs' provenance tells them apart"
