"""A safetensors header that does not describe its file's data is refused when the encoder is built.

An exploratory pass found ``seamline validate`` saying ok to weights that no run could
load, since only each tensor's dtype and shape were read from the header: a 4 kB file
whose header claimed a 262,144-wide model (``seamline tune`` then ran for minutes at
13 GB), a file cut to half its data (an interrupted download), ``data_offsets``
pointing a terabyte past the end, ``F16`` over ``F32``-sized bytes. Now the header is
held to the format as the safetensors library holds it when a run loads the file, so
what validate says ok to, a run can load, and nothing is built from sizes the file
does not hold. Each case below is also refused by the library itself: the check says
no more and no less than the reader a run uses.
"""

from __future__ import annotations

import json
import shutil
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from safetensors import SafetensorError
from safetensors.numpy import load_file
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.components.models.bert import BertEncoder, Config
from seamline.components.models.mpnet import MpnetEncoder
from seamline.contracts import WeightsError

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
E5 = GOLDEN / "family" / "e5-mean"
WORD = "embeddings.word_embeddings.weight"

Header = dict[str, Any]


def rewrite(model: Path, change: Callable[[Header, bytes], tuple[Header, bytes]]) -> None:
    """``model.safetensors`` with its header and data as ``change`` makes them."""
    path = model / "model.safetensors"
    raw = path.read_bytes()
    size = struct.unpack("<Q", raw[:8])[0]
    header, data = change(json.loads(raw[8 : 8 + size]), raw[8 + size :])
    encoded = json.dumps(header).encode("utf-8")
    path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data)


def huge(width: int) -> Callable[[Path], None]:
    """The tester's hostile folder: config.json claims a ``width``-wide one-layer model and
    the header gives every tensor that shape, all over the same 4 bytes of 64."""

    def edit(model: Path) -> None:
        config = json.loads((model / "config.json").read_text(encoding="utf-8"))
        config.update(
            hidden_size=width, num_attention_heads=1, intermediate_size=1, num_hidden_layers=1
        )
        (model / "config.json").write_text(json.dumps(config), encoding="utf-8")
        vocab, positions = config["vocab_size"], config["max_position_embeddings"]
        shapes = {
            WORD: [vocab, width],
            "embeddings.position_embeddings.weight": [positions, width],
            "embeddings.token_type_embeddings.weight": [2, width],
            "embeddings.LayerNorm.weight": [width],
            "embeddings.LayerNorm.bias": [width],
        }
        layer = "encoder.layer.0."
        for name in ("self.query", "self.key", "self.value", "output.dense"):
            shapes |= {f"{layer}attention.{name}.weight": [width, width]}
            shapes |= {f"{layer}attention.{name}.bias": [width]}
        for name in ("attention.output.LayerNorm", "output.LayerNorm"):
            shapes |= {f"{layer}{name}.weight": [width], f"{layer}{name}.bias": [width]}
        shapes |= {f"{layer}intermediate.dense.weight": [1, width]}
        shapes |= {f"{layer}intermediate.dense.bias": [1]}
        shapes |= {f"{layer}output.dense.weight": [width, 1], f"{layer}output.dense.bias": [width]}
        header = {
            name: {"dtype": "F32", "shape": shape, "data_offsets": [0, 4]}
            for name, shape in shapes.items()
        }
        rewrite(model, lambda _header, _data: (header, b"\0" * 64))

    return edit


