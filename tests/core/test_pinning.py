"""A run's weights, pinned once (model contract 1.4, :mod:`seamline.core.pinning`).

The toy model here names its weights by a tag the test changes under it (``INSTALLED``,
the files on disk) and pins them by filling ``digest``; ``load`` refuses weights that are
not the pinned ones, as the first-party encoder's ``load`` checks ``sha256``. The
encoder's own pin (a real ``model.safetensors`` replaced under an index) is tested end to
end in ``tests/components/test_weights_pin.py``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import ContractViolation, Model, ResumeRefused, UserError
from seamline.contracts.testing.model import ModelContract
from seamline.core.config import parse_pipeline
from seamline.core.job import PipelineJob
from seamline.core.orchestrator import Orchestrator
from seamline.core.pinning import KeptModel, pinned, pinned_model
from seamline.core.pipeline import Pipeline
from seamline.core.precision import records
from seamline.core.precision.hardware import Hardware
from seamline.core.precision.negotiate import decide_precision
from seamline.core.provenance import spec_sha256
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.seams import failed_at
from tests.core.toy import LoaderCrash, ToyConfig, ToyModel, toy_registry
from tests.scaling.test_job import InProcessExecutor

INSTALLED = {"weights": "v1"}
"""What the toy model's weights are now (the files at the place its configuration names)."""


class PinnedToyConfig(ToyConfig):
    digest: str | None = None


class PinnedToy(ToyModel):
    """The toy model, pinning its weights by their tag and refusing other weights at load."""

    name: ClassVar[str] = "pinned-toy"
    contract_version: ClassVar[str] = "1.4"
    Config = PinnedToyConfig  # type: ignore[assignment]
    config: PinnedToyConfig  # type: ignore[assignment]
    loaded: ClassVar[list[str | None]] = []

    def pinned_config(self) -> PinnedToyConfig:  # type: ignore[override]
        if self.config.digest is not None:
            return self.config
        return self.config.model_copy(update={"digest": INSTALLED["weights"]})

    def load(self) -> Any:
        PinnedToy.loaded.append(self.config.digest)
        if self.config.digest not in (None, INSTALLED["weights"]):
            raise UserError(f"weights {INSTALLED['weights']}, pinned {self.config.digest}")
        return super().load()


class RenamingToy(PinnedToy):
    """A broken model: its pin changes a setting the pipeline gives."""

    name: ClassVar[str] = "renaming-toy"

    def pinned_config(self) -> PinnedToyConfig:  # type: ignore[override]
        return self.config.model_copy(update={"max_length": self.config.max_length + 1})


def registry() -> Registry:
    extra = [
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.4"
        )
        for c in (PinnedToy, RenamingToy)
    ]
    jsonl = ComponentInfo(
        "sink", "jsonl", "seamline.components.sinks.jsonl:JsonlSink", "tests", "0", "ok", "",
        JsonlSink, JsonlSink.contract_version,
    )  # fmt: skip
    executor = ComponentInfo(
        "executor", "in-process", f"{InProcessExecutor.__module__}:InProcessExecutor",
        "tests", "0", "ok", "", InProcessExecutor, "1.0",
    )  # fmt: skip
    return Registry([*toy_registry().entries(), *extra, jsonl, executor])


TEXTS = [f"w{i} " * (1 + i % 5) for i in range(12)]


def pipeline_text(out: Path, model: str = "{use: pinned-toy}", executor: str = "") -> str:
    executor_setting = f", executor: {executor}" if executor else ""
    return (
        "pipeline: pinning\n"
        f"loader: {{use: list, with: {{texts: {json.dumps(TEXTS)}}}}}\n"
        f"model: {model}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(str(out / 'emb.jsonl'))}}}}}\n"
        f"run: {{batch_size: 2, buckets: [4, 8], checkpoint_every: 2{executor_setting}}}\n"
    )


def manifest(out: Path) -> dict[str, Any]:
    return json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@pytest.fixture(autouse=True)
