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
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    from pathlib import Path

    from seamline.components.models.weights import ModelFiles

log = get_logger("seamline.components")

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
    the defaults True, None, True for keys the file leaves out, and the pre-tokenizer too
    (``BertPreTokenizer``; :func:`.windows.load_windows` puts both in). transformers 4's
    fast classes rebuilt the normalizer when the keys disagreed with the file. A
    ``do_lower_case: false``
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
    if processing_max_length(files) == max_length:
        return f"{sources[0][0]}'s processing_kwargs.text.max_length ({max_length})"
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


# -- sentence_bert_config.json's other keys, and tokenizer_config.json's truncation side -------

ST_DEFAULTS: dict[str, Any] = {
    "transformer_task": "feature-extraction",
    "modality_config": {"text": {"method": "forward", "method_output_name": "last_hidden_state"}},
    "module_output_name": "token_embeddings",
}
"""Keys sentence-transformers 6.3 saves, at the values that give the vectors seamline computes."""

HARMLESS_KEYS = ("unpad_inputs", "backend")
"""Keys that change how sentence-transformers computes, not what: padding-free attention, and
a backend that ``SentenceTransformer``'s own ``backend`` argument always overrides."""

UNSET_ONLY = ("query_length", "document_length", "query_expansion", "tokenizer_name_or_path")
"""Keys that change the vectors and that seamline does not implement: null (or absent) only."""

KWARGS_KEYS = (
    "tokenizer_args",
    "processor_kwargs",
    "model_args",
    "model_kwargs",
    "config_args",
    "config_kwargs",
)
"""Arguments passed on to transformers' tokenizer, model and config: each may override what
the checkpoint's files say, so only loading arguments (below) are accepted in them."""

LOADING_ARGUMENTS = (
    "cache_dir",
    "revision",
    "token",
    "local_files_only",
    "trust_remote_code",
    "subfolder",
    "use_fast",
)
"""What a checkpoint may pass to transformers without changing its vectors (where to read from)."""


def refuse_unread(files: ModelFiles) -> None:
    """Refuse settings sentence-transformers acts on that seamline does not, naming each.

    sentence_bert_config.json is the keyword arguments of sentence-transformers'
    ``Transformer``: ``processing_kwargs`` ({"text": {"max_length": 128}} truncates at 128),
    ``query_length`` and ``document_length`` (the windows of ``encode_query`` and
    ``encode_document``), ``tokenizer_args`` (``truncation_side``, ``do_lower_case``) and the
    like were ignored, and vectors differed from the reference's with ``validate`` saying ok.
    A key sentence-transformers does not know is refused too (it refuses the folder).
    """
    where = _sentence_config_path(files)
    for key, value in (files.sentence_config or {}).items():
        if key in ("max_seq_length", "do_lower_case", *HARMLESS_KEYS) or value is None:
            continue
        if key == "processing_kwargs":
            processing_max_length(files)
        elif key in ST_DEFAULTS:
            if value != ST_DEFAULTS[key]:
                raise _unread(where, key, value, f"set it to {ST_DEFAULTS[key]!r}, or remove it")
        elif key in KWARGS_KEYS:
            if not isinstance(value, dict):
                raise _unread(where, key, value, "remove it")
            for name, given in value.items():
                if name == "truncation_side":
                    refuse_left_truncation(where, f"{key}.truncation_side", given)
                elif name not in LOADING_ARGUMENTS:
                    raise _unread(where, f"{key}.{name}", given, "remove it")
        else:
            fix = "remove it, or set it to null" if key in UNSET_ONLY else "remove it"
            raise _unread(where, key, value, fix)
    config = files.tokenizer_config or {}
    if "truncation_side" in config:
        where = files.tokenizer_path.parent / "tokenizer_config.json"
        refuse_left_truncation(where, "truncation_side", config["truncation_side"])


def _unread(where: Path, key: str, value: Any, fix: str) -> WeightsError:
    return WeightsError(
        f"{where}: {key} is {_shown(value)}, which changes the vectors sentence-transformers "
        f"computes and which seamline does not implement; {fix} (and set the encoder's own "
        "settings, such as model.with.max_length, in the pipeline)"
    )


def refuse_left_truncation(where: Path, key: str, value: Any) -> None:
    """Refuse a truncation side other than right (the start of a text kept), naming the file.

    With ``"left"`` sentence-transformers keeps a long text's last tokens; seamline cuts a
    text into windows from its start, and ``long_text="truncate"`` (an ``Embedder``'s
    default, and queries) keeps the first window: other vectors (cosine 0.92 on long texts).
    """
    if value in (None, "right"):
        return
    raise WeightsError(
        f"{where}: {key} is {_shown(value)}: sentence-transformers then keeps a long text's "
        "last tokens, while seamline's windows start at the text's beginning and a truncated "
        'text keeps its first window; set it to "right" (or remove it) to embed texts from '
        "their start, or use a checkpoint without it"
    )


def processing_max_length(files: ModelFiles) -> int | None:
    """sentence_bert_config.json's ``processing_kwargs.text.max_length`` (None: not set).

    sentence-transformers 6.3 passes it to every call of the tokenizer (``encode``,
    ``encode_query``, ``encode_document``): texts are cut there, whatever
    ``max_seq_length`` says, so it is the checkpoint's window. Anything else in
    ``processing_kwargs`` is refused.
    """
    where = _sentence_config_path(files)
    found = (files.sentence_config or {}).get("processing_kwargs") or {}
    if not isinstance(found, dict):
        raise _unread(where, "processing_kwargs", found, "remove it")
    for part, settings in found.items():
        if part != "text" or not isinstance(settings, dict):
            raise _unread(where, f"processing_kwargs.{part}", settings, "remove it")
        for name, value in settings.items():
            if name == "truncation_side":
                refuse_left_truncation(where, "processing_kwargs.text.truncation_side", value)
            elif name != "max_length":
                raise _unread(where, f"processing_kwargs.text.{name}", value, "remove it")
    value = (found.get("text") or {}).get("max_length")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise WeightsError(
            f"{where}: processing_kwargs.text.max_length is {_shown(value)}, not a whole "
            "number of tokens above 0; write the window length there, or remove it"
        )
    return value


_WARNED: set[tuple[str, str]] = set()
"""The (file, prompt) pairs :func:`warn_default_prompt` has warned of in this process."""


def warn_default_prompt(files: ModelFiles, document: str) -> None:
    """Warn, once a process, of a ``default_prompt_name`` whose prompt documents do not get.

    sentence-transformers' ``encode`` puts the default prompt before every text; its
    ``encode_document``, which seamline's documents follow, does not (the checkpoint's
    ``document`` prompt, or none). A caller moving from ``encode`` got other vectors than
    before (cosine 0.19 with a ``Classify:`` default) with nothing said.
    """
    config = files.sentence_transformers_config or {}
    name = config.get("default_prompt_name")
    prompt = files.prompts().get(name) if isinstance(name, str) else None
    where = str(files.root / "config_sentence_transformers.json")
    if not prompt or prompt == document or (where, prompt) in _WARNED:
        return
    _WARNED.add((where, prompt))
    log.warning(
        f"{where}: default_prompt_name {_shown(name)} puts {_shown(prompt)} before every text "
        "in sentence-transformers' encode(); seamline embeds documents as encode_document() "
        f"does ({'with ' + _shown(document) if document else 'no prefix'}) and queries as "
        f"encode_query(): to embed documents as encode() did, set model.with.prefix.document "
        f"to {_shown(prompt)}"
    )
