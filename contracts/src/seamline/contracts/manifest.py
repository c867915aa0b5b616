"""The manifest a sink publishes beside its output, as a reader must take it: untrusted.

A first-party sink publishes ``<stem>.manifest.json`` beside its output: the model that
made the vectors and its config, the run's ``attention`` section, and ``outputs`` (the
sink and where each of its files is, relative to the manifest; or ``outputs.parts``,
the files of every shard of a run split into shards). ``seamline search`` rebuilds the
model from it and reads the files it names, and so do the sinks' readers.

Whoever can write the output's folder can edit the manifest, so it is read as hostile
input, like a pipeline file: at most :data:`MAX_MANIFEST_BYTES` of a regular file
(:mod:`.untrusted`), strict JSON, then this schema, before anything in it is used. A
problem is one :class:`~seamline.contracts.errors.ConfigError` naming the file and the
field (and the line and column, where the caller can locate it).

**Unknown keys are ignored, known ones are checked.** The format is versioned
(``seamline_manifest``): a newer seamline may add keys a reader can skip without
bumping it, and one it must understand bumps it, which an older reader refuses. A key
this reader does not know is never used, so ignoring it cannot make it do anything;
every key it does use is validated here, strictly (``"5"`` is not a number). The model's
``with:`` (and ``attention``) are validated by the component's ``Config``, which refuses a
setting it does not know: a setting added later is left out of a record at its default
(:class:`~seamline.contracts.AddedLater`), so that an older reader still takes it.

The files the manifest names are opened only through :func:`output_files` and
:func:`open_output`: each must lie in the manifest's own folder (no ``..``, no
absolute path elsewhere, no symbolic link out) and be a regular file.
"""

from __future__ import annotations

import errno
import json
import os
import stat
from collections.abc import Callable, Mapping
from json import JSONDecodeError
from pathlib import Path
from typing import Annotated, Any, BinaryIO, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from seamline.contracts.errors import ConfigError, UserError
from seamline.contracts.formats import MANIFEST_FORMAT
from seamline.contracts.untrusted import (
    FILE_KINDS,
    NotRegularFile,
    OutsideFolder,
    TooManyEntries,
    cut,
    open_regular,
    planted_entry,
    read_at_most,
    strict_json,
    visible,
    within,
)

MANIFEST_SUFFIX = ".manifest.json"
FORMAT = MANIFEST_FORMAT
"""The manifest format this seamline writes and reads (``seamline_manifest``)."""
MAX_MANIFEST_BYTES = 1 << 20
"""The largest manifest read (1 MiB, as a pipeline file): a manifest is a page of data."""
MAX_FOLDER_ENTRIES = 1_000_000
"""The most files and folders an output folder (a LanceDB table) may hold to be opened."""
MAX_SERVED_SHAPES = 1024
"""The most shapes a manifest's ``attention_served`` may list (a run plans a few dozen)."""
MAX_TABLE_VERSION = (1 << 63) - 1
"""The largest table version a manifest may name (Lance numbers versions with a u64; a
reader passes it to LanceDB, which takes a signed 64-bit integer)."""
REWRITE = "; it is not as seamline wrote it: run the pipeline again to write the output anew"
"""What a reader adds to a problem with an output's files: a pipeline rewrites them."""
PURPOSES = ("records", "errors", "matrix", "index", "parquet", "table")
"""The files the first-party sinks publish, by purpose."""

Locate = Callable[[tuple[str | int, ...]], str]
"""The ``file:line:column`` of the value at a path in the manifest (its file, if unknown)."""

_READ = ConfigDict(extra="ignore", strict=True, frozen=True)

FileName = Annotated[str, StringConstraints(min_length=1, max_length=4096)]
Name = Annotated[str, StringConstraints(min_length=1, max_length=200)]


class ModelSection(BaseModel):
    """The model that made the vectors: its registered name and its ``with:`` config (which
    the component's own ``Config`` validates when a reader rebuilds it)."""

    model_config = _READ

    use: Name
    with_: dict[str, Any] = Field(alias="with")


class OutputPart(BaseModel):
    """The files of one part (one shard's output), by purpose."""

    model_config = _READ

    files: dict[str, FileName]


