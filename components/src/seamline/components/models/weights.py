"""Where a BERT encoder's files come from, and how its checkpoint becomes a params pytree.

A weight source is a directory holding a Hugging Face / sentence-transformers
checkpoint (``config.json``, ``tokenizer.json``, ``model.safetensors`` and, for a
sentence-transformers model, ``modules.json``, ``1_Pooling/config.json``,
``sentence_bert_config.json`` and ``config_sentence_transformers.json``), or
``package:<module>``: an installed Python package that ships such a directory, or
``split-zip:<name>``: a checkpoint whose zip is cut into installed packages, assembled
once into the cache (:mod:`.split_zip`).

Everything that can be refused without reading the weights is refused when the
encoder is built (``seamline validate`` builds it): a ``model_type`` other than the
encoder's, a missing file, a ``config.json`` it cannot run, tensors whose names or
shapes do not match ``config.json`` (read from the safetensors header alone), a
tokenizer whose ids run past the embedding table. Nothing is ever downloaded: a run reads only
files that are already on disk, so what it computes does not depend on the network.

Every failure is a :class:`~seamline.contracts.WeightsError` whose message says what
is missing or wrong and what to do about it.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from safetensors.numpy import load_file

from seamline.components.models import file_digest, safetensors_header, split_zip
from seamline.components.models.bert_math import (
    Activation,
    Architecture,
    BertParams,
    DenseParams,
    EmbeddingParams,
    LayerParams,
    NormParams,
)
from seamline.components.models.file_ledger import FileLedger
from seamline.contracts import WeightsError
from seamline.contracts.modules import find_without_importing
from seamline.contracts.untrusted import OutsideFolder, cut, kind_of, within

PACKAGE_PREFIX = "package:"
WEIGHTS_FILE = "model.safetensors"

#: The ``model_type`` values of config.json this encoder runs.
MODEL_TYPES = ("bert",)

#: safetensors dtypes the weights may be stored in, all read and computed in float32. The
#: reference does not: transformers 5 (and so sentence-transformers 6) computes float16 or
#: bfloat16 weights, or a config.json ``dtype`` of either, in that precision (measured on
#: all-MiniLM-L6-v2: max |Δ| 3.2e-4 for float16, 3.3e-3 for bfloat16; docs/models.md).
TENSOR_DTYPES = ("F32", "F16", "BF16", "F64")

Array = npt.NDArray[Any]


@dataclass(frozen=True, slots=True)
class ModelFiles:
    """The files of one checkpoint, read and checked up front so later steps cannot miss one."""

    root: Path
    """The source directory (where ``modules.json`` and ``1_Pooling/`` live)."""
    model_dir: Path
    """Where ``config.json`` and the weights live (the Transformer module's own path)."""
    config: dict[str, Any]
    tokenizer_path: Path
    tokenizer_json: bytes
    """``tokenizer.json`` as read (and digested): the tokenizer is built from these bytes."""
    weights_path: Path
    files_sha256: str
    """The digest of every configuration and tokenizer file read (:mod:`.file_ledger`)."""
    modules: list[dict[str, Any]] | None
    pooling: dict[str, Any] | None
    sentence_config: dict[str, Any] | None
    tokenizer_config: dict[str, Any] | None = None
    """``tokenizer_config.json`` beside ``tokenizer.json`` (its ``model_input_names``)."""
    sentence_transformers_config: dict[str, Any] | None = None
    """``config_sentence_transformers.json`` (its ``prompts``)."""

    def prompts(self) -> dict[str, str]:
        """The checkpoint's non-empty named prompts (sentence-transformers' ``prompts``)."""
        found = (self.sentence_transformers_config or {}).get("prompts")
        if not isinstance(found, dict):
            return {}
        return {str(k): v for k, v in found.items() if isinstance(v, str) and v}

    def returns_token_types(self) -> bool:
        """Whether the Hugging Face tokenizer hands the model ``token_type_ids``.

        A tokenizer whose ``model_input_names`` leaves them out feeds none, and
        ``BertModel`` then uses token type 0 everywhere.
        """
        names = (self.tokenizer_config or {}).get("model_input_names")
        return not isinstance(names, list) or "token_type_ids" in names


def read_source(source: str) -> ModelFiles:
    """The checkpoint that ``source``, a ``weights:`` value, names, its files read.

    Its refusals are about that setting (``UserError.setting``): the host places them at
    the value of ``weights``, where the fix is typed, not at the model's ``use:``.
    """
    try:
        return read_model_files(resolve_source(source))
    except WeightsError as err:
        if err.setting is None:
            err.setting = "weights"
        raise


def resolve_source(source: str) -> Path:
    """Turn a ``weights:`` value into the directory that holds the checkpoint."""
    if source.startswith(PACKAGE_PREFIX):
        return _package_dir(source[len(PACKAGE_PREFIX) :].strip())
    if source.startswith(split_zip.PREFIX):
        return split_zip.resolve(source[len(split_zip.PREFIX) :].strip())
    path = Path(os.path.expanduser(source))  # never raises where there is no home
    try:
        what = "" if path.is_dir() else "is not a directory" if path.exists() else "does not exist"
    except OSError as err:  # a name too long, a loop of links: nothing to read there
        what = f"cannot be used ({err.strerror})"
    if what:
        raise WeightsError(
            f"weight directory {cut(str(path))!r} {what}; set 'weights' to a directory "
            f"holding config.json, tokenizer.json and {WEIGHTS_FILE}, or to 'package:<module>' "
            "for an installed package that ships them"
        )
    return path.resolve()


def _package_dir(module: str) -> Path:
    """Find an installed package's model directory without running any of its code.

    ``importlib.util.find_spec`` imports the parents of a dotted name, so
    ``package:some.module`` used to run ``some/__init__.py``: a pipeline file could
    execute code by naming it. Here each part of the name is looked up with the
    import system's finders alone
    (:func:`seamline.contracts.modules.find_without_importing`), which read the file
    system and execute nothing.
    """
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*", module):
        raise WeightsError(
            f"{PACKAGE_PREFIX}{cut(module, 60)} does not name a Python module; "
            f"write '{PACKAGE_PREFIX}<importable.module.name>'"
        )
    spec = find_without_importing(module)
    if spec is None:
        raise WeightsError(
            f"weights package {shown(module)} is not installed in this environment; install the "
            f"distribution that provides it, or point 'weights' at a directory instead"
        )
    if spec.submodule_search_locations:
        module_dir = Path(next(iter(spec.submodule_search_locations)))
    elif spec.origin:
        module_dir = Path(spec.origin).parent
    else:
        raise WeightsError(f"weights package {shown(module)} has no location on disk to read from")
    nested = module_dir / "model"
    return nested if (nested / "config.json").is_file() else module_dir


def read_model_files(root: Path) -> ModelFiles:
    """Read every configuration file of the checkpoint at ``root``; the weights stay on disk.

    Each file is read once, and the digest of them all kept (``files_sha256``), so that
    what the encoder was built from can be pinned and checked.
    """
    ledger = FileLedger(root)
    modules = _read_modules(ledger, root / "modules.json")
    model_dir = _module_dir(root, modules, "Transformer", "")
    config = _read_object(ledger, model_dir / "config.json")
    if config is None:
        raise WeightsError(
            f"{model_dir / 'config.json'} is missing; the weight source must be a Hugging Face "
            "checkpoint directory with config.json, tokenizer.json and model.safetensors"
        )
    tokenizer_path, tokenizer_json = _first_existing(
        ledger, model_dir / "tokenizer.json", root / "tokenizer.json"
    )
    weights_path = model_dir / WEIGHTS_FILE
    if not weights_path.is_file():
        if weights_path.exists():  # a device, a FIFO, a folder: never to be read as weights
            what = kind_of(weights_path.stat().st_mode)
            raise WeightsError(f"{weights_path} is {what}, not a file; restore the weights there")
        raise _missing_weights(weights_path)
    ledger.check_inside(weights_path)
    pooling_path = _module_dir(root, modules, "Pooling", "1_Pooling") / "config.json"
    pooling = _read_object(ledger, pooling_path)
    if pooling is None and any(_is_module(m, "Pooling") for m in modules or ()):
        raise WeightsError(
            f"{pooling_path} is missing, and modules.json lists a Pooling module; restore "
            "the file (sentence-transformers writes it with the model)"
        )
    sentence_config = _sentence_config(ledger, root, model_dir)
    tokenizer_config = _read_object(ledger, tokenizer_path.parent / "tokenizer_config.json")
    prompts = _read_object(ledger, root / "config_sentence_transformers.json")
    return ModelFiles(
        root=root,
        model_dir=model_dir,
        config=config,
        tokenizer_path=tokenizer_path,
        tokenizer_json=tokenizer_json,
        weights_path=weights_path,
        files_sha256=ledger.digest(),
        modules=modules,
        pooling=pooling,
        sentence_config=sentence_config,
        tokenizer_config=tokenizer_config,
        sentence_transformers_config=prompts,
    )


SHARD_INDEX = "model.safetensors.index.json"
"""Where transformers saves the list of a checkpoint's weight shards (``model-00001-of-...``)."""


def _missing_weights(weights_path: Path) -> WeightsError:
    """The error for a folder without ``model.safetensors``: its weights in shards, or none.

    A sharded checkpoint was told to convert a ``pytorch_model.bin`` it does not have. The
    index is a file of the checkpoint, so it is only looked for, never read: seamline pins
    and checks one weights file, and merging the shards once is the fix.
    """
    index = weights_path.parent / SHARD_INDEX
    if index.is_file():
        return WeightsError(
            f"{weights_path} is missing, and {index.name} beside it lists the weights in "
            "shards, which this encoder does not read (it reads and pins one weights file): "
            "merge them into one model.safetensors, once, outside seamline (load each shard "
            "with safetensors.numpy.load_file and save them all with save_file)"
        )
    return WeightsError(
        f"{weights_path} is missing; this encoder reads safetensors only (convert a "
        "pytorch_model.bin with the safetensors library, once, outside seamline)"
    )


def _is_module(module: dict[str, Any], kind: str) -> bool:
    """Whether ``module`` (an entry of modules.json) is sentence-transformers' ``kind``.

    sentence-transformers has named its modules ``sentence_transformers.models.Pooling``
    and, since version 5, ``sentence_transformers.sentence_transformer.modules.pooling.
    Pooling`` (Transformer and Normalize under ``...base.modules``); any of its
    packages, the same class (:func:`module_class`).
    """
    return module_class(module) == kind


def _module_dir(root: Path, modules: list[dict[str, Any]] | None, kind: str, default: str) -> Path:
    """The folder of the ``kind`` module (``Transformer``: ``""`` in most checkpoints;
    ``Pooling``: ``1_Pooling``) that ``modules.json`` names, inside the checkpoint.

    ``modules.json`` is a file of the checkpoint, so a hostile one could name a folder
    anywhere (``/elsewhere``, ``../../x``, a link out) and have the encoder read another
    model's pooling or config there: a module's folder must lie inside ``root``.
    """
    name = next((m.get("path", default) for m in modules or () if _is_module(m, kind)), default)
    where = root / "modules.json"
    if not isinstance(name, str):
        raise WeightsError(
            f"{where}: the {kind} module's path is {cut(repr(name), 60)}, not a folder "
            "name; restore the file"
        )
    if name in ("", "."):
        return root
    try:
        within(root, name)
    except OutsideFolder as err:
        raise WeightsError(
            f"{where}: the {kind} module's path {cut(name, 60)!r} {err}; a checkpoint's "
            "modules live in its own folder: restore the file"
        ) from None
    return root / name


def _sentence_config(ledger: FileLedger, root: Path, model_dir: Path) -> dict[str, Any] | None:
    for directory in (model_dir, root):
        found = _read_object(ledger, directory / "sentence_bert_config.json")
        if found is not None:
            return found
    return None


def _first_existing(ledger: FileLedger, *candidates: Path) -> tuple[Path, bytes]:
    for candidate in candidates:
        data = ledger.read(candidate)
        if data is not None:
            return candidate, data
    raise WeightsError(
        f"{candidates[0]} is missing; the encoder needs the fast-tokenizer file "
        "tokenizer.json next to config.json (save it with the tokenizers library)"
    )


def _read_object(ledger: FileLedger, path: Path) -> dict[str, Any] | None:
    """A JSON object from ``path``, or None when the (optional) file is absent."""
    data = _read_json(ledger, path)
    if data is not None and not isinstance(data, dict):
        raise WeightsError(f"{path} should hold a JSON object; restore the file")
    return data


def _read_modules(ledger: FileLedger, path: Path) -> list[dict[str, Any]] | None:
    """The sentence-transformers module list, or None for a plain Hugging Face checkpoint."""
    data = _read_json(ledger, path)
    if data is not None and not (
        isinstance(data, list) and all(isinstance(item, dict) for item in data)
    ):
        raise WeightsError(f"{path} should hold a list of module objects; restore the file")
    return data


def _read_json(ledger: FileLedger, path: Path) -> object:
    raw = ledger.read(path)
    if raw is None:
        return None
    try:
        data: object = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise WeightsError(
            f"{path} is nested too deeply to be a JSON config; restore the file"
        ) from None
    except ValueError as err:  # not UTF-8, not JSON, or a number of thousands of digits
        raise WeightsError(
            f"{path} could not be read as JSON ({cut(str(err))}); restore the file"
        ) from None
    return data


_ACTIVATIONS: dict[str, Activation] = {
    "gelu": "gelu",
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "relu": "relu",
}


def parse_architecture(config: dict[str, Any], path: Path) -> Architecture:
    """Read the network's static shape from ``config.json``, refusing what it cannot run.

    Refusing here (rather than computing something subtly different) is what lets a
    successful load mean "this reproduces the reference".
    """
    where = path / "config.json"
    model_type = config.get("model_type")
    if model_type == "mpnet":
        raise WeightsError(
            f"{where}: model_type 'mpnet' adds a relative-position bias that bert-encoder "
            "does not compute; use the mpnet-encoder model instead (model: {use: mpnet-encoder})"
        )
    if model_type not in MODEL_TYPES:
        found = (
            "names no model_type" if model_type is None else f"has model_type {shown(model_type)}"
        )
        raise WeightsError(
            f"{where} {found}; bert-encoder runs BERT encoders only (model_type "
            f"{' or '.join(repr(t) for t in MODEL_TYPES)}: BERT, MiniLM, bge, e5 and other "
            "sentence-transformers models built on BertModel), with absolute positions and "
            f"{', '.join(sorted(_ACTIVATIONS))} activations; use a checkpoint of one of those"
        )
    # null is absolute, as transformers 5 computes it (its BertModel reads no such key);
    # "relative_key" changed attention in transformers 4, so that stays refused.
    position_kind = config.get("position_embedding_type", "absolute")
    position_kind = "absolute" if position_kind is None else position_kind
    if position_kind != "absolute":
        raise WeightsError(
            f"{where}: position_embedding_type {shown(position_kind)} is not supported; "
            "bert-encoder implements absolute position embeddings only"
        )
    activation = activation_of(config, where)
    arch = Architecture(
        vocab_size=int_field(config, "vocab_size", where),
        hidden_size=int_field(config, "hidden_size", where),
        num_layers=int_field(config, "num_hidden_layers", where),
        num_heads=int_field(config, "num_attention_heads", where),
        intermediate_size=int_field(config, "intermediate_size", where),
        max_positions=int_field(config, "max_position_embeddings", where),
        type_vocab_size=_count_field(config, "type_vocab_size", 2, where),
        layer_norm_eps=eps_field(config, 1e-12, where),
        activation=activation,
    )
    if arch.type_vocab_size < 1:
        raise WeightsError(
            f"{where}: type_vocab_size is {arch.type_vocab_size}: BERT adds a token-type "
            "embedding to every token, so it needs at least 1 (transformers' BertModel cannot "
            "run this checkpoint either); set type_vocab_size to the rows of "
            "embeddings.token_type_embeddings.weight"
        )
    if arch.hidden_size % arch.num_heads:
        raise WeightsError(
            f"{where}: hidden_size {arch.hidden_size} is not divisible by "
            f"num_attention_heads {arch.num_heads}"
        )
    return arch


def shown(value: object) -> str:
    """A value read from a checkpoint's file, for a message: its ``repr``, cut short (a
    ``model_type`` of 200,000 characters is a 200 kB error line otherwise)."""
    return cut(repr(value), 60)


def _count_field(config: dict[str, Any], key: str, default: int, where: Path) -> int:
    value = config.get(key, default)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise WeightsError(f"{where}: {key} is {shown(value)}, expected a whole number")
    return value


def activation_of(config: dict[str, Any], where: Path) -> Activation:
    """The feed-forward nonlinearity ``hidden_act`` names, refusing one not implemented."""
    activation = _ACTIVATIONS.get(str(config.get("hidden_act", "gelu")))
    if activation is None:
        raise WeightsError(
            f"{where}: hidden_act {shown(config.get('hidden_act'))} is not supported; "
            f"the encoders implement {sorted(_ACTIVATIONS)}"
        )
    return activation


LIMITS = {"num_hidden_layers": 1024, "num_attention_heads": 1024}
"""The largest value of a ``config.json`` size the encoders take, where it is less than
``MAX_SIZE``: more layers or heads than any encoder has is a damaged (or hostile) file,
and building a model of a billion layers would exhaust memory before anything failed."""
MAX_SIZE = safetensors_header.MAX_DIMENSION
"""The largest vocabulary, width or position table taken (16,777,216)."""


def int_field(config: dict[str, Any], key: str, where: Path) -> int:
    """A positive whole-number size of ``config.json``, bounded (:data:`LIMITS`)."""
    value = config.get(key)
    limit = LIMITS.get(key, MAX_SIZE)
    if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= limit:
        raise WeightsError(
            f"{where}: {key} is {cut(repr(value), 60)}, expected a whole number from 1 to "
            f"{limit:,}; is this a BERT-family config.json?"
        )
    return value


def eps_field(config: dict[str, Any], default: float, where: Path) -> float:
    """``layer_norm_eps``: a small positive number (``default`` when absent)."""
    value = config.get("layer_norm_eps", default)
    if not isinstance(value, int | float) or isinstance(value, bool) or not 0 < value < 1:
        raise WeightsError(
            f"{where}: layer_norm_eps is {cut(repr(value), 60)}, expected a small positive "
            "number such as 1e-12"
        )
    return float(value)


#: The sentence-transformers modules the encoders reproduce, by class name; any other
#: would change the output.
SUPPORTED_MODULES = ("Transformer", "Pooling", "Normalize")


def module_class(module: dict[str, Any]) -> str | None:
    """The class a modules.json entry names, when it is one of sentence-transformers'.

    sentence-transformers moved its modules between releases
    (``sentence_transformers.models.Normalize`` up to 5,
    ``sentence_transformers.base.modules.normalize.Normalize`` from 6): a checkpoint
    saved by either names the same class, and only the class decides what runs.
    """
    kind = str(module.get("type", ""))
    if not kind.startswith("sentence_transformers."):
        return None
    return kind.rsplit(".", 1)[-1]


def check_modules(
    modules: list[dict[str, Any]] | None, where: Path, encoder: str = "the encoder"
) -> None:
    """Refuse a sentence-transformers pipeline with modules (Dense, ...) the encoder lacks.

    Skipping one silently would give vectors that look right and are not the model's.
    """
    extra = [
        cut(str(m.get("type")), 100)
        for m in modules or ()
        if module_class(m) not in SUPPORTED_MODULES
    ]
    if extra:
        raise WeightsError(
            f"{where / 'modules.json'} lists {cut(', '.join(extra), 300)}, which {encoder} "
            "does not implement (it runs Transformer, Pooling and Normalize only); use a "
            "checkpoint without them"
        )


def lists_normalize(modules: list[dict[str, Any]] | None) -> bool:
    """Whether a sentence-transformers pipeline ends by L2-normalising its output."""
    return any(module_class(module) == "Normalize" for module in modules or ())


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file, streamed, and read once while it stays the same
    (:mod:`.file_digest`: a run pins the digest, then checks it before loading)."""
    return file_digest.sha256_of(path)


def verify_sha256(path: Path, expected: str) -> None:
    """Refuse a weights file whose bytes are not the ones the configuration pins.

    The pin is a pipeline's ``sha256``, or the digest a run recorded for the weights it
    read (model contract 1.4): in its workers' configuration, its checkpoint and its
    index's manifest, so a search of that index reads it back from there.
    """
    actual = sha256_of(path)
    if actual != expected.lower():
        raise WeightsError(
            f"{path} has sha256 {actual}, not the {expected.lower()} that 'sha256' pins (set "
            "in the pipeline, or recorded in an index's manifest by the run that made it): "
            "the file is corrupt or another model's. Restore the weights it pins; or, to use "
            "these, update 'sha256' in the pipeline and run it again (an index made with "
            "other weights is made anew)"
        )


def _archive(source: str) -> split_zip.Archive | None:
    """The ``split-zip:`` archive seamline knows that ``source`` names, or None."""
    if not source.startswith(split_zip.PREFIX):
        return None
    return split_zip.KNOWN.get(source[len(split_zip.PREFIX) :].strip())


def source_sha256(source: str) -> str | None:
    """The digest a ``weights:`` source pins by itself, or None: a ``split-zip:`` archive
    seamline knows is pinned by the digest of its weights (:data:`split_zip.KNOWN`)."""
    archive = _archive(source)
    return None if archive is None else archive.weights_sha256


def source_files_sha256(source: str) -> str | None:
    """The digest of the configuration and tokenizer files a ``weights:`` source pins by
    itself, or None: a ``split-zip:`` archive's (:data:`split_zip.KNOWN`)."""
    archive = _archive(source)
    return None if archive is None else archive.files_sha256


def verify_cached_files(files: ModelFiles, source: str) -> None:
    """Refuse the cache's copy of ``source``'s configuration and tokenizer files if they are
    not the archive's any more (checked on every use, as the weights are).

    Only the weights were checked: an edited ``1_Pooling/config.json`` in the cache made
    every later run, ``Embedder`` and server pool the CLS token, silently (cosine 0.85
    against the checkpoint's own vectors).
    """
    expected = source_files_sha256(source)
    if expected is not None and files.files_sha256 != expected:
        raise WeightsError(
            f"the configuration and tokenizer files of {files.root}, the copy of {source} "
            f"assembled in the cache, have files_sha256 {files.files_sha256}, not the "
            f"{expected} its archive pins: one was changed after it was assembled. Delete "
            f"{files.root} and run again: it is assembled anew from the installed parts"
        )


def weights_pin(source: str, path: Path) -> str:
    """The digest a run pins for the weights at ``path`` when its configuration pins none:
    the source's own (a ``split-zip:`` archive's), else the file's, hashed here."""
    return source_sha256(source) or sha256_of(path)


def unchecked_pin(expected: str | None, source: str, files: ModelFiles) -> str | None:
    """The digest ``files``' weights still have to be checked against when they are read
    (``expected``, the configuration's pin), or None: a ``split-zip:`` source's copy in
    the cache is checked here, against the archive's pin, once (not read twice)."""
    known = source_sha256(source)
    if known is None or (expected is not None and expected.lower() != known):
        return expected
    verify_cached_copy(files.weights_path, known, source)
    return None


def verify_cached_copy(path: Path, expected: str, source: str) -> None:
    """Refuse the cache's copy of ``source``'s weights if it is not the archive's any more.

    The archive's parts are checked when they are assembled; the copy is read on every
    later run, so it is checked against the archive's digest too: a copy changed since
    was used, and its new digest pinned into the manifest, without a word.
    """
    actual = sha256_of(path)
    if actual != expected:
        raise WeightsError(
            f"{path}, the copy of {source} assembled in the cache, has sha256 {actual}, not "
            f"the {expected} its archive pins: it changed after it was assembled. Delete "
            f"{path.parent} and run again: it is assembled anew from the installed parts"
        )


def load_params(
    files: ModelFiles, arch: Architecture, expected_sha256: str | None = None
) -> BertParams:
    """Read ``model.safetensors`` (after its integrity check) into the encoder's pytree."""
    if expected_sha256 is not None:
        verify_sha256(files.weights_path, expected_sha256)
    raw = read_tensors(files.weights_path)
    return build_params(raw, arch, source=str(files.weights_path))


NULL_OBJECT = "PyObject pointer is null"
"""What a pyo3 extension panics with when CPython could not make an object: out of memory."""


def read_tensors(path: Path) -> dict[str, Array]:
    """Every tensor of the safetensors file at ``path`` (``WeightsError`` if it is damaged).

    Running out of memory is the machine's failure, not the file's: it was a
    ``WeightsError`` telling the user to restore a good file (exit code 2). A
    ``MemoryError`` passes through, and so, as one, does the library's panic when
    CPython could not allocate a tensor's buffer (pyo3's ``PanicException``, a
    ``BaseException`` that no handler of a component's failures catches).
    """
    try:
        return load_file(str(path))
    except MemoryError:
        raise
    except Exception as err:  # safetensors raises its own error types for a damaged file
        raise WeightsError(
            f"{path} could not be read as safetensors ({err}); restore the file"
        ) from err
    except BaseException as err:
        if type(err).__name__ == "PanicException" and NULL_OBJECT in str(err):
            raise MemoryError(f"reading {path}: {type(err).__name__}: {err}") from err
        raise


def build_params(raw: dict[str, Array], arch: Architecture, *, source: str) -> BertParams:
    """Map Hugging Face tensor names onto :class:`BertParams`, checking every shape."""
    reader = TensorReader(_strip_prefix(raw), source)
    params = _assemble(reader, arch)
    reader.raise_if_missing()
    return params


def param_shapes(arch: Architecture) -> BertParams:
    """The pytree :func:`build_params` makes, as shapes only: nothing is read."""
    return _assemble(ShapeReader(), arch)


def check_tensors(files: ModelFiles, arch: Architecture) -> None:
    """Refuse weights whose tensors do not match ``config.json``, reading only their header.

    A safetensors file begins with a JSON header that names every tensor with its dtype
    and shape; this reads that (kilobytes), so a checkpoint whose config.json and weights
    disagree is refused when the encoder is built (``seamline validate``), not after
    the weights are read.
    """
    header = read_safetensors_header(files.weights_path)
    reader = HeaderReader(_strip_prefix(header), str(files.weights_path))
    _assemble(reader, arch)
    reader.raise_if_missing()


def read_safetensors_header(path: Path) -> dict[str, Any]:
    """Every tensor's ``(dtype, shape)`` from a safetensors file's header, refused unless
    the header describes the file's data exactly (:mod:`.safetensors_header`)."""
    return dict(safetensors_header.read_header(path))


def _assemble(reader: TensorReader, arch: Architecture) -> BertParams:
    hidden = arch.hidden_size
    embeddings = EmbeddingParams(
        word=reader.get("embeddings.word_embeddings.weight", (arch.vocab_size, hidden)),
        position=reader.get("embeddings.position_embeddings.weight", (arch.max_positions, hidden)),
        token_type=reader.get(
            "embeddings.token_type_embeddings.weight", (arch.type_vocab_size, hidden)
        ),
        norm=reader.norm("embeddings.LayerNorm", hidden),
    )
    layers = [
        _layer_params(reader, f"encoder.layer.{i}", hidden, arch.intermediate_size)
        for i in range(arch.num_layers)
    ]
    return BertParams(embeddings=embeddings, layers=layers)


def _layer_params(reader: TensorReader, prefix: str, hidden: int, inner: int) -> LayerParams:
    return LayerParams(
        query=reader.dense(f"{prefix}.attention.self.query", hidden, hidden),
        key=reader.dense(f"{prefix}.attention.self.key", hidden, hidden),
        value=reader.dense(f"{prefix}.attention.self.value", hidden, hidden),
        attention_out=reader.dense(f"{prefix}.attention.output.dense", hidden, hidden),
        attention_norm=reader.norm(f"{prefix}.attention.output.LayerNorm", hidden),
        intermediate=reader.dense(f"{prefix}.intermediate.dense", hidden, inner),
        output=reader.dense(f"{prefix}.output.dense", inner, hidden),
        output_norm=reader.norm(f"{prefix}.output.LayerNorm", hidden),
    )


def _strip_prefix(raw: dict[str, Array]) -> dict[str, Array]:
    """Accept both ``BertModel`` names and the ``bert.``-prefixed names of task heads."""
    return {name.removeprefix("bert."): tensor for name, tensor in raw.items()}


class TensorReader:
    """Takes tensors by name, collecting every missing or misshapen one for a single report.

    Shared by the encoders' weight mappings (BERT's here, MPNet's in :mod:`.mpnet_weights`).
    """

    def __init__(
        self, tensors: dict[str, Array], source: str, what: str = "a BERT encoder"
    ) -> None:
        self._tensors = tensors
        self._source = source
        self._what = what
        self._problems: list[str] = []
        self._taken: set[str] = set()

    def get(self, name: str, shape: tuple[int, ...]) -> Array:
        """The tensor called ``name`` as float32, or a placeholder after noting the problem."""
        self._taken.add(name)
        tensor = self._tensors.get(name)
        if tensor is None:
            self._problems.append(f"missing {name}")
            return np.zeros(shape, np.float32)
        if tuple(tensor.shape) != shape:
            self._problems.append(f"{name} has shape {tuple(tensor.shape)}, expected {shape}")
        return np.asarray(tensor, np.float32)

    def dense(self, prefix: str, fan_in: int, fan_out: int) -> DenseParams:
        # Hugging Face stores torch Linear weights as [out, in]; the pytree keeps [in, out].
        weight = self.get(f"{prefix}.weight", (fan_out, fan_in))
        return DenseParams(
            kernel=np.ascontiguousarray(weight.T), bias=self.get(f"{prefix}.bias", (fan_out,))
        )

    def norm(self, prefix: str, size: int) -> NormParams:
        # Old TensorFlow-converted checkpoints name the layer-norm parameters gamma/beta.
        legacy = f"{prefix}.gamma" in self._tensors and f"{prefix}.weight" not in self._tensors
        scale, bias = ("gamma", "beta") if legacy else ("weight", "bias")
        return NormParams(
            scale=self.get(f"{prefix}.{scale}", (size,)), bias=self.get(f"{prefix}.{bias}", (size,))
        )

    def raise_if_missing(self) -> None:
        self._note_layers_left_over()
        if not self._problems:
            return
        shown = "; ".join(self._problems[:8])
        more = f" (and {len(self._problems) - 8} more)" if len(self._problems) > 8 else ""
        raise WeightsError(
            f"{self._source} does not match {self._what} as config.json describes it: "
            f"{shown}{more}; use the model.safetensors that belongs with this config.json"
        )

    def _note_layers_left_over(self) -> None:
        """Note encoder-layer tensors that config.json's ``num_hidden_layers`` leaves unread.

        A config.json that says 6 layers beside weights holding 12 ran the first 6 and
        wrote vectors of another model without a word (transformers warns of unused
        weights). Tensors outside the encoder's layers (a pooler, a task head) are not
        part of the embedding and stay allowed.
        """
        left = sorted(
            name
            for name in self._tensors
            if name.startswith(LAYER_PREFIX) and name not in self._taken
        )
        if not left:
            return
        layers = {name.removeprefix(LAYER_PREFIX).split(".", 1)[0] for name in left}
        listed = ", ".join(sorted(layers, key=lambda n: (len(n), n))[:8])
        self._problems.append(
            f"{len(left)} tensors of encoder layers config.json does not have (layer {listed}; "
            "its num_hidden_layers is fewer than the weights hold)"
        )


LAYER_PREFIX = "encoder.layer."
"""Where both encoders' per-layer tensors are named; a layer number follows."""


class HeaderReader(TensorReader):
    """Checks names, shapes and dtypes against a safetensors header; returns placeholders."""

    def get(self, name: str, shape: tuple[int, ...]) -> Array:
        self._taken.add(name)
        entry = self._tensors.get(name)
        if entry is None:
            self._problems.append(f"missing {name}")
        else:
            dtype, found = entry
            if found != shape:  # a header's shape may have a million dimensions: cut short
                self._problems.append(f"{name} has shape {cut(str(found), 60)}, expected {shape}")
            if dtype not in TENSOR_DTYPES:
                self._problems.append(
                    f"{name} is stored as {dtype}, not a float type ({', '.join(TENSOR_DTYPES)})"
                )
        return np.zeros((0,), np.float32)


class ShapeReader(TensorReader):
    """Answers every request with a float32 shape, for planning without the weights."""

    def __init__(self) -> None:
        super().__init__({}, "shapes")

    def get(self, name: str, shape: tuple[int, ...]) -> Array:
        import jax

        return jax.ShapeDtypeStruct(shape, np.float32)  # type: ignore[return-value]

    def dense(self, prefix: str, fan_in: int, fan_out: int) -> DenseParams:
        return DenseParams(
            kernel=self.get(f"{prefix}.weight", (fan_in, fan_out)),
            bias=self.get(f"{prefix}.bias", (fan_out,)),
        )