def weights_v1(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(INSTALLED, "weights", "v1")
    monkeypatch.setattr(PinnedToy, "loaded", [])


def test_the_spec_hash_is_of_what_the_pipeline_asks_not_of_what_the_model_pinned(
    tmp_path: Path,
) -> None:
    # The settled spec read the pinned configuration: a run's manifest recorded another
    # spec_sha256 than `seamline validate` prints as "as its output's manifest will record".
    reg = registry()
    asked = parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg)
    Orchestrator(asked, reg).run()
    assert manifest(tmp_path)["model"]["with"]["digest"] == "v1"  # the pin is recorded
    assert manifest(tmp_path)["provenance"]["spec_sha256"] == spec_sha256(asked)


def test_a_run_loads_and_records_the_weights_it_pinned(tmp_path: Path) -> None:
    reg = registry()
    Orchestrator(parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg), reg).run()
    recorded = manifest(tmp_path)
    assert recorded["model"]["with"]["digest"] == "v1"
    assert PinnedToy.loaded == ["v1"], "the model that ran was built from the pinned config"


def test_a_pipeline_that_pins_its_weights_itself_keeps_its_own_pin(tmp_path: Path) -> None:
    reg = registry()
    text = pipeline_text(tmp_path, "{use: pinned-toy, with: {digest: v0}}")
    with pytest.raises(UserError, match="weights v1, pinned v0"):
        Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()


def test_the_driver_pins_before_the_shards_run(tmp_path: Path) -> None:
    """A sharded run's manifest is written by the driver, from the pipeline it pinned."""
    reg = registry()
    text = pipeline_text(tmp_path, executor="{use: in-process, with: {shards: 3}}")
    Pipeline(parse_pipeline(text, "p.yaml", reg), reg).run()
    assert manifest(tmp_path)["model"]["with"]["digest"] == "v1"
    assert PinnedToy.loaded == ["v1"], "the shards' worker built its model from the driver's pin"


def test_weights_replaced_between_the_pin_and_a_worker_are_refused(tmp_path: Path) -> None:
    reg = registry()
    text = pipeline_text(tmp_path, executor="{use: in-process, with: {shards: 2}}")
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", reg), reg)
    pinned_pipeline = pipeline._decided()
    assert pinned_pipeline.model.config.digest == "v1"  # type: ignore[attr-defined]
    INSTALLED["weights"] = "v2"
    with pytest.raises(UserError, match="weights v2, pinned v1"):
        Orchestrator(pinned_pipeline, reg).run()
    assert not (tmp_path / "emb.jsonl").exists()


def test_a_resume_whose_weights_changed_is_refused_naming_them(tmp_path: Path) -> None:
    reg = registry()
    first = Orchestrator(parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg), reg)
    first.loader.config = first.loader.config.model_copy(update={"crash_at": "d7"})
    with pytest.raises(LoaderCrash):
        first.run()
    INSTALLED["weights"] = "v2"
    second = Orchestrator(parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg), reg)
    with pytest.raises(ResumeRefused) as refused:
        second.run(resume=True)
    said = str(refused.value)
    assert "model.with.digest was 'v1', now 'v2'" in said
    assert "max_length" not in said, "only what differs is named"
    INSTALLED["weights"] = "v1"
    third = Orchestrator(parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg), reg)
    assert third.run(resume=True).resumed_from is not None


def test_a_pin_may_only_fill_what_the_pipeline_left_unset(tmp_path: Path) -> None:
    reg = registry()
    text = pipeline_text(tmp_path, "{use: renaming-toy, with: {max_length: 8}}")
    resolved = parse_pipeline(text, "p.yaml", reg)
    with pytest.raises(
        ContractViolation, match="changed max_length, which the pipeline sets"
    ) as raised:
        Orchestrator(resolved, reg)
    assert failed_at(raised.value) == "model 'renaming-toy' (pinned_config, from tests 0)"
    model = RenamingToy(PinnedToyConfig())
    unset = parse_pipeline(pipeline_text(tmp_path, "{use: renaming-toy}"), "p.yaml", reg)
    assert pinned(unset, model).model.config.max_length == 17  # type: ignore[attr-defined]


