"""What a sink reads back that it wrote earlier, read as untrusted input.

A resume reads the checkpoint (:mod:`._checkpoint`), a staged run's ``run.json`` and
the published manifest (:mod:`._parts`). The sink wrote them, but anyone who can
write the output folder can replace them since, so each is read the way a pipeline
file is: bounded, a regular file only (a link is not followed, a FIFO is not waited
on: :func:`seamline.contracts.untrusted.read_regular`), and validated by a strict
pydantic schema (a value of another type is refused, never coerced; a field no
sink writes is refused). Whatever is joined to a path (a partial file's name, a
part's name, a run id) must be one plain name of the expected form, so that no
record can make a sink open, write or delete anything outside its own files.

A record that fails is :class:`RecordRefused`, whose message says what is wrong
with it (``files.records.bytes: Input should be a valid integer``); the caller adds
which file it is and what to do.
"""

from __future__ import annotations

import binascii
import json
import re
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
)

from seamline.contracts.untrusted import NotRegularFile, read_regular

if TYPE_CHECKING:
    from pathlib import Path

CHECKPOINT_FORMAT = 2
"""2: partial files are recorded by name in the destination's folder (1 recorded paths)."""
MAX_CHECKPOINT_BYTES = 16 << 20
"""The largest checkpoint read. A parquet sink's lists one part per commit, about 60
bytes each: 16 MiB is some 280,000 commits."""
RUN_FORMAT = 1
MAX_RECORD_BYTES = 1 << 20
"""The largest ``run.json`` or published manifest read back (both are small)."""
RUN_ID = r"[A-Za-z0-9][A-Za-z0-9_-]{0,63}"
"""What a run id may be: one plain name, since it names a folder of the staging area (the
core makes 12 hex digits)."""
RunId = Annotated[str, Field(pattern=f"^{RUN_ID}$")]


class RecordRefused(Exception):
    """A record read back is not one a sink wrote; the message says what is wrong with it."""


def first_problem(err: ValidationError, *within: str) -> str:
    """The first thing pydantic found wrong, as ``where: what`` (``files.errors.bytes: ...``);
    ``within``: the fields the validated value was found under (``state``)."""
    first = err.errors()[0]
    where = ".".join(str(part) for part in (*within, *first["loc"]))
    return f"{where}: {first['msg']}" if where else str(first["msg"])


def read_json(path: Path, limit: int) -> Any:
    """The JSON at ``path``, a regular file of at most ``limit`` bytes (no link followed).

    ``FileNotFoundError`` when there is nothing there; :class:`RecordRefused` for
    anything else that is not such a file.
    """
    try:
        data = read_regular(path, limit, follow=False)
    except FileNotFoundError:
        raise
    except NotRegularFile as err:
        raise RecordRefused(f"it is {err}, not a file") from None
    except OSError as err:
        raise RecordRefused(f"it cannot be read ({err.strerror or err})") from None
    if len(data) > limit:
        raise RecordRefused(f"it is larger than {limit:,} bytes")
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # also a UnicodeDecodeError; nesting too deep
        raise RecordRefused("it is not JSON") from None


# --- the checkpoint ---------------------------------------------------------------------------


class SinkState(BaseModel):
    """What a sink adds to its checkpoint (rows written, a schema, ...): a schema of its own.

    Strict and closed like the checkpoint around it: a value of another type, a negative
    count or a field no sink writes is refused, never coerced.
    """

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class NoState(SinkState):
    """The state of a sink whose files say everything (``jsonl``)."""


S = TypeVar("S", bound=SinkState)


def _decodes_to_a_schema(text: str) -> str:
    """An Arrow schema as a checkpoint stores it (base64 of its IPC form) must decode."""
    import pyarrow as pa

    # Imported here: _columns imports the jsonl sink, which imports the checkpoint module.
    from seamline.components.sinks._columns import schema_from_text

    try:
        schema_from_text(text)
    except (binascii.Error, ValueError, pa.ArrowException) as err:
        raise ValueError(f"not an Arrow schema ({type(err).__name__})") from None
    return text


SchemaText = Annotated[str, AfterValidator(_decodes_to_a_schema)]
"""A column layout as the columnar sinks record it (``_columns.schema_to_text``)."""


