"""Settings of a checkpoint's files that change its vectors, read or refused, never ignored.

sentence-transformers and transformers act on keys the encoder once did not read:
``do_lower_case`` (sentence_bert_config.json) lowercases every text, ``is_decoder``
(config.json) makes BERT's attention causal, ``add_cross_attention`` adds layers that
transformers refuses to build without a decoder, ``do_lower_case``, ``strip_accents`` and
``tokenize_chinese_chars`` (tokenizer_config.json) rebuild the tokenizer's normalizer. A
key ignored gives vectors that differ from the reference's with no error anywhere, so each
is either done as the reference does it or refused with the reason, when the encoder is
built. Values of the wrong type are refused naming the file and the key, cut short (:func:`cut`).
"""

from __future__ import annotations

import json
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


REBUILDING_CLASSES = ("BertTokenizer", "BertTokenizerFast", "MPNetTokenizer", "MPNetTokenizerFast")
"""``tokenizer_class`` values whose transformers class builds its own normalizer."""

SAVED_CLASSES = ("TokenizersBackend", "PreTrainedTokenizerFast")
"""``tokenizer_class`` values that run tokenizer.json as saved."""

NORMALIZER_KEYS = {
    "do_lower_case": ("lowercase", True),
    "strip_accents": ("strip_accents", None),
    "tokenize_chinese_chars": ("handle_chinese_chars", True),
}
"""tokenizer_config.json's keys, the ``BertNormalizer`` field each sets, and its default."""


def bert_normalizer(files: ModelFiles) -> dict[str, bool | None] | None:
    """The ``BertNormalizer`` settings transformers runs in place of tokenizer.json's, or None.

    transformers 5's ``BertTokenizer`` and ``MPNetTokenizer`` (what a tokenizer_config.json
    naming them, or naming no class, loads) take the vocabulary from tokenizer.json but build
    the normalizer anew: ``BertNormalizer(clean_text=True, handle_chinese_chars=
    tokenize_chinese_chars, strip_accents=strip_accents, lowercase=do_lower_case)``, with
    the defaults True, None, True for keys the file leaves out (transformers 4's fast
    classes did the same when the keys disagreed with the file). A ``do_lower_case: false``
    there made every text lowercased here and cased there (cosine 0.05). Classes that run
    tokenizer.json as saved give None; another class is refused when these keys disagree
    with tokenizer.json, as which of the two it follows is not known here.
    """
    config = files.tokenizer_config
    if config is None:
        return None
    where = files.tokenizer_path.parent / "tokenizer_config.json"
    named = config.get("tokenizer_class")
    if named in SAVED_CLASSES:
        return None
    settings: dict[str, bool | None] = {"clean_text": True}
    for key, (field, default) in NORMALIZER_KEYS.items():
        value = config.get(key, default)
        if not isinstance(value, bool) and not (value is None and key == "strip_accents"):
            raise WeightsError(
                f"{where}: {key} is {_shown(value)}, not true or false; set it to true or false "
                "(transformers refuses it too)"
            )
        settings[field] = value
    if named is None or named in REBUILDING_CLASSES:
        return settings
    try:
        saved = dict(json.loads(files.tokenizer_json).get("normalizer") or {})
    except (ValueError, AttributeError, TypeError, RecursionError):
        saved = {}  # not a tokenizers file: refused when the tokenizer is built from it
    stated = {key: config[key] for key in NORMALIZER_KEYS if key in config}
    if any(saved.get(NORMALIZER_KEYS[key][0], object()) != stated[key] for key in stated):
        raise WeightsError(
            f"{where}: tokenizer_class {_shown(named)} with {cut(repr(stated), 120)}, which "
            f"{files.tokenizer_path.name}'s normalizer does not say; make them agree, or name "
            f"one of {', '.join(REBUILDING_CLASSES[::2] + SAVED_CLASSES)}"
        )
    return None


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