class IndexSettings(BaseModel):
    """The lancedb sink's query-time settings of its vector index (the rest is ignored)."""

    model_config = _READ

    nprobes: int | None = Field(default=None, ge=1, le=1 << 20)
    refine_factor: int | None = Field(default=None, ge=1, le=1 << 10)


class Outputs(BaseModel):
    """What the sink published: which sink, and its files (or each part's files)."""

    model_config = _READ

    sink: str = Field(default="", max_length=200)
    files: dict[str, FileName] = Field(default_factory=dict)
    parts: list[OutputPart] | None = Field(default=None, max_length=100_000)
    index: IndexSettings | None = None
    table_version: int | None = Field(default=None, ge=0, le=MAX_TABLE_VERSION)
    """The lancedb sink's: the version of the table this manifest was published with (after
    its indexes were built), the one its reader reads. A LanceDB table commits its rows
    before the manifest is renamed into place, so the newest version may be a newer run's
    while this manifest (its model) is still the one in place. 0: the run created no table
    (it wrote no rows where there was none; LanceDB's versions begin at 1). None in
    manifests from before it was recorded: the newest version is read."""
    index_failure: str | None = None
    """Why the indexes of this publication were not built, as the run that published it
    said (it exited with code 2 naming it): the lancedb sink's, absent when they were built.
    A search that then compares every row says why there is no index to go through, where
    it said only "exact": the run's message was the one place it was told. Shown cut and
    made visible (:func:`shown_index_failure`): anyone could write it."""
    lines: dict[FileName, Annotated[int, Field(ge=0)]] | None = Field(default=None, max_length=64)
    """The records of each file of lines (by its name in ``files``) as published; None in
    manifests from before they were counted, or of a staged output."""
    rows: dict[FileName, Annotated[int, Field(ge=0)]] | None = Field(default=None, max_length=64)
    """The rows of each file of rows that is not a file of lines (a Parquet file, by its
    name in ``files``) as published: a reader refuses another count, as it does for
    ``lines``. None in manifests from before they were counted, or of a sink that counts
    none."""
    sha256: dict[FileName, Annotated[str, Field(pattern=r"^[0-9a-f]{64}$")]] | None = Field(
        default=None, max_length=64
    )
    """The sha256 of each file as published, where the sink kept it (by its name in
    ``files``): a reader tells one publish's file from the next one's by it, and a file
    edited in place from the one published. None in manifests from before they were
    kept, or of a sink that keeps none."""

    def listed(self) -> list[tuple[tuple[str | int, ...], dict[str, str]]]:
        """Each part's files with where they are in the manifest: one part for a whole output."""
        if self.parts is not None:
            return [(("outputs", "parts", i, "files"), p.files) for i, p in enumerate(self.parts)]
        return [(("outputs", "files"), self.files)]


SHOWN_FAILURE_CHARS = 2_000
"""How much of a recorded ``outputs.index_failure`` a message repeats."""


def shown_index_failure(recorded: object) -> str | None:
    """``outputs.index_failure`` as a message shows it (read from a manifest anyone could
    edit: cut, and an escape sequence shown as a mark); None for none, or anything but text."""
    if not isinstance(recorded, str) or not recorded:
        return None
    return visible(cut(recorded, SHOWN_FAILURE_CHARS))


class Manifest(BaseModel):
    """The manifest, as far as a reader uses it."""

    model_config = _READ

    seamline_manifest: int = Field(default=FORMAT, ge=1)
    model: ModelSection | None = None
    """What made the vectors; search refuses a manifest without it (a reader of the files
    does not need it)."""
    attention: dict[str, Any] | None = None
    """The run's ``attention`` section, resolved again (and so validated) by search."""
    attention_served: (
        dict[
            Annotated[str, StringConstraints(max_length=1000)],
            Name | Annotated[list[Name], Field(min_length=2, max_length=16)],
        ]
        | None
    ) = Field(default=None, max_length=MAX_SERVED_SHAPES)
    """Shape signature → the attention implementation that served it, as the run found by
    the time it published (``attention`` is the setting as asked: ``use: auto``); a list
    where the rows of one shape were computed by several (a resumed run and the run it
    continued, or two shards' workers, served it otherwise). None in manifests from before
    it was recorded."""
    precision: Literal["float32", "bfloat16"] = "float32"
    """The precision the vectors were computed in (negotiated by the run); search embeds
    queries in it. Manifests from before precision was negotiated: float32."""
    outputs: Outputs | None = None
    """None in manifests written before they listed their files."""


