"""An MPNet checkpoint (transformers' ``MPNetModel``) read into :class:`.mpnet_math.MpnetParams`.

The files, the weight sources and the integrity check are the BERT encoder's
(:mod:`.weights`); what is MPNet's own is the architecture in ``config.json`` and
the tensor names. Refusing here what the forward pass does not implement is what
lets a successful load mean "this reproduces the reference".
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seamline.components.models import weights
from seamline.components.models.bert_math import Architecture, LayerParams
from seamline.components.models.mpnet_math import (
    BIAS_BUCKETS,
    POSITION_OFFSET,
    MpnetArchitecture,
    MpnetEmbeddingParams,
    MpnetParams,
)
from seamline.components.models.weights import (
    HeaderReader,
    ModelFiles,
    ShapeReader,
    TensorReader,
)
from seamline.contracts import WeightsError

MPNET = "an MPNet encoder"
"""What a checkpoint whose tensors do not fit is said not to match."""


def parse_architecture(config: dict[str, Any], path: Path) -> MpnetArchitecture:
    """Read MPNet's static shape from ``config.json``, refusing what the encoder cannot run."""
    where = path / "config.json"
    kind = config.get("model_type")
    if kind != "mpnet":
        raise WeightsError(
            f"{where}: model_type is {weights.shown(kind)}, not 'mpnet'; mpnet-encoder runs MPNet "
            "checkpoints (for BERT-family ones use bert-encoder)"
        )
    buckets = config.get("relative_attention_num_buckets", BIAS_BUCKETS)
    if buckets != BIAS_BUCKETS:
        raise WeightsError(
            f"{where}: relative_attention_num_buckets is {weights.shown(buckets)}; transformers' "
            f"MPNet always buckets distances into {BIAS_BUCKETS}, which is all mpnet-encoder "
            "reproduces"
        )
    table = weights.int_field(config, "max_position_embeddings", where)
    if table <= POSITION_OFFSET:
        raise WeightsError(f"{where}: max_position_embeddings {table} leaves no usable position")
    base = Architecture(
        vocab_size=weights.int_field(config, "vocab_size", where),
        hidden_size=weights.int_field(config, "hidden_size", where),
        num_layers=weights.int_field(config, "num_hidden_layers", where),
        num_heads=weights.int_field(config, "num_attention_heads", where),
        intermediate_size=weights.int_field(config, "intermediate_size", where),
        max_positions=table - POSITION_OFFSET,
        type_vocab_size=0,
        # transformers' MPNetConfig default (1e-5 was 1.8e-4 off where config.json omits it)
        layer_norm_eps=weights.eps_field(config, 1e-12, where),
        activation=weights.activation_of(config, where),
    )
    if base.hidden_size % base.num_heads:
        raise WeightsError(
            f"{where}: hidden_size {base.hidden_size} is not divisible by "
            f"num_attention_heads {base.num_heads}"
        )
    return MpnetArchitecture(base)


def load_params(
    files: ModelFiles, arch: MpnetArchitecture, expected_sha256: str | None = None
) -> MpnetParams:
    """Read ``model.safetensors`` (after its integrity check) into the encoder's pytree."""
    if expected_sha256 is not None:
        weights.verify_sha256(files.weights_path, expected_sha256)
    raw = weights.read_tensors(files.weights_path)
    named = {name.removeprefix("mpnet."): tensor for name, tensor in raw.items()}
    reader = TensorReader(named, str(files.weights_path), MPNET)
    params = _assemble(reader, arch)
    reader.raise_if_missing()
    return params


def check_tensors(files: ModelFiles, arch: MpnetArchitecture) -> None:
    """Refuse weights whose tensors do not match ``config.json``, reading only their header.

    As :func:`.weights.check_tensors` does for BERT: names, shapes and dtypes from the
    safetensors header, so ``seamline validate`` refuses a mismatch without the weights.
    """
    header = weights.read_safetensors_header(files.weights_path)
    named = {name.removeprefix("mpnet."): entry for name, entry in header.items()}
    reader = HeaderReader(named, str(files.weights_path), MPNET)
    _assemble(reader, arch)
    reader.raise_if_missing()


def param_shapes(arch: MpnetArchitecture) -> MpnetParams:
    """The pytree :func:`load_params` makes, as shapes only: nothing is read."""
    return _assemble(ShapeReader(), arch)


def _assemble(reader: TensorReader, arch: MpnetArchitecture) -> MpnetParams:
    base = arch.base
    hidden = base.hidden_size
    embeddings = MpnetEmbeddingParams(
        word=reader.get("embeddings.word_embeddings.weight", (base.vocab_size, hidden)),
        position=reader.get("embeddings.position_embeddings.weight", (arch.position_rows, hidden)),
        norm=reader.norm("embeddings.LayerNorm", hidden),
    )
    layers = [
        _layer(reader, f"encoder.layer.{i}", hidden, base.intermediate_size)
        for i in range(base.num_layers)
    ]
    bias = reader.get("encoder.relative_attention_bias.weight", (arch.bias_buckets, base.num_heads))
    return MpnetParams(embeddings=embeddings, layers=layers, relative_bias=bias)


def _layer(reader: TensorReader, prefix: str, hidden: int, inner: int) -> LayerParams:
    """One layer under MPNet's names (``attention.attn.q`` ...) in BERT's pytree."""
    return LayerParams(
        query=reader.dense(f"{prefix}.attention.attn.q", hidden, hidden),
        key=reader.dense(f"{prefix}.attention.attn.k", hidden, hidden),
        value=reader.dense(f"{prefix}.attention.attn.v", hidden, hidden),
        attention_out=reader.dense(f"{prefix}.attention.attn.o", hidden, hidden),
        attention_norm=reader.norm(f"{prefix}.attention.LayerNorm", hidden),
        intermediate=reader.dense(f"{prefix}.intermediate.dense", hidden, inner),
        output=reader.dense(f"{prefix}.output.dense", inner, hidden),
        output_norm=reader.norm(f"{prefix}.output.LayerNorm", hidden),
    )
