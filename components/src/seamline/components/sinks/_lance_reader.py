"""Reading a ``lancedb`` output back: search through its vector index, or every row.

The lancedb sink builds its index with the cosine distance and records its search
settings (``nprobes``, ``refine_factor``) in the manifest's ``outputs.index``; they
apply in :meth:`LanceReader.nearest`. ``exact`` bypasses the index: LanceDB then
computes the distance to every row (still with the cosine distance, as the index
does). ``where`` is a SQL filter LanceDB applies before the nearest neighbours are
chosen, so ``k`` rows that match come back when there are ``k``; it is given as one
whole expression (:mod:`._lance_filter`), never partly applied. The table is opened
only if the manifest's folder holds it as a folder of regular files
(:func:`~seamline.contracts.manifest.output_folder`), and every row is checked as it
is read, as every reader's are.

**The version the manifest was published with.** A LanceDB table commits a run's rows
(and its indexes) before the sink renames the manifest into place, so the newest
version of the table can be a republishing run's while the manifest, which says what
model made the vectors and which search embeds a query with, is still the last one's:
a search in that window scored another model's vectors with the old model's query,
silently. Each read therefore reads the manifest again (:meth:`OutputReader.current`)
and the table *at* the version it records (``outputs.table_version``), and says what
made those rows (:attr:`Nearest.made_by`) for the searcher to compare with its query
model's. A manifest from before the version was recorded: the newest version, as
before. A version no longer in the table (its old versions cleaned up) is refused.

**A run that published no table.** A run that wrote no rows where there was no table
creates none: its sink publishes an empty folder and ``outputs.table_version: 0`` (the
version before a table's first), read as no rows, as the other sinks' empty files are.
Only as the sink wrote it: a folder that holds anything then is refused (a newer run
publishing into it, or a table changed since), so the marker cannot make a real table
look empty, and a folder deleted since is missing, as a deleted table is.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np

from seamline.components.sinks._columns import EMBEDDING, METADATA, stored_chunk
from seamline.components.sinks._lance_filter import one_expression
from seamline.contracts import UserError
from seamline.contracts.manifest import REWRITE, output_folder, shown_index_failure
from seamline.contracts.readback import (
    CHUNK_ROWS,
    Chunk,
    FilterRefused,
    Nearest,
    OutputReader,
    Republished,
    cosines,
)
from seamline.contracts.stored import first_line

if TYPE_CHECKING:
    from lancedb.query import LanceVectorQueryBuilder
    from lancedb.table import Table

COLUMNS = ["id", "window_index", "span_start", "span_end", "text", "metadata"]


class LanceReader(OutputReader):
    """The table the manifest names, searched by LanceDB itself."""

    primary: ClassVar[str] = "table"
    filters: ClassVar[bool] = True

    def table_path(self) -> Path:
        """The table the manifest names: a folder in the manifest's folder, of regular files."""
        return output_folder(self.file("table"), "table", self.manifest)

    def _no_table(self) -> bool:
        """Whether the run that published the manifest created no table (it wrote no rows
        where there was none: ``outputs.table_version: 0``), its folder still as the sink
        left it, empty. Search answered "does not exist" for it, as for a table deleted."""
        if self.outputs.table_version != 0:
            return False
        path = self.table_path()
        if any(path.iterdir()):
            raise Republished(
                f"{path} holds files, but {self.manifest} says the run that published it "
                "wrote no rows and created no table (outputs.table_version: 0): a run is "
                "publishing into it now (search again once that is done), or it was changed "
                "since (run the pipeline again to write the output anew)"
            )
        return True

    def _table(self) -> tuple[Path, Table]:
        """The table, at the version the manifest this reader was made from records."""
        import lancedb

        path = self.table_path()
        try:
            table = lancedb.connect(str(path.parent)).open_table(path.stem)
            table.schema  # noqa: B018 - reads the table's metadata: a broken one fails here
        except (ValueError, RuntimeError, OSError) as err:
            raise UserError(
                f"{path}: not a LanceDB table as the lancedb sink writes it ({first_line(err)})"
                f"{REWRITE}"
            ) from None
        version = self.outputs.table_version
        if version is not None and table.version != version:
            newest = table.version
            try:
                table.checkout(version)
            except (ValueError, RuntimeError, OSError):
                raise UserError(
                    f"{path}: {self.manifest} was published with version {version:,} of the "
                    f"table (outputs.table_version), which the table no longer has (its newest "
                    f"is {newest:,}): its old versions were cleaned up, or it was rewritten "
                    "since. Run the pipeline that writes it again to publish it anew"
                ) from None
        return path, table

    def _current(self) -> LanceReader:
        """This output as its manifest describes it now (the version to read, the model)."""
        reader = self.current()
        assert isinstance(reader, LanceReader)
        return reader

    def chunks(self, dimension: int | None) -> Iterator[Chunk]:
        reader = self._current()
        if reader._no_table():
            return
        path, table = reader._table()
        seen = 0
        for batch in table.search().limit(None).to_batches(CHUNK_ROWS):
            vectors, rows = stored_chunk(batch.to_pydict(), f"{path}: row", seen, dimension)
            seen += len(rows)
            if rows:
                dimension = vectors.shape[1]
                yield vectors, rows

    def nearest(
        self, vector: np.ndarray[Any, Any], k: int, *, exact: bool = False, where: str | None = None
    ) -> Nearest:
        """The ``k`` rows of the table nearest to the unit ``vector``, at the version its
        manifest names now (:attr:`Nearest.made_by`: that manifest's model)."""
        reader = self._current()
        if reader._no_table():  # no rows to find (a filter that cannot pair is still refused)
            filtered = "" if not where else f", where {where}"
            if where is not None:
                one_expression(where)
            return Nearest([], f"exact: every one of 0 rows{filtered}", made_by=reader.made_by)
        path, table = reader._table()
        columns = [name for name in COLUMNS if name in table.schema.names]
        searched = cast(
            "LanceVectorQueryBuilder", table.search(vector, vector_column_name=EMBEDDING)
        )
        query = searched.distance_type("cosine").select([*columns, EMBEDDING, "_distance"]).limit(k)
        if where is not None:  # whole: LanceDB dropped what followed the first expression
            # unread. "" too, which LanceDB then refuses: read as no filter, it gave every row.
            query = query.where(one_expression(where), prefilter=True)
        vector_indexes = [i for i in table.list_indices() if EMBEDDING in i.columns]
        if exact or not vector_indexes:
            query = query.bypass_vector_index()
            how = f"exact: every one of {table.count_rows():,} rows"
            failure = None if exact else shown_index_failure(reader.outputs.index_failure)
            if failure is not None:  # said only by the run, which exited 2 with it
                how += f"; no vector index, as the run that published the table said: {failure}"
        else:
            query, how = reader._through(query, vector_indexes[0])
        try:  # planning reads no data: a filter it refuses is the search's fault
            plan = query.explain_plan()
        except (ValueError, RuntimeError, OSError) as err:
            if where is not None:
                raise FilterRefused(
                    f"where {where!r} is not a filter LanceDB can apply to {path}: "
                    f"{str(err).rstrip('.').replace(chr(10), ' ')}. The "  # one line
                    f"columns: {', '.join(_column_names(table.schema))}"
                ) from err
            raise _unsearchable(path, err) from None
        except Exception as err:  # LanceDB's RustPanic: it failed inside, on this filter?
            refusal = _panic_refusal(err, where, path, table, vector)
            if refusal is None:
                raise
            raise refusal from None
        try:  # reading the rows: a problem here is the table's (a data file gone, say)
            found = query.to_arrow().to_pydict()
        except (ValueError, RuntimeError, OSError) as err:
            if where is not None and _reads_without_filter(table, vector):
                raise _filter_failed(where, err) from None  # the filter's, not the table's
            raise _unsearchable(path, err) from None
        except Exception as err:
            refusal = _panic_refusal(err, where, path, table, vector)
            if refusal is None:
                raise
            raise refusal from None
        found.pop("_distance")  # selected only because LanceDB warns on stderr otherwise
        matrix, rows = stored_chunk(found, f"{path}: row", 0, len(vector))
        if where:
            how += f", where {where}"
        # Scored from the rows' own vectors, not LanceDB's distances: through an IVF index
        # those are squared L2 distances of quantised vectors (2 - 2 cos, less exact), so
        # 1 - distance printed 2 cos - 1 (0.16 for a cosine of 0.58). Ordered by the exact
        # score, as every other reader orders its rows.
        scores = cosines(matrix, vector[None, :])[:, 0]
        ranked = sorted(zip(scores.tolist(), rows, strict=True), key=lambda hit: -hit[0])
        return Nearest(ranked, how, plan, made_by=reader.made_by)

    def _through(self, query: Any, vector_index: Any) -> tuple[Any, str]:
        """``query`` through the table's vector index, with the settings the sink recorded."""
        settings = self.outputs.index
        # An IVF-PQ index trains on 256 rows or more: below, it holds none, and LanceDB
        # compares the rows it does not hold exactly. Say so.
        indexed, unindexed = vector_index.num_indexed_rows, vector_index.num_unindexed_rows
        used = [f"{vector_index.index_type}: {indexed:,} rows indexed"]
        if unindexed:
            used.append(f"{unindexed:,} compared exactly")
        if settings is not None and settings.nprobes:
            query = query.nprobes(settings.nprobes)
            used.append(f"nprobes {settings.nprobes}")
        if settings is not None and settings.refine_factor:
            query = query.refine_factor(settings.refine_factor)
            used.append(f"refine_factor {settings.refine_factor}")
        return query, f"vector index {vector_index.name} ({', '.join(used)})"