class PartialFile(BaseModel):
    """One partial file a checkpoint covers."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    partial: str
    """The partial file's name in its destination's folder; "" when none was opened."""
    bytes: NonNegativeInt
    """Its length at the commit: what a resume cuts it back to."""


class _InputFiles(BaseModel):
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    paths: list[str]
    files: str


class _Inputs(BaseModel):
    """What the run's manifest recorded of its inputs (``changed_inputs`` reads it)."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    pipeline: dict[str, str] | None = None
    input: _InputFiles | None = None


class Checkpoint(BaseModel):
    """A checkpoint file, as :class:`._checkpoint.ResumableGroup` writes it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    seamline_checkpoint: int
    sink: str
    cursor: str | None
    model: Any = None
    """Compared with this run's, never interpreted."""
    inputs: _Inputs | None = None
    files: dict[str, PartialFile]
    state: dict[str, Any]


def load_checkpoint(path: Path, sink: str, state: type[S]) -> tuple[Checkpoint, S] | None:
    """The checkpoint at ``path`` and its ``state`` (the sink's schema); None if there is none.

    :class:`RecordRefused` if it is not a regular file, too large, not JSON, of another
    format, not of the schema, or another sink's. What its names say is checked by the
    caller, who knows the destinations.
    """
    try:
        raw = read_json(path, MAX_CHECKPOINT_BYTES)
    except FileNotFoundError:
        return None
    found = raw.get("seamline_checkpoint") if isinstance(raw, dict) else None
    if found is not None and found != CHECKPOINT_FORMAT:
        raise RecordRefused(
            f"it is of format {found!r}, this version of seamline reads format {CHECKPOINT_FORMAT}"
        )
    try:
        checkpoint = Checkpoint.model_validate(raw)
    except ValidationError as err:
        raise RecordRefused(first_problem(err)) from None
    try:
        validated = state.model_validate(checkpoint.state)
    except ValidationError as err:
        raise RecordRefused(first_problem(err, "state")) from None
    if checkpoint.sink != sink:
        raise RecordRefused(f"it was written by a {checkpoint.sink!r} sink")
    return checkpoint, validated


# --- staged runs and the published manifest ---------------------------------------------------


class StagedRunRecord(BaseModel):
    """``run.json``: a staged run, as :meth:`._parts.PartStaging.begin` writes it."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    seamline_staged_run: int = Field(ge=RUN_FORMAT, le=RUN_FORMAT)
    sink: str
    run_id: RunId
    count: PositiveInt = Field(le=1 << 20)
    model: Any = None
    """Compared with this run's, never interpreted."""


def load_staged_run(path: Path) -> StagedRunRecord:
    """A staged run's ``run.json``; :class:`RecordRefused` (or ``FileNotFoundError``)."""
    try:
        return StagedRunRecord.model_validate(read_json(path, MAX_RECORD_BYTES))
    except ValidationError as err:
        raise RecordRefused(first_problem(err)) from None


def read_published_manifest(manifest_path: Path) -> dict[str, Any] | None:
    """The published manifest at ``manifest_path`` as JSON, or None.

    None when there is none, or it is not a regular file (never followed through a
    link, never a FIFO waited on), larger than :data:`MAX_RECORD_BYTES`, or not a JSON
    object. What the caller takes from it, it checks.
    """
    try:
        manifest = read_json(manifest_path, MAX_RECORD_BYTES)
    except (OSError, RecordRefused):
        return None
    return manifest if isinstance(manifest, dict) else None


def published_run_id(manifest_path: Path) -> str | None:
    """The staged run a published manifest names (``outputs.run_id``), if it is one a run has.

    None when there is no manifest, or it names no run id or one that is not a plain
    name (:data:`RUN_ID`): this id decides which staging folder a publication keeps and
    which it deletes, and a manifest naming ``../../x`` once had that folder deleted.
    """
    outputs = (read_published_manifest(manifest_path) or {}).get("outputs")
    run_id = outputs.get("run_id") if isinstance(outputs, dict) else None
    return run_id if isinstance(run_id, str) and re.fullmatch(RUN_ID, run_id) else None
