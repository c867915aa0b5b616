"""The indexes of a LanceDB table the ``lancedb`` sink builds: their settings, and building them.

The vector index is built with the cosine distance, the one ``seamline search``
ranks by (an exact search bypassing the index uses it too, so the two agree on
what "nearest" means). Its query-time settings (``nprobes``, ``refine_factor``)
belong to the same block because they decide the index's recall as much as its
build settings do; the sink records them in the manifest for search to apply.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from pydantic import Field, model_validator

from seamline.components.sinks._columns import EMBEDDING, TEXT
from seamline.contracts import ComponentConfig, UserError
from seamline.contracts.logs import get_logger

if TYPE_CHECKING:
    from lancedb.table import Table


class VectorIndexConfig(ComponentConfig):
    """``index:`` of the ``lancedb`` sink: the approximate nearest-neighbour index to build."""

    type: Literal["ivf_pq", "hnsw"] = Field(
        default="ivf_pq",
        description="ivf_pq: vectors clustered into partitions and compressed by product "
        "quantisation (small, fast to build; trains on 256 rows or more: a smaller table gets "
        "no vector index, and search compares its rows exactly); hnsw: a graph over "
        "scalar-quantised vectors in each partition (larger; more recall without re-ranking).",
    )
    num_partitions: int | None = Field(
        default=None,
        ge=1,
        description="IVF partitions (clusters). Default: LanceDB's, from the number of rows.",
    )
    num_sub_vectors: int | None = Field(
        default=None,
        ge=1,
        description="ivf_pq only: sub-vectors per vector; must divide the dimension. Default: "
        "LanceDB's (24 for 384-wide vectors).",
    )
    m: int | None = Field(
        default=None, ge=2, description="hnsw only: neighbours per node. Default: 20."
    )
    ef_construction: int | None = Field(
        default=None,
        ge=1,
        description="hnsw only: candidates considered while building. Default: 300.",
    )
    nprobes: int | None = Field(
        default=None,
        ge=1,
        description="Search: partitions probed per query (recorded in the manifest; seamline "
        "search uses it). Default: LanceDB's (20).",
    )
    refine_factor: int | None = Field(
        default=None,
        ge=1,
        description="Search: fetch refine_factor x k candidates from the index and re-rank "
        "them by their exact distance (recorded in the manifest; seamline search uses it). "
        "Default: no re-ranking.",
    )

    @model_validator(mode="after")
    def _fields_of_the_type(self) -> VectorIndexConfig:
        wrong = ["m", "ef_construction"] if self.type == "ivf_pq" else ["num_sub_vectors"]
        given = [name for name in wrong if getattr(self, name) is not None]
        if given:
            raise ValueError(
                f"{', '.join(given)} {'does' if len(given) == 1 else 'do'} not apply to an "
                f"index of type {self.type!r}; remove {'it' if len(given) == 1 else 'them'} or "
                "change the type"
            )
        return self


log = get_logger("seamline.sink.lancedb")

INDEX_FAILURE = "index_failure"
"""The key of the manifest's ``outputs`` that says why the indexes of that publication were
not built (:func:`index_failure`'s message); absent when they were."""

IVF_PQ_TRAINING_ROWS = 256
"""Rows an IVF-PQ index needs to train its 8-bit product quantiser (256 centroids per
sub-vector). On a smaller table LanceDB builds an index that holds no row and compares
every row exactly anyway; the sink builds none, and search says it scans."""


def check_index_fits(index: VectorIndexConfig, dim: int) -> None:
    """Refuse, before any work, settings the vectors cannot be indexed with."""
    if index.num_sub_vectors and dim % index.num_sub_vectors:
        raise UserError(
            f"lancedb sink: index.num_sub_vectors {index.num_sub_vectors} does not divide the "
            f"vectors' {dim} dimensions; choose a divisor of {dim} (or leave it unset)"
        )


def build_indexes(table: Table, index: VectorIndexConfig | None, *, full_text: bool) -> None:
    """The vector index (if configured and the table has rows) and the full-text index.

    Each replaces an index of its column, so it covers every row of the table,
    those of earlier runs too.
    """
    from lancedb.index import FTS, HnswSq, IvfPq

    rows = table.count_rows()
    if index is not None and index.type == "ivf_pq" and 0 < rows < IVF_PQ_TRAINING_ROWS:
        log.warning(
            "no vector index built",
            reason=f"an ivf_pq index trains on {IVF_PQ_TRAINING_ROWS} rows or more and the "
            f"table has {rows}; search compares every row exactly (as fast at this size)",
        )
        index = None
    if index is not None and rows:
        config: IvfPq | HnswSq
        if index.type == "ivf_pq":
            config = IvfPq(
                distance_type="cosine",
                num_partitions=index.num_partitions,
                num_sub_vectors=index.num_sub_vectors,
            )
        else:
            config = HnswSq(
                distance_type="cosine",
                num_partitions=index.num_partitions,
                m=20 if index.m is None else index.m,
                ef_construction=300 if index.ef_construction is None else index.ef_construction,
            )
        table.create_index(EMBEDDING, config=config, replace=True)
    if full_text and TEXT in table.schema.names:
        table.create_index(TEXT, config=FTS(), replace=True)


def indexed_version(
    table: Table, index: VectorIndexConfig | None, full_text: bool, where: str
) -> tuple[int, UserError | None]:
    """The indexes built over the table a run just published into (:func:`build_indexes`),
    and the version the table is then at: the one its manifest records (``outputs.
    table_version``), with why the indexes failed, if they did (``where``: the table, for
    the message).

    Called before the manifest is renamed into place: a reader reads the table at the
    version its manifest records, so until the new manifest is out it reads the last
    publication's rows (made by the model that manifest names, which search embeds its
    query with), and then this one's, indexed. The indexes were built after the manifest
    once, and a search that read the newest version in between was answered with the
    new run's rows scored by the old manifest's model. A failed index leaves the
    version with the rows: the publication stands, and a search compares every row.
    """
    failure = None
    try:
        build_indexes(table, index, full_text=full_text)
    except Exception as err:  # LanceDB's RustPanic too: else "nothing was published"
        failure = UserError(index_failure(where, err))
        failure.__cause__ = err
    return table.version, failure


_RUST_PLACES = re.compile(r",?\s*/\S*(?:\.cargo/registry|/rustc/)\S*")
"""LanceDB's errors end with the Rust source files they were raised in: no help to a user."""

_NO_SPACE = ("No space left on device", "os error 28")


def temporary_files(mode: str, index: VectorIndexConfig | None) -> str | None:
    """What a run of the sink has LanceDB write temporary files for (None: nothing).

    A merge into the table (``upsert`` and ``sync``, LanceDB's ``merge_insert``) spills
    through a temporary folder as building a vector index does; the full-text index and
    ``overwrite`` / ``append`` do not.
    """
    uses = [f"mode {mode}'s merge into the table"] if mode in ("upsert", "sync") else []
    if index is not None:
        uses.append("the vector index")
    return " and ".join(uses) or None


def lance_temporary_folder(environ: Mapping[str, str]) -> str:
    """The folder LanceDB (Rust's ``temp_dir``) writes temporary files in: ``$TMPDIR``,
    ``/tmp`` where it is unset, the working directory where it is empty."""
    given = environ.get("TMPDIR")
    return "/tmp" if given is None else given or "."


def check_temporary_folder(environ: Mapping[str, str], needs: str) -> None:
    """A ``UserError`` when the folder LanceDB writes its temporary files in (for
    ``needs``, :func:`temporary_files`) is not one this process can write to.

    LanceDB takes Rust's ``temp_dir``: ``$TMPDIR``, or ``/tmp`` where it is unset, with no
    fallback. With ``TMPDIR=/nonexistent``, or no TMPDIR and a read-only ``/tmp`` (a
    container's ``readOnlyRootFilesystem``), an upsert embedded every document and then
    failed to publish, and an index panicked once the rows were published, with the
    advice to run again, which failed the same way. Checked when the sink is built,
    before any work.
    """
    given = environ.get("TMPDIR")
    folder = "/tmp" if given is None else given
    path = lance_temporary_folder(environ)
    if os.path.isdir(path) and os.access(path, os.W_OK | os.X_OK):
        return
    what = "is not a folder" if os.path.exists(path) else "does not exist"
    if os.path.isdir(path):
        what = "is a folder this process may not write to"
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            what = "is on a read-only file system"
    where = (
        f"TMPDIR is not set, so LanceDB writes the temporary files of {needs} in '/tmp', "
        f"which {what}"
        if given is None
        else f"TMPDIR={folder!r} {what}; LanceDB writes the temporary files of {needs} there"
    )
    raise UserError(
        f"lancedb sink: {where}. Set TMPDIR to a folder this process can write to, with "
        "room (mkdir -p tmp && export TMPDIR=$PWD/tmp), and run again"
    )


def index_failure(where: str, err: BaseException) -> str:
    """What to tell a user whose index could not be built, the rows being published."""
    said = _RUST_PLACES.sub("", str(err)).strip() or type(err).__name__
    published = f"lancedb sink: the rows are published in {where}, but building its index failed"
    scans = "until then a search scans every row"
    if any(sign in said for sign in _NO_SPACE):
        temporary = lance_temporary_folder(os.environ)
        return (
            f"{published}: no space left on a device (LanceDB writes the index's temporary "
            f"files in {temporary!r} and the index beside the table): free space there, or set "
            f"TMPDIR to a folder with room, and run again; {scans}"
        )
    if type(err).__name__ == "RustPanic":  # LanceDB's own failure, not the settings'
        # Its reason is in the panic report Rust printed above: "Run again" alone was the
        # advice when the temporary folder was read-only, and the run failed the same way.
        temporary = lance_temporary_folder(os.environ)
        return (
            f"{published}: LanceDB failed inside ({said}; the panic report printed above says "
            f"why: a temporary folder it could not write, {temporary!r}, is one cause). Fix "
            f"that, then run again; {scans}"
        )
    return f"{published}: {said}. Fix the index settings and run again; {scans}"
