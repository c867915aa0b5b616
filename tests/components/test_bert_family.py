"""``bert-encoder`` on the BERT-family checkpoints users bring, against sentence-transformers.

``tests/golden/make_family.py`` wrote four tiny random checkpoints, as transformers and
sentence-transformers save them, and what sentence-transformers computes from them on
the golden texts: bge style (CLS pooling, normalised, a query instruction among the
checkpoint's prompts), e5 style (mean pooling, "query: " / "passage: " given in the
config), CLS pooling without normalising (``type_vocab_size`` 1, a tokenizer that
returns no ``token_type_ids``, ``<s>``/``</s>``/``<pad>`` at other ids, ``gelu_new``),
and a plain Hugging Face ``BertForMaskedLM`` checkpoint with no sentence-transformers
files (mean pooling, three layers, ``relu``). Here the encoder must reproduce every
window, span, token and vector (1e-5), documents and queries alike, and refuse the
checkpoints it cannot run when it is built, with a message that says what it found.
"""

from __future__ import annotations

import functools
import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jax
import numpy as np
import numpy.typing as npt
import pytest
from safetensors.numpy import load_file, save_file
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.adapters.search import QueryEncoder, open_index
from seamline.components.attention.native import NativeAttention, NativeConfig
from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import ConfigError, Document, Example, WeightsError
from seamline.contracts.testing import ModelContract
from seamline.core.config.user import user_trust
from seamline.core.embedder import Embedder
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.components.padded_batches import embed_padded

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"
FAMILY = GOLDEN / "family"
META: dict[str, Any] = json.loads((FAMILY / "meta.json").read_text(encoding="utf-8"))
VARIANTS = sorted(META["variants"])
ATOL = 1e-5
BGE_QUERY = "Represent this sentence for searching relevant passages: "

F32 = npt.NDArray[np.float32]