def test_a_pin_of_another_type_is_a_contract_violation(tmp_path: Path) -> None:
    reg = registry()
    resolved = parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg)
    model = PinnedToy(PinnedToyConfig())
    model.pinned_config = lambda: ToyConfig()  # type: ignore[method-assign, assignment, return-value]
    with pytest.raises(ContractViolation, match="returned a ToyConfig, not its PinnedToyConfig"):
        pinned(resolved, model)


def test_a_model_written_before_1_4_pins_nothing(tmp_path: Path) -> None:
    reg = registry()
    text = pipeline_text(tmp_path, "{use: toy}")
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    assert manifest(tmp_path)["model"]["with"] == ToyConfig().model_dump(mode="json")


def test_the_contract_suite_catches_a_pin_that_changes_a_given_setting() -> None:
    suite = ModelContract()
    suite.test_pinned_config_only_fills_what_the_config_leaves_unset(PinnedToy(PinnedToyConfig()))
    suite.test_pinned_config_only_fills_what_the_config_leaves_unset(ToyModel(ToyConfig()))
    with pytest.raises(AssertionError, match=r"pinned_config\(\) changed max_length, which"):
        suite.test_pinned_config_only_fills_what_the_config_leaves_unset(
            RenamingToy(PinnedToyConfig(max_length=8))
        )


def test_a_broken_pin_at_the_driver_is_the_models_failure(tmp_path: Path) -> None:
    reg = registry()
    text = pipeline_text(tmp_path, "{use: renaming-toy, with: {max_length: 8}}")
    with pytest.raises(ContractViolation) as raised:
        Pipeline(parse_pipeline(text, "p.yaml", reg), reg).run()
    assert failed_at(raised.value) == "model 'renaming-toy' (pinned_config, from tests 0)"


def test_a_null_setting_is_unset_and_may_be_pinned(tmp_path: Path) -> None:
    reg = registry()
    text = pipeline_text(tmp_path, "{use: pinned-toy, with: {digest: null}}")
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    assert manifest(tmp_path)["model"]["with"]["digest"] == "v1"


def test_gate_figures_are_reused_for_the_same_weights_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A precision record is keyed by the pinned weights: replaced ones are checked anew."""
    monkeypatch.setenv(records.DIRECTORY_VARIABLE, str(tmp_path / "records"))
    reg = registry()
    text = pipeline_text(tmp_path) + "precision: auto\n"
    bf16 = Hardware("cpu", "cpu", frozenset({"avx512_bf16"}))

    def reason() -> str:
        decision = decide_precision(parse_pipeline(text, "p.yaml", reg), reg, hardware=bf16)
        assert decision.chosen == "bfloat16"
        return decision.chosen_candidate.reasons[-1]

    assert "gate passed on the run's first" in reason()
    assert "gate passed earlier" in reason()
    INSTALLED["weights"] = "v2"
    assert "gate passed on the run's first" in reason()


def test_a_pipeline_run_again_on_replaced_weights_negotiates_its_precision_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long-lived ``Pipeline`` keeps its precision only while the weights are the same:
    the gate that chose bfloat16 checked the weights of the run that chose it."""
    import seamline.core.pipeline as pipeline_module

    folder = tmp_path / "records"
    monkeypatch.setenv(records.DIRECTORY_VARIABLE, str(folder))
    bf16 = Hardware("cpu", "cpu", frozenset({"avx512_bf16"}))
    monkeypatch.setattr(Hardware, "detect", classmethod(lambda cls, environ=None: bf16))
    negotiations: list[str] = []

    def counted(pipeline: Any, registry: Registry) -> Any:
        negotiations.append(pipeline.model.config.digest)
        return decide_precision(pipeline, registry)

    monkeypatch.setattr(pipeline_module, "decide_precision", counted)
    reg = registry()
    text = pipeline_text(tmp_path) + "precision: auto\n"
    pipeline = Pipeline(parse_pipeline(text, "p.yaml", reg), reg)
    assert pipeline.run().precision["chosen"] == "bfloat16"
    assert pipeline.run().precision["chosen"] == "bfloat16"
    assert negotiations == ["v1"], "the same weights keep the decision"
    for record in folder.iterdir():
        record.unlink()
    INSTALLED["weights"] = "v2"
    summary = pipeline.run()
    assert negotiations == ["v1", "v2"], "replaced weights are negotiated again"
    assert summary.precision["candidates"][0]["recorded"] is None  # gated by this run
    assert len(list(folder.iterdir())) == 1, "the gate checked (and recorded) the new weights"
    assert manifest(tmp_path)["model"]["with"]["digest"] == "v2"


