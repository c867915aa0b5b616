"""A model checkpoint's files are hostile input: refused in one line, never a hang or a crash.

A red-team pass (a copy of a real checkpoint, each file edited as a careless or hostile
party could) found a ``config.json`` whose billion layers grew memory without bound,
JSON nested or numbered past what the parser takes, values of the wrong type, a
``modules.json`` naming a folder outside the checkpoint (whose pooling file the encoder
then used), a path too long for any file system, and a ``tokenizer.json`` whose rule
panics on one text (a ``BaseException``, which ended the whole run). Each is a
``WeightsError`` here (exit 2 on the command line), or, for the tokenizer, a failure of
that one text.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import Document, WeightsError

CHECKPOINT = Path(__file__).resolve().parents[1] / "golden" / "family" / "e5-mean"
DEEP = '{"a": ' + "[" * 100_000 + "]" * 100_000 + "}"


def edit_json(name: str, change: Callable[[dict[str, Any]], object]) -> Callable[[Path], None]:
    def edit(model: Path) -> None:
        data = json.loads((model / name).read_text(encoding="utf-8"))
        change(data)
        (model / name).write_text(json.dumps(data), encoding="utf-8")

    return edit


def replace_file(name: str, text: str) -> Callable[[Path], None]:
    return lambda model: (model / name).write_text(text, encoding="utf-8") and None


def header_shape(shape: object) -> Callable[[Path], None]:
    """The safetensors header's first tensor given ``shape``."""

    def edit(model: Path) -> None:
        path = model / "model.safetensors"
        data = path.read_bytes()
        size = struct.unpack("<Q", data[:8])[0]
        header = json.loads(data[8 : 8 + size])
        name = next(k for k in header if k != "__metadata__")
        header[name]["shape"] = shape
        encoded = json.dumps(header).encode("utf-8")
        path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data[8 + size :])

    return edit


def module_path(path: object) -> Callable[[Path], None]:
    def change(modules: Any) -> None:
        pooling = next(m for m in modules if m["type"].endswith("Pooling"))
        pooling["path"] = path

    def edit(model: Path) -> None:
        modules = json.loads((model / "modules.json").read_text(encoding="utf-8"))
        change(modules)
        (model / "modules.json").write_text(json.dumps(modules), encoding="utf-8")

    return edit


EDITS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a billion layers": (
        edit_json("config.json", lambda c: c.update(num_hidden_layers=10**9)),
        "num_hidden_layers is 1000000000, expected a whole number from 1 to 1,024",
    ),
    "deep config.json": (replace_file("config.json", DEEP), "nested too deeply"),
    "deep modules.json": (replace_file("modules.json", DEEP), "nested too deeply"),
    "deep pooling": (replace_file("1_Pooling/config.json", DEEP), "nested too deeply"),
    "a 5,000-digit size": (
        replace_file("config.json", '{"hidden_size": ' + "9" * 5000 + "}"),
        "could not be read as JSON",
    ),
    "layer_norm_eps a word": (
        edit_json("config.json", lambda c: c.update(layer_norm_eps="tiny")),
        "layer_norm_eps is 'tiny', expected a small positive number",
    ),
    "a shape of words": (header_shape(["x"]), "has no shape of whole numbers"),
    "a shape of a null": (header_shape([None]), "has no shape of whole numbers"),
    "pooling outside, absolute": (module_path("/tmp"), "is a path outside"),
    "pooling outside, climbing": (module_path("../../outside"), "climbs out of its folder"),
    "pooling path not a name": (module_path(["x"]), "the Pooling module's path is ['x']"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_a_hostile_checkpoint_file_is_refused_in_one_line(edit: str, tmp_path: Path) -> None:
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    change, said = EDITS[edit]
    change(model)
    with pytest.raises(WeightsError) as refused:
        BertEncoder(Config(weights=str(model))).load()
    message = str(refused.value)
    assert said in message
    assert "\n" not in message
    assert len(message) < 1000


def test_a_device_in_place_of_the_weights_is_named_as_one(tmp_path: Path) -> None:
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    (model / "model.safetensors").unlink()
    (model / "model.safetensors").symlink_to("/dev/zero")
    with pytest.raises(WeightsError, match=r"model\.safetensors is a character device, not a"):
        BertEncoder(Config(weights=str(model)))


def test_a_weights_path_no_file_system_holds_is_refused() -> None:
    with pytest.raises(WeightsError, match="cannot be used") as refused:
        BertEncoder(Config(weights="a" * 5000))
    assert len(str(refused.value)) < 600


def test_a_tokenizer_that_panics_on_a_text_fails_that_text_alone(tmp_path: Path) -> None:
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    backtracking = {"Regex": "(a+)+$"}
    edit_json(
        "tokenizer.json",
        lambda t: t.update(
            pre_tokenizer={
                "type": "Split", "pattern": backtracking, "behavior": "Isolated", "invert": False
            }
        ),
    )(model)  # fmt: skip
    encoder = BertEncoder(Config(weights=str(model)))
    assert encoder.prepare(Document("fine", "hello world"))
    with pytest.raises(ValueError, match="the tokenizer failed on this text"):
        encoder.prepare(Document("hostile", "a" * 40 + "!"))


def backtracking_split(tokenizer: dict[str, Any]) -> None:
    """A pre-tokenizer whose regular expression gives up (a panic) on 40 b's and a '!'."""
    regex = {"Regex": "(b+)+$"}
    tokenizer["pre_tokenizer"] = {
        "type": "Split", "pattern": regex, "behavior": "Isolated", "invert": False
    }  # fmt: skip


def a_becomes_a_backtracking_text(tokenizer: dict[str, Any]) -> None:
    """Every 'a' normalised to such a text: the build's token-type probe 'a' panics."""
    backtracking_split(tokenizer)
    replace = {"type": "Replace", "pattern": {"String": "a"}, "content": "b" * 40 + "!"}
    tokenizer["normalizer"] = replace


@pytest.mark.parametrize(
    ("edit", "prefix"),
    [(backtracking_split, "b" * 40 + "!: "), (a_becomes_a_backtracking_text, "")],
    ids=["on the prefix", "on the token-type probe"],
)
def test_a_tokenizer_that_panics_while_the_encoder_is_built_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], prefix: str
) -> None:
    """The prefix and the probe for token types are encoded at build time, not at ``prepare``."""
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    edit_json("tokenizer.json", edit)(model)
    config: dict[str, Any] = {"weights": str(model)}
    if prefix:
        config["prefix"] = {"document": prefix, "query": prefix}
    with pytest.raises(WeightsError, match=r"tokenizer\.json: the tokenizer failed") as refused:
        BertEncoder(Config(**config))
    assert len(str(refused.value)) < 700


@pytest.mark.parametrize("cls_id", [5000, 4_000_000_000])
def test_a_special_token_id_past_the_vocabulary_is_refused_when_built(
    tmp_path: Path, cls_id: int
) -> None:
    """The post-processor's template gives [CLS] an id of its own, which the vocabulary
    need not list: past the table, a run made NaN vectors (blamed on the attention) or set
    every document aside with an overflow."""
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    edit_json(
        "tokenizer.json",
        lambda t: t["post_processor"]["special_tokens"]["[CLS]"].update(ids=[cls_id]),
    )(model)
    with pytest.raises(WeightsError, match=rf"has token id {cls_id}, but config\.json's vocab"):
        BertEncoder(Config(weights=str(model)))