def texts() -> list[str]:
    lines = (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").split("\n")
    return [json.loads(line)["text"] for line in lines if line.strip()]


def config_of(name: str, **changes: Any) -> Config:
    """The ``with:`` block the goldens were made for (meta.json), with ``changes``."""
    block = dict(META["variants"][name]["seamline_with"])
    block["weights"] = str(ROOT / block["weights"])
    return Config.model_validate(block | changes)


def copy_of(name: str, tmp_path: Path) -> Path:
    """A copy of a family checkpoint to break."""
    return Path(shutil.copytree(FAMILY / name, tmp_path / name))


def edit_json(path: Path, change: Callable[[Any], Any]) -> None:
    path.write_text(json.dumps(change(json.loads(path.read_text(encoding="utf-8")))))


# -- parity with the reference ----------------------------------------------------------------


@dataclass(frozen=True)
class Run:
    """What the encoder produced for every golden text, documents and queries."""

    name: str
    encoder: BertEncoder
    examples: list[Example]
    embeddings: F32
    queries: list[Example]
    query_embeddings: F32
    golden: dict[str, npt.NDArray[Any]]


@pytest.fixture(scope="module", params=VARIANTS)
def run(request: pytest.FixtureRequest) -> Run:
    name = request.param
    encoder = BertEncoder(
        config_of(name, sha256=META["variants"][name]["model_safetensors_sha256"])
    )
    params = encoder.load()
    apply = jax.jit(functools.partial(encoder.apply, attention=NativeAttention(NativeConfig())))
    examples = [
        example
        for index, text in enumerate(texts())
        for example in encoder.prepare(Document(id=str(index), text=text))
    ]
    querying = encoder.for_queries()
    # A query is its first window (the reference truncates it at the model's window).
    queries = [querying.prepare(Document(str(i), text))[0] for i, text in enumerate(texts())]
    with np.load(FAMILY / f"{name}.npz") as npz:
        golden = {key: npz[key] for key in npz.files}
    return Run(
        name,
        encoder,
        examples,
        embed_padded(encoder, apply, params, examples, shortest=16),
        queries,
        embed_padded(querying, apply, params, queries, shortest=16),
        golden,
    )


@pytest.mark.slow
def test_same_windows_spans_and_tokens(run: Run) -> None:
    golden = run.golden
    assert [(int(e.doc_id), e.index) for e in run.examples] == list(
        zip(golden["text_index"].tolist(), golden["window"].tolist(), strict=True)
    )
    spans = np.array([e.span for e in run.examples], dtype=np.int32).reshape(-1, 2)
    np.testing.assert_array_equal(spans, golden["span"])
    lengths = np.array([e.length for e in run.examples], dtype=np.int32)
    np.testing.assert_array_equal(lengths, golden["num_tokens"])
    ids = np.concatenate([e.features["input_ids"] for e in run.examples])
    np.testing.assert_array_equal(ids, golden["input_ids_flat"])


@pytest.mark.slow
def test_same_document_embeddings(run: Run) -> None:
    expected = run.golden["embedding"]
    assert run.embeddings.shape == expected.shape
    diff = float(np.max(np.abs(run.embeddings - expected)))
    print(f"{run.name}: documents, max abs diff vs sentence-transformers = {diff:.2e}")
    assert diff <= ATOL, f"{run.name}: max abs diff {diff:.3e} > {ATOL}"


@pytest.mark.slow
def test_same_query_tokens_and_embeddings(run: Run) -> None:
    ids = np.concatenate([e.features["input_ids"] for e in run.queries])
    np.testing.assert_array_equal(ids, run.golden["query_input_ids_flat"])
    diff = float(np.max(np.abs(run.query_embeddings - run.golden["query_embedding"])))
    print(f"{run.name}: queries, max abs diff vs sentence-transformers = {diff:.2e}")
    assert diff <= ATOL, f"{run.name}: max abs diff {diff:.3e} > {ATOL}"


# -- what the checkpoint says -----------------------------------------------------------------

#: max_length, pooling, normalize, token types kept, pad id, document and query prefix:
#: read from the checkpoint alone (no prefix in the config).
CHECKPOINT_DEFAULTS = {
    "bge-cls": (64, "cls", True, True, 0, "", BGE_QUERY),
    "e5-mean": (64, "mean", True, True, 0, "", ""),
    "cls-raw": (48, "cls", False, False, 4, "", ""),
    "plain-hf": (96, "mean", False, True, 0, "", ""),
}


@pytest.mark.parametrize("name", VARIANTS)
def test_defaults_come_from_the_checkpoint(name: str) -> None:
    encoder = BertEncoder(Config(weights=str(FAMILY / name)))
    windows = encoder._windows
    found = (
        encoder.max_length,
        encoder.readout.pooling,
        encoder.readout.normalize,
        windows.token_types,
        windows.pad_id,
        encoder.prefix,
        encoder.for_queries().prefix,
    )
    assert found == CHECKPOINT_DEFAULTS[name]
    assert encoder.describe()["prefix"] == encoder.prefix


def test_the_query_side_is_the_same_encoder_with_the_query_prefix() -> None:
    encoder = BertEncoder(config_of("e5-mean"))
    queries = encoder.for_queries()
    assert (encoder.prefix, queries.prefix) == ("passage: ", "query: ")
    assert queries is not encoder
    assert queries.for_queries() is queries
    assert (queries.max_length, queries.readout, queries.config) == (
        encoder.max_length,
        encoder.readout,
        encoder.config,
    )
    # Same prefixes (none, here): the encoder itself.
    plain = BertEncoder(Config(weights=str(FAMILY / "plain-hf")))
    assert plain.for_queries() is plain
    # The precision and the query side compose either way.
    assert encoder.with_precision("bfloat16").for_queries().readout.dtype == "bfloat16"
    assert encoder.for_queries().with_precision("bfloat16").prefix == "query: "


def test_the_config_overrides_the_checkpoints_prompts() -> None:
    none = BertEncoder(Config(weights=str(FAMILY / "bge-cls"), prefix={"query": ""}))
    assert none.for_queries() is none
    assert none.prefix == ""
    both = BertEncoder(
        Config(weights=str(FAMILY / "bge-cls"), prefix={"document": "doc: ", "query": "q: "})
    )
    assert (both.prefix, both.for_queries().prefix) == ("doc: ", "q: ")


def test_every_window_carries_the_prefix_and_its_span_leaves_it_out() -> None:
    encoder = BertEncoder(config_of("e5-mean"))
    prefix_ids = encoder._windows.prefix.ids
    tokens = encoder._windows.tokenizer.encode("passage: ", add_special_tokens=False).ids
    assert prefix_ids.tolist() == tokens
    assert len(tokens) > 1
    text = " ".join(texts()[13:16])
    examples = encoder.prepare(Document("d", text))
    assert len(examples) > 2
    for example in examples:
        ids = example.features["input_ids"]
        np.testing.assert_array_equal(ids[1 : 1 + len(prefix_ids)], prefix_ids)
        assert example.length <= encoder.max_length
        start, end = example.span
        assert "passage" not in text[start:end]
        assert 0 <= start < end <= len(text)
    # The prefix takes room from the text: each full window holds that many fewer tokens.
    plain = BertEncoder(config_of("e5-mean", prefix={"document": ""}))
    without = plain.prepare(Document("d", text))
    assert examples[0].span[1] < without[0].span[1]
    assert examples[0].length == without[0].length == encoder.max_length


def test_a_prefix_that_runs_into_the_text_is_refused() -> None:
    with pytest.raises(ConfigError, match=r"prefix 'query' runs into the text.*end it with a"):
        BertEncoder(config_of("e5-mean", prefix={"query": "query"}))


def test_the_stride_leaves_room_for_the_prefix() -> None:
    # [CLS], [SEP] and the prefix's tokens leave the rest of 24, all overlap at that stride.
    prefix = len(BertEncoder(config_of("e5-mean"))._windows.prefix.ids)
    room = 24 - 2 - prefix
    message = rf"stride {room} .* - {2 + prefix} = {room} .*document prefix's {prefix} tokens"
    with pytest.raises(ConfigError, match=message):
        BertEncoder(config_of("e5-mean", max_length=24, stride=room))
    BertEncoder(config_of("e5-mean", max_length=24, stride=room - 1))
    # The query prefix is checked as well: bge's instruction is a long one.
    with pytest.raises(ConfigError, match=r"query prefix's"):
        BertEncoder(config_of("bge-cls", max_length=24, stride=4))


def test_token_types_follow_the_tokenizers_model_input_names(tmp_path: Path) -> None:
    # A template giving the text token type 1: kept where the tokenizer returns
    # token_type_ids (as transformers feeds them), zeros where it returns none.
    path = copy_of("bge-cls", tmp_path)

    def text_type_one(tokenizer: Any) -> Any:
        tokenizer["post_processor"]["single"][1]["Sequence"]["type_id"] = 1
        return tokenizer

    edit_json(path / "tokenizer.json", text_type_one)
    kept = BertEncoder(Config(weights=str(path))).prepare(Document("d", "hello"))[0]
    content = kept.length - 2
    assert kept.features["token_type_ids"].tolist() == [0, *[1] * content, 0]
    edit_json(
        path / "tokenizer_config.json",
        lambda c: c | {"model_input_names": ["input_ids", "attention_mask"]},
    )
    zeroed = BertEncoder(Config(weights=str(path))).prepare(Document("d", "hello"))[0]
    assert zeroed.features["token_type_ids"].tolist() == [0] * kept.length


# -- refused when the encoder is built (seamline validate builds it) ----------------------------


def test_another_model_type_is_refused(tmp_path: Path) -> None:
    path = copy_of("e5-mean", tmp_path)
    edit_json(path / "config.json", lambda c: c | {"model_type": "gpt2"})
    with pytest.raises(WeightsError, match=r"has model_type 'gpt2'; bert-encoder runs BERT"):
        BertEncoder(Config(weights=str(path)))
    edit_json(path / "config.json", lambda c: {k: v for k, v in c.items() if k != "model_type"})
    with pytest.raises(WeightsError, match=r"names no model_type; .*model_type 'bert'"):
        BertEncoder(Config(weights=str(path)))


@pytest.mark.parametrize(
    ("missing", "message"),
    [
        ("config.json", r"config\.json is missing"),
        ("tokenizer.json", r"tokenizer\.json is missing"),
        ("model.safetensors", r"model\.safetensors is missing"),
        ("1_Pooling/config.json", r"1_Pooling/config\.json is missing, and modules\.json lists"),
    ],
)
def test_a_missing_file_is_refused(tmp_path: Path, missing: str, message: str) -> None:
    path = copy_of("bge-cls", tmp_path)
    (path / missing).unlink()
    with pytest.raises(WeightsError, match=message):
        BertEncoder(Config(weights=str(path)))


def test_weights_that_do_not_match_config_json_are_refused_before_they_are_read(
    tmp_path: Path,
) -> None:
    path = copy_of("bge-cls", tmp_path)
    edit_json(path / "config.json", lambda c: c | {"hidden_size": 32, "intermediate_size": 64})
    with pytest.raises(WeightsError) as caught:
        BertEncoder(Config(weights=str(path)))
    message = str(caught.value)
    assert "does not match a BERT encoder as config.json describes it" in message
    assert "embeddings.word_embeddings.weight has shape (1000, 64), expected (1000, 32)" in message
    assert "(and " in message  # every problem counted, the first eight shown


def test_weights_holding_more_layers_than_config_json_says_are_refused(tmp_path: Path) -> None:
    # A config.json of one layer beside weights of two ran one layer: another model's
    # vectors, written without a word. The header check refuses it before any weight is read.
    path = copy_of("bge-cls", tmp_path)
    edit_json(path / "config.json", lambda c: c | {"num_hidden_layers": 1})
    with pytest.raises(WeightsError) as caught:
        BertEncoder(Config(weights=str(path)))
    message = str(caught.value)
    assert "tensors of encoder layers config.json does not have (layer 1;" in message
    assert "num_hidden_layers is fewer than the weights hold" in message


def test_weights_with_a_pooler_or_a_task_head_are_still_taken(tmp_path: Path) -> None:
    path = copy_of("plain-hf", tmp_path)
    tensors = load_file(str(path / "model.safetensors"))
    hidden = tensors["bert.embeddings.word_embeddings.weight"].shape[1]
    tensors["bert.pooler.dense.weight"] = np.zeros((hidden, hidden), np.float32)
    tensors["cls.predictions.bias"] = np.zeros((4,), np.float32)
    save_file(tensors, str(path / "model.safetensors"))
    BertEncoder(Config(weights=str(path))).load()


def test_a_weights_file_that_is_not_safetensors_is_refused(tmp_path: Path) -> None:
    path = copy_of("plain-hf", tmp_path)
    (path / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(WeightsError, match=r"is not a safetensors file"):
        BertEncoder(Config(weights=str(path)))


def test_type_vocab_size_zero_is_refused(tmp_path: Path) -> None:
    path = copy_of("cls-raw", tmp_path)
    edit_json(path / "config.json", lambda c: c | {"type_vocab_size": 0})
    with pytest.raises(WeightsError, match=r"type_vocab_size is 0: .*needs at least 1"):
        BertEncoder(Config(weights=str(path)))


def test_token_ids_past_the_embedding_table_are_refused(tmp_path: Path) -> None:
    # Weights and config.json agree on 500 rows; the tokenizer has 1000 tokens.
    path = copy_of("plain-hf", tmp_path)
    tensors = load_file(str(path / "model.safetensors"))
    for name in ("bert.embeddings.word_embeddings.weight", "cls.predictions.bias"):
        tensors[name] = np.ascontiguousarray(tensors[name][:500])
    save_file(tensors, str(path / "model.safetensors"))
    edit_json(path / "config.json", lambda c: c | {"vocab_size": 500})
    with pytest.raises(
        WeightsError, match=r"has token id 999, but config.json's vocab_size is 500"
    ):
        BertEncoder(Config(weights=str(path)))


def test_token_types_past_the_type_table_are_refused(tmp_path: Path) -> None:
    path = copy_of("cls-raw", tmp_path)  # type_vocab_size 1

    def text_type_one(tokenizer: Any) -> Any:
        tokenizer["post_processor"]["single"][1]["Sequence"]["type_id"] = 1
        return tokenizer

    edit_json(path / "tokenizer.json", text_type_one)
    BertEncoder(Config(weights=str(path)))  # its tokenizer returns no token_type_ids: zeros
    edit_json(path / "tokenizer_config.json", lambda c: c | {"model_input_names": ["input_ids"]})
    BertEncoder(Config(weights=str(path)))
    edit_json(path / "tokenizer_config.json", lambda c: c | {"model_input_names": None})
    with pytest.raises(WeightsError, match=r"gives token type 1, but .*type_vocab_size is 1"):
        BertEncoder(Config(weights=str(path)))


@pytest.mark.parametrize(
    ("pooling", "message"),
    [
        ({"pooling_mode": "lasttoken"}, r"is not one of mean, cls or max alone"),
        # sentence-transformers before 6 wrote one flag a mode (all-MiniLM-L6-v2's file).
        (
            {
                "pooling_mode": None,
                "pooling_mode_mean_tokens": True,
                "pooling_mode_lasttoken": True,
            },
            r"is not one of mean, cls or max alone",
        ),
        ({"pooling_mode": "cls", "include_prompt": False}, r"include_prompt: false"),
    ],
)
def test_pooling_it_cannot_reproduce_is_refused(
    tmp_path: Path, pooling: dict[str, Any], message: str
) -> None:
    path = copy_of("bge-cls", tmp_path)
    edit_json(
        path / "1_Pooling" / "config.json",
        lambda c: {k: v for k, v in (c | pooling).items() if v is not None},
    )
    with pytest.raises(WeightsError, match=message):
        BertEncoder(Config(weights=str(path)))


def test_a_sentence_transformers_6_module_it_lacks_is_refused(tmp_path: Path) -> None:
    path = copy_of("e5-mean", tmp_path)
    dense = {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers."}
    dense["type"] += "sentence_transformer.modules.dense.Dense"
    edit_json(path / "modules.json", lambda modules: [*modules, dense])
    with pytest.raises(WeightsError, match=r"modules\.dense\.Dense, which bert-encoder does not"):
        BertEncoder(Config(weights=str(path)))


def pipeline_file(tmp_path: Path, weights: Path, extra: str = "") -> Path:
    texts_file = tmp_path / "texts.jsonl"
    rows = [{"id": f"t{i:02d}", "text": text} for i, text in enumerate(texts()[:12])]
    texts_file.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    path = tmp_path / "p.yaml"
    loader = f"{{path: {json.dumps(str(texts_file))}, skip_empty: false}}"
    path.write_text(
        "pipeline: family\n"
        f"loader: {{use: jsonl, with: {loader}}}\n"
        f"model: {{use: bert-encoder, with: {{weights: {json.dumps(str(weights))}{extra}}}}}\n"
        "attention: {use: native}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(str(tmp_path / 'out.jsonl'))}}}}}\n",
        encoding="utf-8",
    )
    return path


def test_validate_refuses_a_checkpoint_it_cannot_run_with_exit_code_2(tmp_path: Path) -> None:
    path = copy_of("e5-mean", tmp_path)
    pipeline = pipeline_file(tmp_path, path)
    ok = CliRunner().invoke(app, ["validate", str(pipeline)])
    assert ok.exit_code == 0, ok.output
    edit_json(path / "config.json", lambda c: c | {"model_type": "gpt2"})
    refused = CliRunner().invoke(app, ["validate", str(pipeline)])
    assert refused.exit_code == 2
    assert f"error: {pipeline}:3:" in refused.output
    assert "model 'bert-encoder': " in refused.output
    assert "model_type 'gpt2'" in refused.output
    as_json = CliRunner().invoke(app, ["validate", str(pipeline), "--format", "json"])
    assert as_json.exit_code == 2
    (problem,) = json.loads(as_json.stdout.splitlines()[0])["errors"]
    assert (problem["line"], "model_type 'gpt2'" in problem["message"]) == (3, True)


# -- the prefixes through a run and a search ---------------------------------------------------


@pytest.mark.slow
def test_a_run_embeds_documents_and_search_embeds_queries_with_their_prefixes(
    tmp_path: Path,
) -> None:
    prefix = ", prefix: {document: 'passage: ', query: 'query: '}, stride: 16"
    pipeline = pipeline_file(tmp_path, FAMILY / "e5-mean", prefix)
    registry = Registry.discover(user_trust())
    Pipeline.from_yaml(pipeline, registry=registry).run()
    with np.load(FAMILY / "e5-mean.npz") as npz:
        golden = {key: npz[key] for key in npz.files}
    expected = {
        (f"t{t:02d}", int(w)): vector
        for t, w, vector in zip(
            golden["text_index"], golden["window"], golden["embedding"], strict=True
        )
        if t < 12
    }
    rows = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert len(rows) == len(expected)
    worst = max(
        float(np.max(np.abs(np.asarray(row["embedding"]) - expected[(row["id"], row["window"])])))
        for row in rows
    )
    assert worst <= ATOL, f"documents: max abs diff {worst:.2e}"
    encoder = QueryEncoder(registry, open_index(tmp_path / "out.jsonl"))
    try:
        vectors = np.stack([encoder(text) for text in texts()[:12]])
    finally:
        encoder.close()
    worst = float(np.max(np.abs(vectors - golden["query_embedding"][:12])))
    assert worst <= ATOL, f"queries: max abs diff {worst:.2e}"
    # The Python face asks for the query side as search does.
    model = {"use": "bert-encoder", "with": config_of("e5-mean").model_dump()}
    with Embedder(model, "native", registry=registry, queries=True) as embedder:
        vectors = embedder.encode(texts()[:12], normalize=True)
    assert float(np.max(np.abs(vectors - golden["query_embedding"][:12]))) <= ATOL


def test_one_embedder_embeds_queries_and_documents_as_each_call_asks() -> None:
    # A server's /v1/embeddings serves both kinds from one warm model: each call says
    # which side its texts are, and calls of both kinds batched together keep theirs.
    with np.load(FAMILY / "e5-mean.npz") as npz:
        golden = {key: npz[key] for key in npz.files}
    first = {
        int(t): vector
        for t, w, vector in zip(
            golden["text_index"], golden["window"], golden["embedding"], strict=True
        )
        if int(w) == 0
    }
    some = [2, 5, 9, 14]
    wanted = [texts()[t] for t in some]
    model = {"use": "bert-encoder", "with": config_of("e5-mean").model_dump()}
    registry = Registry.discover(user_trust())
    with Embedder(model, "native", registry=registry) as embedder:
        as_queries = embedder.submit(wanted, normalize=True, queries=True)
        as_documents = embedder.submit(wanted, normalize=True)
        queries, documents = as_queries.result(), as_documents.result()
        by_default = embedder.encode(wanted, normalize=True)
    assert float(np.max(np.abs(queries - golden["query_embedding"][some]))) <= ATOL
    assert float(np.max(np.abs(documents - np.stack([first[t] for t in some])))) <= ATOL
    assert np.array_equal(by_default, documents)
    assert float(np.max(np.abs(queries - documents))) > 1e-2  # the prefixes differ
    with Embedder(model, "native", registry=registry, queries=True) as embedder:
        overridden = embedder.encode(wanted, normalize=True, queries=False)
    assert float(np.max(np.abs(overridden - documents))) <= ATOL


# -- the conformance suite, over a model whose query side differs --------------------------------


@pytest.mark.slow
class TestE5Conformance(ModelContract):
    """The model contract's suite, over e5 style prefixes (for_queries is another encoder)."""

    @pytest.fixture
    def model(self) -> BertEncoder:
        return BertEncoder(config_of("e5-mean"))