def _reads_without_filter(table: Table, vector: np.ndarray[Any, Any]) -> bool:
    """Whether the table answers the same search without its filter (one row).

    A filter that plans but fails on the rows (``1/0 = 1``, ``CAST(text AS INT) = 1``)
    was told "not as seamline wrote it: run the pipeline again", a 503 from a server:
    the table is at fault only if it cannot be read without the filter either.
    """
    return _error_without_filter(table, vector) is None


def _error_without_filter(table: Table, vector: np.ndarray[Any, Any]) -> Exception | None:
    """What the same search without its filter (one row) raises; None when it answers."""
    try:
        table.search(vector, vector_column_name=EMBEDDING).select(["id", "_distance"]).limit(
            1
        ).to_arrow()
    except Exception as err:  # LanceDB's RustPanic too
        return err
    return None


def _panic_refusal(
    err: Exception, where: str | None, path: Path, table: Table, vector: np.ndarray[Any, Any]
) -> UserError | None:
    """The refusal of LanceDB's panic (``RustPanic``, an ``Exception``) on a filtered search;
    None for any other failure, which stays one.

    Forms of a filter LanceDB's planner has no code for (``N'x'``, ``B'01'``, ``R'x'``
    strings; placeholders, refused before they reach it) panicked: a traceback and exit 1
    from ``seamline search``, a 500 from a server. When the table answers without the
    filter, the filter is refused; when it fails without the filter too (a data file
    gone), the table is at fault, and its own error is the answer, as a search without
    the filter gives it: the panic's traceback was.
    """
    if where is None or type(err).__name__ != "RustPanic":
        return None
    own = _error_without_filter(table, vector)
    if own is None:
        return _filter_panicked(where, path, err)
    return _unsearchable(path, own)