class CountedToy(ToyModel):
    """The toy model, counting how often it is built and closed (a slow constructor's cost)."""

    name: ClassVar[str] = "counted-toy"
    built: ClassVar[list[str]] = []
    closed: ClassVar[list[str]] = []

    def __init__(self, config: ToyConfig) -> None:
        super().__init__(config)
        CountedToy.built.append("built")

    def precisions(self) -> Sequence[str]:
        return ("float32",)  # so that with_precision is the model itself, not a copy

    def with_precision(self, precision: str) -> Model[Any]:  # type: ignore[override]
        return Model.with_precision(self, precision)

    def close(self) -> None:
        CountedToy.closed.append("closed")
        super().close()


def counted_registry() -> Registry:
    counted = ComponentInfo(
        "model", "counted-toy", f"{__name__}:CountedToy", "tests", "0", "ok", "", CountedToy, "1.0"
    )
    return Registry([*registry().entries(), counted])


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(CountedToy, "built", [])
    monkeypatch.setattr(CountedToy, "closed", [])


@pytest.mark.usefixtures("counted")
def test_a_local_run_builds_its_model_once(tmp_path: Path) -> None:
    # The driver built the model to pin it (even one that pins nothing), closed it, and the
    # worker in the same process built it again: a 20 s constructor made a 6-document run
    # take 41 s. The driver's model now goes to the worker.
    reg = counted_registry()
    text = pipeline_text(tmp_path, "{use: counted-toy}", executor="{use: local}")
    Pipeline(parse_pipeline(text, "p.yaml", reg), reg).run()
    assert (tmp_path / "emb.jsonl").exists()
    assert CountedToy.built == ["built"], "built once, at the driver, and run by the worker"
    assert CountedToy.closed == ["closed"], "closed once, by the worker that ran it"


@pytest.mark.usefixtures("counted")
def test_a_run_whose_workers_are_elsewhere_keeps_no_model_at_the_driver(tmp_path: Path) -> None:
    reg = counted_registry()
    resolved = parse_pipeline(pipeline_text(tmp_path, "{use: counted-toy}"), "p.yaml", reg)
    job = PipelineJob(resolved, reg)
    try:
        job.resolved = pinned_model(resolved, reg, job.kept)
        assert CountedToy.closed == [], "kept for a worker of this process"
        job.worker_factory()  # Ray's way: the workers build their own
        assert CountedToy.closed == ["closed"], "not held while remote workers run"
    finally:
        job.close()
    assert CountedToy.closed == ["closed"], "closed once"


def test_a_model_whose_pin_changes_its_configuration_is_built_again(tmp_path: Path) -> None:
    reg = registry()
    resolved = parse_pipeline(pipeline_text(tmp_path), "p.yaml", reg)
    kept = KeptModel()
    pinned_pipeline = pinned_model(resolved, reg, kept)
    assert pinned_pipeline is not resolved
    assert kept.take(pinned_pipeline) is None, "built from the unpinned configuration: not kept"
