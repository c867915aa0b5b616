"""Settings of a checkpoint's files that change its vectors, read or refused, never ignored.

sentence-transformers and transformers act on keys the encoder once did not read:
``do_lower_case`` (sentence_bert_config.json) lowercases every text, ``is_decoder``
(config.json) makes BERT's attention causal, ``add_cross_attention`` adds layers that
transformers refuses to build without a decoder. A key ignored gives vectors that
differ from the reference's with no error anywhere, so each is either done as the
reference does it or refused with the reason, when the encoder is built. Values of the
wrong type are refused naming the file and the key, cut short (:func:`cut`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from seamline.contracts import WeightsError
from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    from pathlib import Path

    from seamline.components.models.weights import ModelFiles

DECODER_KEYS = ("is_decoder", "add_cross_attention")
"""config.json keys that turn BERT into a decoder, whose vectors an encoder cannot give."""

MAX_TOKEN_ID = 1 << 24
"""Ids past this are not a vocabulary's (config.json's vocab_size is capped there too)."""


def _shown(value: Any) -> str:
    return cut(repr(value), 80)


def _sentence_config_path(files: ModelFiles) -> Path:
    """Where sentence_bert_config.json was read: the Transformer module's folder, else the root."""
    inner = files.model_dir / "sentence_bert_config.json"
    return inner if inner.exists() else files.root / "sentence_bert_config.json"


def lower_case(files: ModelFiles) -> bool:
    """Whether sentence-transformers lowercases texts (``do_lower_case``) before tokenizing."""
    value = (files.sentence_config or {}).get("do_lower_case")
    if value is None:  # unset, or null: sentence-transformers' default, no lowercasing
        return False
    if not isinstance(value, bool):
        raise WeightsError(
            f"{_sentence_config_path(files)}: do_lower_case is {_shown(value)}, "
            "not true or false; set it to true or false"
        )
    return value


def pad_token_id(files: ModelFiles) -> int:
    """config.json's ``pad_token_id`` (0 when unset): padding for a tokenizer without its own."""
    value = files.config.get("pad_token_id")
    if value is None:
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < MAX_TOKEN_ID:
        raise WeightsError(
            f"{files.model_dir / 'config.json'}: pad_token_id is {_shown(value)}, not a token id; "
            "set it to the tokenizer's padding id (a whole number, e.g. 0), or remove it"
        )
    return value


def refuse_decoder(files: ModelFiles, name: str) -> None:
    """Refuse a BERT config.json that makes it a decoder (causal attention, cross-attention)."""
    for key in DECODER_KEYS:
        value = files.config.get(key, False)
        if value is not False:
            raise WeightsError(
                f"{files.model_dir / 'config.json'}: {key} is {_shown(value)}; {name} runs "
                "encoders only (every token attends to every other), which is not what "
                f"transformers runs for this checkpoint; use an encoder's checkpoint ({key}: false)"
            )


def window_origin(files: ModelFiles, max_length: int) -> str:
    """Which file and key gave ``max_length`` (a checkpoint's window, none set in the config)."""
    sources = (
        (_sentence_config_path(files), files.sentence_config, "max_seq_length"),
        (
            files.tokenizer_path.parent / "tokenizer_config.json",
            files.tokenizer_config,
            "model_max_length",
        ),
    )
    for path, settings, key in sources:
        if (settings or {}).get(key) == max_length:
            return f"{path}'s {key} ({max_length})"
    return f"{files.model_dir / 'config.json'}'s max_position_embeddings"


def pooling_refused(pooling: dict[str, Any], source: str) -> WeightsError:
    """The error for a pooling configuration that is not one of mean, cls or max alone."""
    return WeightsError(
        f"the pooling configuration of {source} ({cut(repr(pooling))}) is not one of "
        "mean, cls or max alone; set 'pooling' explicitly to choose one"
    )