def _filter_panicked(where: str, path: Path, err: Exception) -> FilterRefused:
    return FilterRefused(
        f"where {where!r} is not a filter LanceDB can apply to {path}: LanceDB could not run "
        f"this filter (it failed inside: {first_line(err)}), though it searches the output "
        "without it. Change the filter: strings prefixed N'…', B'…' or R'…' are among what "
        "it cannot run; write a string in single quotes (id = 'd1')"
    )


_QUOTED = re.compile(r"'[^']*'")


def _filter_failed(where: str, err: BaseException) -> FilterRefused:
    """The refusal of a filter that failed on the rows, saying LanceDB's reason: without
    where a library's source lies, nor a row's text it quotes (``Cannot cast string
    '...'``): only the filter's own literals are kept."""
    reason = _SOURCE_PLACE.sub("", str(err).replace(chr(10), " ")).strip().rstrip(".")
    reason = _QUOTED.sub(lambda quoted: quoted[0] if quoted[0] in where else "'…'", reason)
    reason = reason if len(reason) <= 300 else reason[:299] + "…"
    return FilterRefused(
        f"where {where!r} failed on the rows: {reason}. Change the filter "
        "(the output itself can be searched without it)"
    )


_SOURCE_PLACE = re.compile(r",? */\S+\.rs:\d+(?::\d+)?")
"""Where the Rust library raised its error (``, /root/.cargo/.../local.rs:12:5``)."""


def _unsearchable(path: Path, err: BaseException) -> UserError:
    return UserError(f"{path}: LanceDB could not search it ({first_line(err)}){REWRITE}")


def _column_names(schema: Any) -> list[str]:
    """Top-level columns, and ``metadata.<key>`` for each metadata field."""
    names = []
    for field in schema:
        if field.name == METADATA:
            names += [f"{METADATA}.{child.name}" for child in field.type]
        elif field.name != EMBEDDING:
            names.append(field.name)
    return names
