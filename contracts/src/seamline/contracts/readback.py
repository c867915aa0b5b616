"""Reading a published output back: each sink says how, through its :class:`OutputReader`.

A sink knows the format it wrote, so it names the reader of its output (its class
attribute ``reader``, sink contract 1.4). Whoever reads an output (``seamline search``,
which finds the sink by the name the manifest's ``outputs.sink`` gives it in the
registry; the tests; a sink author's conformance fixture) goes through the manifest
and that reader, and keeps no list of sink kinds of its own.

What is read is untrusted (whoever can write the folder can edit it): the manifest is
validated by its schema (:mod:`.manifest`), only regular files in the manifest's own
folder are opened (:meth:`OutputReader.open`), and every row and vector is checked as
it is read (:mod:`.stored`). A problem is one ``UserError`` naming the file and the
line or row.

An output is republished by renaming its files into place one after another (the
manifest first, the primary file last: :class:`~seamline.contracts.sink_kit.AtomicGroup`),
so a reader that opens them one after another may meet two publishes. A reader of a
whole output therefore reads its manifest again each time it reads the files
(:meth:`OutputReader.current`: an index held open sees the newest publish), checks what
it read against it (the counts of ``outputs.lines`` and ``outputs.rows``; the sha256 of
``outputs.sha256``, computed as the files are read), and raises :class:`Republished`
where they do not agree: whoever reads reads again (:func:`reread`), a bounded number
of times.
"""

from __future__ import annotations

import abc
import hashlib
import os
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO, ClassVar, TypeVar, cast

import numpy as np

from seamline.contracts.errors import UserError
from seamline.contracts.manifest import (
    REWRITE,
    Outputs,
    embedded_by,
    load_manifest,
    manifest_path,
    open_output,
    output_files,
    parse_manifest,
    read_manifest_text,
)
from seamline.contracts.sink import OutputRecord, Sink
from seamline.contracts.stored import (
    StoredRow,
    check_vectors,
    flat_vector,
    json_object,
    plain_record,
    record_lines,
    record_rows,
    row_of,
)

Chunk = tuple[np.ndarray[Any, Any], Sequence[StoredRow]]
"""Vectors (float32, one row each) and the stored row of each, in output order. The rows
may be a list, or :class:`~seamline.contracts.stored.CheckedRows`: checked as they were
read, each made a ``StoredRow`` only when asked for (a search keeps a few of them)."""

CHUNK_ROWS = 4096
"""How many rows a reader yields at a time: memory stays bounded whatever the output."""


class Republished(UserError):
    """What a reader read of an output did not all belong to one publish (a file and the
    manifest's count or sha256 of it, or two files paired row by row, disagree): the
    output was being republished as it was read, or was changed since it was published.
    :func:`reread` reads again; the last attempt's error is the one reported."""


REREADS = 4
"""How many times in all :func:`reread` reads an output whose files disagreed."""
REREAD_PAUSE = 0.05
"""Seconds before the first read again; doubled before each later one (a publish renames
its few files within milliseconds: 0.05 + 0.1 + 0.2 s covers a slow disk's fsyncs)."""

T = TypeVar("T")


def reread(read: Callable[[], T]) -> T:
    """``read()``, made again (after a pause) while it raises :class:`Republished`, at most
    :data:`REREADS` times in all; the last one's error is raised."""
    pause = REREAD_PAUSE
    for _ in range(REREADS - 1):
        try:
            return read()
        except Republished:
            time.sleep(pause)
            pause *= 2
    return read()


def _published_sha256(outputs: Outputs) -> dict[str, str]:
    """The manifest's ``outputs.sha256`` by purpose; {} where it has none (an output from
    before they were kept, or of a sink that keeps none)."""
    digests = outputs.sha256 or {}
    return {purpose: digests[name] for purpose, name in outputs.files.items() if name in digests}