def manifest_path(output: Path) -> Path:
    """The manifest of ``output``: the file itself if it is one, else the one beside it.

    ``out/emb.jsonl``, ``out/emb.parquet`` and the LanceDB table ``out/emb.lance`` all
    have ``out/emb.manifest.json``.
    """
    if not output.name:  # "", "." or "/": no file has a manifest beside it
        raise UserError(
            f"{str(output)!r} names no output: give the file or table a pipeline's sink "
            "published (out/emb.jsonl, out/emb.lance) or its .manifest.json"
        )
    if output.name.endswith(MANIFEST_SUFFIX):
        return output
    return output.with_name(output.stem + MANIFEST_SUFFIX)


def read_manifest_text(path: Path) -> str:
    """The text of the manifest at ``path``: a regular file (not a link), at most 1 MiB, UTF-8.

    ``FileNotFoundError`` when there is none (the caller knows what that means).
    """
    try:
        with open_regular(path, follow=False) as handle:
            data = read_at_most(handle, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise
    except NotRegularFile as err:
        raise ConfigError(
            f"the manifest is {err}, not a regular file{REWRITE}", str(path)
        ) from None
    except OSError as err:
        raise ConfigError(f"cannot read the manifest: {_reason(err)}{REWRITE}", str(path)) from None
    if len(data) > MAX_MANIFEST_BYTES:
        raise ConfigError(
            f"the manifest is larger than {MAX_MANIFEST_BYTES:,} bytes; a manifest is a page "
            f"of data{REWRITE}",
            str(path),
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"the manifest is not UTF-8 ({err.reason}){REWRITE}", str(path)) from None


def manifest_json(text: str, source: str) -> Any:
    """Manifest ``text`` (from ``source``) parsed as strict JSON, or a located ``ConfigError``."""
    try:
        return strict_json(text, unique_keys=True)
    except (ValueError, RecursionError) as err:
        where, reason = source, str(err)
        if isinstance(err, JSONDecodeError):
            where, reason = f"{source}:{err.lineno}:{err.colno}", err.msg
        raise ConfigError(f"the manifest is not JSON ({reason}){REWRITE}", where) from None


def parse_manifest(text: str, source: str, locate: Locate | None = None) -> Manifest:
    """Manifest ``text`` (from ``source``) parsed as strict JSON and validated.

    ``locate`` gives the ``file:line:column`` of a value (``seamline search`` has it from
    a located parse); without it a problem names the file and the field.
    """
    return validate_manifest(manifest_json(text, source), source, locate)


def validate_manifest(data: Any, source: str, locate: Locate | None = None) -> Manifest:
    """``data`` (a parsed manifest) validated: one located problem, or the manifest."""
    where = locate or (lambda _path: source)
    if not isinstance(data, dict):
        kind = type(data).__name__
        raise ConfigError(f"a manifest is a JSON object, not {kind}{REWRITE}", where(()))
    version = data.get("seamline_manifest", FORMAT)
    if isinstance(version, int) and not isinstance(version, bool) and version > FORMAT:
        raise ConfigError(
            f"written by a newer seamline (manifest format {version}); this one reads format "
            f"{FORMAT}: upgrade seamline to read it",
            where(("seamline_manifest",)),
        )
    try:
        return Manifest.model_validate(data)
    except ValidationError as err:
        raise _located(err, where) from None


def embedded_by(manifest: Manifest) -> str:
    """What made an output's vectors, as its manifest says: the model (name and settings)
    and the precision, as canonical JSON. A query must be embedded by the same to be
    compared with them; a republish that changes it makes an opened index's model wrong."""
    model = None if manifest.model is None else manifest.model.model_dump(mode="json")
    return json.dumps({"model": model, "precision": manifest.precision}, sort_keys=True)


def load_manifest(path: Path) -> Manifest:
    """The manifest at ``path``, read and validated (``FileNotFoundError`` if there is none)."""
    return parse_manifest(read_manifest_text(path), str(path))


def output_files(
    outputs: Outputs, path: Path, locate: Locate | None = None
) -> tuple[dict[str, Path], ...]:
    """The files of each part, by purpose, each checked to lie in the manifest's folder.

    ``path`` is the manifest's. A name that leads out of the folder is refused here,
    before anything is opened, with the field that names it. The paths are spelled from
    ``path`` (relative if it is); :func:`open_output` refuses a link at the file itself.
    """
    where = locate or (lambda _path: str(path))
    parts = []
    for at, files in outputs.listed():
        checked = {}
        for purpose, name in files.items():
            try:
                within(path.parent, name)
                # Spelled as the manifest's path is (a user's relative path stays relative).
                checked[purpose] = path.parent / name
            except OutsideFolder as err:
                field = ".".join(str(p) for p in (*at, purpose))
                raise ConfigError(
                    f"{field}: {_shown(name, 200)} {err}: search and the readers open only "
                    "files in the manifest's folder; write every file of the output there "
                    "(the sink's paths) and run the pipeline again",
                    where((*at, purpose)),
                ) from None
        parts.append(checked)
    return tuple(parts)


def open_output(path: Path, purpose: str, manifest: Path) -> BinaryIO:
    """The output file ``path`` (from :func:`output_files`) opened for reading, if it is a
    regular file; a ``UserError`` naming it, its purpose and the manifest otherwise."""
    what = f"{path} (the {purpose} file that {manifest} names)"
    try:
        return open_regular(path, follow=False)
    except FileNotFoundError:
        raise UserError(f"{what} does not exist{REWRITE}") from None
    except NotRegularFile as err:
        raise UserError(f"{what} is {err}, not a regular file{REWRITE}") from None
    except OSError as err:
        raise UserError(f"cannot read {what}: {_reason(err)}{REWRITE}") from None


def _reason(err: OSError) -> str:
    """Why a file could not be opened; ``O_NOFOLLOW``'s ELOOP said as what it means."""
    if err.errno == errno.ELOOP:
        return "it is a symbolic link (seamline writes an output's files as regular files)"
    return err.strerror or str(err)


def output_folder(path: Path, purpose: str, manifest: Path) -> Path:
    """The output folder ``path`` (from :func:`output_files`: a LanceDB table), if it is a
    folder of regular files and folders only; a ``UserError`` naming it otherwise.

    A library that opens the folder opens whatever it holds: a symbolic link in it could
    lead it anywhere, and a FIFO would block it. Both are refused before it is opened.
    """
    what = f"{path} (the {purpose} that {manifest} names)"
    try:
        mode = os.lstat(path).st_mode
    except FileNotFoundError:
        raise UserError(f"{what} does not exist{REWRITE}") from None
    if not stat.S_ISDIR(mode):
        kind = FILE_KINDS.get(stat.S_IFMT(mode), "a file")
        raise UserError(f"{what} is {kind}, not a folder{REWRITE}")
    try:
        found = planted_entry(path, MAX_FOLDER_ENTRIES)
    except TooManyEntries:
        raise UserError(f"{what} holds more than {MAX_FOLDER_ENTRIES:,} files{REWRITE}") from None
    if found is not None:
        inner, mode = found
        kind = FILE_KINDS.get(stat.S_IFMT(mode), "not a file")
        raise UserError(f"{what} holds {inner}, which is {kind}{REWRITE}")
    return path


def _shown(value: object, width: int = 60) -> str:
    shown = repr(value)
    return shown if len(shown) <= width else shown[: width - 3] + "..."


def _located(err: ValidationError, where: Locate) -> ConfigError:
    """The first of pydantic's problems as one located line (and how many more there are)."""
    errors = err.errors(include_url=False)
    first = errors[0]
    path = tuple(_field(p) for p in first["loc"])
    field = ".".join(str(p) for p in path) or "the manifest"
    if first["type"] == "missing":
        message = f"missing required field {field!r}"
    else:
        message = f"{field}: {first['msg']}"
        if not isinstance(first.get("input"), Mapping | list):
            message += f" (got {_shown(first.get('input'))})"
    if len(errors) > 1:
        message += f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})"
    return ConfigError(message + REWRITE, where(path))


def _field(part: str | int) -> str | int:
    """A field's name as the manifest spells it (``with``, not the attribute ``with_``)."""
    return "with" if part == "with_" else part