def cut_data(model: Path) -> None:
    """An interrupted download: half of the data after the header."""
    rewrite(model, lambda header, data: (header, data[: len(data) // 2]))


def offsets(name: str, begin: object, end: object) -> Callable[[Path], None]:
    def change(header: Header, data: bytes) -> tuple[Header, bytes]:
        header[name]["data_offsets"] = [begin, end]
        return header, data

    return lambda model: rewrite(model, change)


def shifted_last(by: int) -> Callable[[Path], None]:
    """The last tensor's bytes, of the right length, moved ``by`` past where they are."""

    def change(header: Header, data: bytes) -> tuple[Header, bytes]:
        last = max(
            (k for k in header if k != "__metadata__"), key=lambda k: header[k]["data_offsets"]
        )
        begin, end = header[last]["data_offsets"]
        header[last]["data_offsets"] = [begin + by, end + by]
        return header, data

    return lambda model: rewrite(model, change)


def dtype(name: str, new: str) -> Callable[[Path], None]:
    def change(header: Header, data: bytes) -> tuple[Header, bytes]:
        header[name]["dtype"] = new
        return header, data

    return lambda model: rewrite(model, change)


def appended(model: Path) -> None:
    rewrite(model, lambda header, data: (header, data + b"\0" * 8))


def unloadable_extra(model: Path) -> None:
    """An unused tensor in a dtype the numpy reader cannot load (it loads every tensor)."""

    def change(header: Header, data: bytes) -> tuple[Header, bytes]:
        header["extra"] = {
            "dtype": "F8_E4M3",
            "shape": [4],
            "data_offsets": [len(data), len(data) + 4],
        }
        return header, data + b"\0" * 4

    rewrite(model, change)


def overlapping(model: Path) -> None:
    """The layer norm's bias given the bytes of its scale (same shape: each tensor's
    length is right, the two overlap and the bias's own bytes are left uncovered)."""

    def change(header: Header, data: bytes) -> tuple[Header, bytes]:
        scale, bias = (header[f"embeddings.LayerNorm.{k}"] for k in ("weight", "bias"))
        bias["data_offsets"] = list(scale["data_offsets"])
        return header, data

    rewrite(model, change)


EDITS: dict[str, tuple[Callable[[Path], None], str]] = {
    "a 262,144-wide model in 4 kB": (
        huge(262_144),
        f"tensor '{WORD}' has data_offsets [0, 4], 4 bytes, but its shape (1000, 262144) of F32 "
        "takes 1,048,576,000 bytes",
    ),
    "cut to half its data": (cut_data, "bytes of data the file holds; the file is cut short"),
    "data_offsets a terabyte long": (
        offsets(WORD, 0, 10**12),
        "has data_offsets [0, 1000000000000], 1,000,000,000,000 bytes, but its shape",
    ),
    "the last tensor a terabyte past the end": (shifted_last(10**12), "past the"),
    "F16 over F32-sized bytes": (dtype(WORD, "F16"), "(1000, 48) of F16 takes 96,000 bytes"),
    "bytes appended": (appended, "has bytes appended"),
    "two tensors over the same bytes": (overlapping, "without gaps or overlaps"),
    "an F8 tensor the reader cannot load": (unloadable_extra, "'F8_E4M3', which the weights"),
    "offsets that are not numbers": (offsets(WORD, "0", "4"), "not two whole numbers"),
}


@pytest.mark.parametrize("edit", EDITS)
def test_a_header_that_does_not_describe_the_data_is_refused_as_the_library_refuses_it(
    edit: str, tmp_path: Path
) -> None:
    model = Path(shutil.copytree(E5, tmp_path / "model"))
    change, said = EDITS[edit]
    change(model)
    with pytest.raises(WeightsError) as refused:
        BertEncoder(Config(weights=str(model)))
    message = str(refused.value)
    assert said in message
    assert "\n" not in message
    assert len(message) < 1000
    with pytest.raises((SafetensorError, AttributeError)):  # what a run would have met
        load_file(str(model / "model.safetensors"))


def test_every_shipped_checkpoint_still_passes() -> None:
    """The check is the library's: the test checkpoints, in every dtype layout, pass."""
    for model in [*sorted((GOLDEN / "family").iterdir()), GOLDEN / "mpnet_tiny"]:
        if model.is_dir():
            encoder = MpnetEncoder if model.name == "mpnet_tiny" else BertEncoder
            encoder(encoder.Config(weights=str(model)))


def test_an_mpnet_checkpoint_cut_short_is_refused(tmp_path: Path) -> None:
    model = Path(shutil.copytree(GOLDEN / "mpnet_tiny", tmp_path / "model"))
    cut_data(model)
    with pytest.raises(WeightsError, match=r"model\.safetensors: tensor .* past the"):
        MpnetEncoder(MpnetEncoder.Config(weights=str(model)))


def test_validate_refuses_the_hostile_folder_in_one_line_with_exit_code_2(tmp_path: Path) -> None:
    model = Path(shutil.copytree(E5, tmp_path / "model"))
    huge(262_144)(model)
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "s.txt").write_text("Seams make parts swappable.\n", encoding="utf-8")
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(
        "pipeline: p\n"
        f"loader: {{use: text-files, with: {{root: {json.dumps(str(tmp_path / 'notes'))}}}}}\n"
        f"model: {{use: bert-encoder, with: {{weights: {json.dumps(str(model))}}}}}\n"
        f"sink: {{use: jsonl, with: {{path: {json.dumps(str(tmp_path / 'out.jsonl'))}}}}}\n",
        encoding="utf-8",
    )
    refused = CliRunner().invoke(app, ["validate", str(pipeline)])
    assert refused.exit_code == 2, refused.output
    assert "takes 1,048,576,000 bytes" in refused.output
    assert "Traceback" not in refused.output
    assert len(refused.output.strip().splitlines()) == 1