class Digesting:
    """A binary file read line by line (as :func:`record_lines` reads it), its sha256
    computed on the way: what was read can be compared with what was published."""

    def __init__(self, handle: BinaryIO) -> None:
        self.handle = handle
        self.sha256 = hashlib.sha256()

    def readline(self, limit: int = -1) -> bytes:
        line = self.handle.readline(limit)
        self.sha256.update(line)
        return line


class FilterRefused(UserError):
    """A ``where`` filter that cannot apply to an output (no query engine, or one that
    refuses this filter): the search asked for it, the output is not at fault. A server
    answers it as a bad request; any other ``UserError`` of a reader is the output's."""


def cosines(matrix: np.ndarray[Any, Any], queries: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """Each row's cosine with each unit query (rows × queries), in float32: the score every
    reader gives, whatever finds its rows (a scan, or an engine's index).

    Summed in float64, then rounded: a float32 matrix product sums in an order that
    depends on how many queries share it (BLAS picks its kernel by shape), so a query's
    scores, and the order of near ties, would change with the queries searched beside it.
    Rounded from float64, they are the same for a query alone and in a group. A row of
    zeros scores 0.
    """
    wide = np.asarray(matrix, dtype=np.float64)
    norms = np.maximum(np.linalg.norm(wide, axis=1), 1e-12)
    product = wide @ np.asarray(queries, dtype=np.float64).T
    scores: np.ndarray[Any, Any] = (product / norms[:, None]).astype(np.float32)
    return scores


@dataclass(frozen=True, slots=True)
class Nearest:
    """The rows an output's own query engine found nearest to a vector."""

    rows: list[tuple[float, StoredRow]]
    """``(cosine similarity, row)``, best first; rows checked as every reader's are."""
    how: str
    """How they were found: an index and its settings, or an exact scan."""
    plan: str = ""
    """The engine's plan of the query, where it has one."""
    made_by: str | None = None
    """What made the rows found (:func:`~seamline.contracts.manifest.embedded_by` of the
    manifest the reader read them by), where the reader read the manifest again for them
    (:meth:`OutputReader.current`); whoever embedded the query compares it with the query
    model's. None: not known here (the caller reads the manifest after the rows)."""


class OutputReader(abc.ABC):
    """One published part of a sink's output (a whole output is one part), read back.

    ``files`` are the part's files by purpose, each already checked to lie in the
    manifest's folder (:func:`~seamline.contracts.manifest.output_files`).
    """

    primary: ClassVar[str]
    """The purpose of the file (or folder) whose presence says a whole output is published."""
    filters: ClassVar[bool] = False
    """Whether :meth:`nearest` applies a ``where`` filter (a query engine's SQL)."""

    sha256: Mapping[str, str] = MappingProxyType({})
    """The sha256 of each file (by purpose) as published, where the manifest kept it (set
    by :meth:`current`); a reader that reads a file whole compares it (:meth:`check_sha256`)."""

    made_by: str | None = None
    """What made the output's vectors as the manifest this reader was made from says
    (:func:`~seamline.contracts.manifest.embedded_by`), where that manifest was read again
    (set by :meth:`republished`); None for a reader made from a manifest read elsewhere."""

    def __init__(self, files: Mapping[str, Path], manifest: Path, outputs: Outputs) -> None:
        self.files = dict(files)
        self.manifest = manifest
        self.outputs = outputs

    def current(self) -> OutputReader:
        """A reader of this output as its manifest describes it now, read again: an index
        held open reads the newest publish, and checks its files against that manifest's
        ``outputs.lines``, ``outputs.rows`` and ``outputs.sha256``. (A part of a sharded
        run: this reader; :func:`current_readers` reads the manifest again for the parts.)"""
        if self.outputs.parts is not None:
            return self
        fresh = self.republished()
        if fresh[0].outputs.parts is not None:
            raise Republished(  # read again: current_readers then reads the parts
                f"{self.manifest} was republished, by a run split into shards, after this "
                "output was opened: read its parts (readback.current_readers), or open it again"
            )
        return fresh[0]

    def republished(self) -> list[OutputReader]:
        """A reader of each part of this output (one for a whole output) as its manifest
        describes it now, read again; a ``UserError`` if it is gone, or now describes the
        output of another sink."""
        try:
            text = read_manifest_text(self.manifest)
        except FileNotFoundError:
            raise UserError(
                f"{self.manifest} was removed after the output was opened{REWRITE}"
            ) from None
        manifest = parse_manifest(text, str(self.manifest))
        outputs = manifest.outputs
        if outputs is None or outputs.sink != self.outputs.sink:
            raise UserError(
                f"{self.manifest} was replaced by the manifest of another output (not of the "
                f"{self.outputs.sink} sink's) after this one was opened: open the output again"
            )
        readers = [
            type(self)(files, self.manifest, outputs)
            for files in output_files(outputs, self.manifest)
        ]
        if outputs.parts is None:
            readers[0].sha256 = _published_sha256(outputs)
        for reader in readers:
            reader.made_by = embedded_by(manifest)
        return readers

    def check_sha256(self, purpose: str, digest: Any) -> None:
        """Refuse a file read whole (``digest``: a ``hashlib`` object of what was read) that
        is not the one the manifest published (where it kept its sha256)."""
        expected = self.sha256.get(purpose)
        if expected is not None and digest.hexdigest() != expected:
            raise Republished(
                f"{self.file(purpose)} is not the {purpose} file that {self.manifest} was "
                "published with (another sha256): it was being republished as it was read, "
                f"or was changed since{REWRITE}"
            )

    @abc.abstractmethod
    def chunks(self, dimension: int | None) -> Iterator[Chunk]:
        """Every vector with its row, in output order, at most :data:`CHUNK_ROWS` at a time.

        Each vector must have ``dimension`` values (None: as many as the first one has),
        and each row is checked as it is read; a problem is a ``UserError`` naming the
        file and the line or row.
        """

    def errors(self) -> Iterator[dict[str, Any]]:
        """The records of documents set aside, in order (the errors file's JSON lines)."""
        path = self.file("errors")
        with self.open("errors") as handle:
            for where, line in record_lines(path, handle):
                yield json_object(line, where)

    def check_count(self, purpose: str, count: int) -> None:
        """Refuse a file that holds another number of records than the manifest counted
        when it was published (``outputs.lines`` for a file of lines, ``outputs.rows`` for
        one of rows; not checked where it has none)."""
        outputs = self.outputs
        name = outputs.files.get(purpose) if outputs.parts is None else None
        counted = {**(outputs.rows or {}), **(outputs.lines or {})}
        expected = counted.get(name) if name is not None else None
        if expected is not None and expected != count:
            raise Republished(
                f"{self.file(purpose)} holds {count:,} records, but {self.manifest} counted "
                f"{expected:,} when it was published: it was cut short or added to since"
                f"{REWRITE}"
            )

    def nearest(
        self, vector: np.ndarray[Any, Any], k: int, *, exact: bool = False, where: str | None = None
    ) -> Nearest | None:
        """The ``k`` rows nearest (cosine) to the unit ``vector`` by the output's own engine,
        or None where it has none (the caller then scans :meth:`chunks`). A ``where`` the
        engine refuses is a :class:`FilterRefused`; a problem of the output a ``UserError``."""
        return None

    def file(self, purpose: str) -> Path:
        """The part's file of ``purpose``, or a ``UserError`` saying the manifest names none."""
        path = self.files.get(purpose)
        if path is None:
            raise UserError(f"{self.manifest} names no {purpose} file{REWRITE}")
        return path

    def open(self, purpose: str) -> BinaryIO:
        """The part's file of ``purpose`` opened for reading, if it is a regular file.

        One that does not exist is :class:`Republished`: a republish deletes the parts of
        the run it replaced (and a whole output replaced by parts) once its manifest is in
        place, so a reader that read the manifest just before reads again; one still
        missing then is reported as missing."""
        path = self.file(purpose)
        try:
            return open_output(path, purpose, self.manifest)
        except UserError as err:
            if not os.path.lexists(path):
                raise Republished(str(err)) from None
            raise


class LineReader(OutputReader):
    """An output whose :attr:`primary` file holds one record a line (JSON Lines, TSV, ...):
    each line bounded, parsed by :meth:`parse`, its vector checked, read in chunks."""

    primary: ClassVar[str] = "records"

    @abc.abstractmethod
    def parse(self, line: bytes, where: str) -> tuple[StoredRow | dict[str, Any], Any]:
        """One line (``where``: ``file:line``, for messages) as its row and its vector's
        values as stored; a problem is a ``UserError`` at ``where``. The row may be a
        checked :class:`StoredRow`, or a record in the JSON sinks' shape (without its
        vector), checked here: in bulk where it is plain, else by
        :func:`~seamline.contracts.stored.row_of`."""

    def chunks(self, dimension: int | None) -> Iterator[Chunk]:
        reader = self.current()
        assert isinstance(reader, LineReader)
        return reader._chunks(dimension)

    def _chunks(self, dimension: int | None) -> Iterator[Chunk]:
        """Every line's row checked as it is read (its vector's length and values a chunk at
        a time, in the order read: the first problem in the file is the one reported)."""
        path = self.file(self.primary)
        count = 0
        held = HeldLines(dimension)
        with self.open(self.primary) as handle:
            read = Digesting(handle)
            try:
                for where, line in record_lines(path, cast(BinaryIO, read)):
                    row, values = self.parse(line, where)
                    if not isinstance(row, StoredRow) and not plain_record(row):
                        row = row_of(row, where)
                    held.add(row, flat_vector(values, where), where)
                    count += 1
                    if len(held.rows) == CHUNK_ROWS:
                        yield held.chunk()
            except UserError:
                held.check()  # a vector of an earlier line is the first problem, if any
                raise
        last = held.chunk()
        self.check_count(self.primary, count)
        self.check_sha256(self.primary, read.sha256)
        if last[1]:
            yield last


class HeldLines:
    """The rows and vectors of a chunk of lines, their vectors checked together: a vector's
    length and values checked line by line cost more than its parse."""

    def __init__(self, dimension: int | None) -> None:
        self.dimension = dimension
        self.rows: list[StoredRow | dict[str, Any]] = []
        self.vectors: list[np.ndarray[Any, Any]] = []
        self.wheres: list[str] = []

    def add(
        self, row: StoredRow | dict[str, Any], vector: np.ndarray[Any, Any], where: str
    ) -> None:
        self.rows.append(row)
        self.vectors.append(vector)
        self.wheres.append(where)

    def check(self) -> np.ndarray[Any, Any]:
        """The held vectors as a matrix, or the ``UserError`` of the first that has not
        ``dimension`` finite values (the first one's length where none is given)."""
        vectors = self.vectors
        if not vectors:
            return np.zeros((0, self.dimension or 0), np.float32)
        dimension = len(vectors[0]) if self.dimension is None else self.dimension
        if any(len(vector) != dimension for vector in vectors):
            for vector, where in zip(vectors, self.wheres, strict=True):
                check_vectors(vector[None, :], dimension, where)
        matrix = np.stack(vectors)
        finite = np.isfinite(matrix).all(axis=1)
        if not finite.all():
            first = int(np.argmin(finite))
            check_vectors(matrix[first : first + 1], dimension, self.wheres[first])
        self.dimension = dimension
        return matrix

    def chunk(self) -> Chunk:
        """The held lines, checked, as a chunk; none are held after."""
        matrix = self.check()
        rows = record_rows(self.rows, self.wheres)
        self.rows, self.vectors, self.wheres = [], [], []
        return matrix, rows


def current_readers(readers: Sequence[OutputReader]) -> list[OutputReader]:
    """The readers of the output ``readers`` read (as :func:`published` or an index opened
    them), as its manifest describes it now: the parts a republish named instead.

    A whole output's reader reads its manifest again itself (:meth:`OutputReader.current`),
    but the parts of a run split into shards are listed by the manifest: readers held since
    an earlier publish read the files of parts that the next publish deleted, and every
    search of an index held open failed. Call it inside :func:`reread`'s ``read``.
    """
    return readers[0].republished() if readers else []


def in_chunks(rows: Iterable[tuple[StoredRow, np.ndarray[Any, Any]]]) -> Iterator[Chunk]:
    """``(row, vector)`` pairs, as a reader of lines reads them, in chunks of at most
    :data:`CHUNK_ROWS` (what :meth:`OutputReader.chunks` yields)."""
    held: list[tuple[StoredRow, np.ndarray[Any, Any]]] = []
    for pair in rows:
        held.append(pair)
        if len(held) == CHUNK_ROWS:
            yield np.stack([vector for _, vector in held]), [row for row, _ in held]
            held = []
    if held:
        yield np.stack([vector for _, vector in held]), [row for row, _ in held]


SinkLookup = Callable[[str], type[Sink[Any]]]
"""A sink's registered name -> its class (``seamline search`` asks the registry)."""


OutputPath = str | os.PathLike[str]
"""An output's path as a caller gives it: a ``Path``, a ``str``, any ``os.PathLike``."""


def output_path(output: object, function: str) -> Path:
    """``output`` as a ``Path``; a ``TypeError`` naming ``function`` and the fix for anything
    else. ``read_records("out/emb.jsonl", JsonlSink)`` said ``AttributeError: 'str' object
    has no attribute 'name'``: a path is given as a ``str`` as often as a ``Path``."""
    if isinstance(output, Path):
        return output
    if isinstance(output, str | os.PathLike):
        path = os.fspath(output)
        if isinstance(path, str):
            return Path(path)
    raise TypeError(
        f"{function}() takes the output's path as a str or a pathlib.Path (the sink's "
        f"path: 'out/emb.jsonl'), not a {type(output).__name__}"
    )


def published(output: OutputPath, sinks: type[Sink[Any]] | SinkLookup) -> list[OutputReader] | None:
    """A reader of each published part of ``output`` (its primary file or its manifest), or
    None while nothing is published there.

    ``output``: a ``Path`` or a ``str``. ``sinks`` is the sink class whose reader reads it,
    or a lookup that finds the class by the name the manifest's ``outputs.sink`` gives.
    """
    path = manifest_path(output_path(output, "published"))
    try:
        manifest = load_manifest(path)
    except FileNotFoundError:
        return None
    outputs = manifest.outputs or Outputs()
    sink: type[Sink[Any]] = sinks if isinstance(sinks, type) else sinks(outputs.sink)
    reader = sink.reader
    if reader is None:
        raise UserError(
            f"{path}: the {outputs.sink or 'unnamed'} sink that wrote it says no way to read "
            "it back (it names no reader)"
        )
    parts = output_files(outputs, path)
    if outputs.parts is None:  # a whole output: published once its primary file is out
        primary = parts[0].get(reader.primary)
        if primary is None or not primary.exists():
            return None
    return [reader(files, path, outputs) for files in parts]


def read_records(
    output: OutputPath, sinks: type[Sink[Any]] | SinkLookup
) -> list[OutputRecord] | None:
    """Every published record of ``output`` (a ``Path`` or a ``str``), part by part; None
    while nothing is published."""
    readers = published(output_path(output, "read_records"), sinks)
    if readers is None:
        return None

    def read() -> list[OutputRecord]:
        records = []
        for reader in current_readers(readers):
            for vectors, rows in reader.chunks(None):
                records += [
                    OutputRecord(row.id, row.window, row.span, vector, row.metadata, row.text)
                    for vector, row in zip(vectors, rows, strict=True)
                ]
        return records

    return reread(read)


def read_errors(
    output: OutputPath, sinks: type[Sink[Any]] | SinkLookup
) -> list[dict[str, Any]] | None:
    """Every published record of a document set aside, part by part; None if unpublished."""
    readers = published(output_path(output, "read_errors"), sinks)
    if readers is None:
        return None
    return [error for reader in readers for error in reader.errors()]
