"""A checkpoint's files are read from its own folder only: a file linked out of it is refused.

A module folder that leads out of the checkpoint was refused already, but a single file
linked elsewhere was followed: ``1_Pooling/config.json`` linked to a file outside made
a run pool by CLS from a file no checkpoint held, and ``config.json``,
``tokenizer.json`` and the weights could be linked out the same way. Now every file is
checked where it really is (for the configuration files, on the open descriptor). A
link to another file inside the folder stays allowed, as does a Hugging Face cache
snapshot, whose files are links into the same model's ``blobs/``.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from seamline.components.models.bert import BertEncoder, Config
from seamline.contracts import WeightsError

CHECKPOINT = Path(__file__).resolve().parents[1] / "golden" / "family" / "e5-mean"

FILES = [
    "1_Pooling/config.json",
    "config.json",
    "tokenizer.json",
    "tokenizer_config.json",
    "modules.json",
    "sentence_bert_config.json",
    "config_sentence_transformers.json",
    "model.safetensors",
]


@pytest.mark.parametrize("name", FILES)
def test_a_file_linked_out_of_the_checkpoint_is_refused(name: str, tmp_path: Path) -> None:
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    outside = tmp_path / "elsewhere" / name
    outside.parent.mkdir(parents=True)
    (model / name).rename(outside)
    if name == "1_Pooling/config.json":  # the tester's case: another pooling, from outside
        outside.write_text(json.dumps({"pooling_mode": "cls"}), encoding="utf-8")
    (model / name).symlink_to(outside)
    with pytest.raises(WeightsError) as refused:
        BertEncoder(Config(weights=str(model)))
    message = str(refused.value)
    assert f"{model / name} leads through a symbolic link to {outside}, outside" in message
    assert "\n" not in message


def test_a_link_to_a_file_inside_the_checkpoint_is_read(tmp_path: Path) -> None:
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "model"))
    (model / "config.json").rename(model / "config-real.json")
    (model / "config.json").symlink_to("config-real.json")
    (model / "1_Pooling" / "config.json").rename(model / "pooling.json")
    (model / "1_Pooling" / "config.json").symlink_to("../pooling.json")
    BertEncoder(Config(weights=str(model)))


def test_a_hugging_face_cache_snapshot_is_read(tmp_path: Path) -> None:
    """The hub cache keeps each file once in ``blobs/`` and links a snapshot's names to it."""
    repository = tmp_path / "hub" / "models--org--e5"
    snapshot = repository / "snapshots" / "0123abcd"
    for source in sorted(CHECKPOINT.rglob("*")):
        if source.is_file():
            data = source.read_bytes()
            blob = repository / "blobs" / hashlib.sha256(data).hexdigest()
            blob.parent.mkdir(parents=True, exist_ok=True)
            blob.write_bytes(data)
            target = snapshot / source.relative_to(CHECKPOINT)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(
                Path("../" * (len(target.relative_to(repository).parts) - 1)) / "blobs" / blob.name
            )
    BertEncoder(Config(weights=str(snapshot)))
    # A snapshot's link out of the model's own cache folder is refused all the same.
    (snapshot / "tokenizer.json").unlink()
    (snapshot / "tokenizer.json").symlink_to(CHECKPOINT / "tokenizer.json")
    with pytest.raises(WeightsError, match=r"tokenizer\.json leads through a symbolic link"):
        BertEncoder(Config(weights=str(snapshot)))


def test_a_checkpoint_folder_that_is_itself_a_link_is_read(tmp_path: Path) -> None:
    model = Path(shutil.copytree(CHECKPOINT, tmp_path / "data" / "model"))
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "e5").symlink_to(model)
    BertEncoder(Config(weights=str(tmp_path / "models" / "e5")))
