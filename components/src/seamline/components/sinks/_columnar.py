"""What the two columnar sinks (``parquet``, ``lancedb``) share beyond the sink kit's lifecycle.

Both write rows of one layout (:mod:`._columns`), fixed by the first records, a
resumed checkpoint or an existing table; both hold records in memory as Arrow
batches until a commit (or a full buffer) writes them to a store of their own in a
hidden folder beside the output (the kit's ``store``, ``.<name>.partial.tmp``: the
Parquet parts, the LanceDB staging database), which a byte count cannot cut back,
so their checkpoints record that store's state; and both publish a staged run by
copying its parts into one output (``keeps_parts = False``), the parts' errors files
merged into one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar, TypeVar

from pydantic import Field

from seamline.components.sinks._columns import RowLayout, schema_from_text, schema_to_text
from seamline.contracts import OutputRecord, UserError
from seamline.contracts.sink_kit import OutputConfig, PublishingSink

if TYPE_CHECKING:
    from collections.abc import Sequence

    import pyarrow as pa


class ColumnarConfig(OutputConfig):
    """The fields of the columnar sinks' ``with:`` blocks that decide their columns (with
    ``text``, every sink's: a ``text`` column or none)."""

    metadata_columns: list[str] | None = Field(
        default=None,
        description="Metadata keys stored as fields of the 'metadata' column. Default: the "
        "keys of the first records written.",
    )


ConfigT = TypeVar("ConfigT", bound=ColumnarConfig)


class ColumnarSink(PublishingSink[ConfigT]):
    """A sink of rows of the columnar layout, held in memory until they reach its store."""

    appends_primary: ClassVar[bool] = False
    keeps_parts: ClassVar[bool] = False

    def __init__(self, config: ConfigT) -> None:
        super().__init__(config)
        self._layout = RowLayout(self.name, text=config.text, metadata_keys=config.metadata_columns)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0

    @property
    def _where(self) -> str:
        return repr(str(self.destination))

    def hold(self, records: Sequence[OutputRecord]) -> int:
        """Convert ``records`` to a batch of the layout and hold it; the rows now held."""
        batch = self._layout.batch(records)
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        return self._pending_rows

    def take_held(self, rows: int | None = None) -> pa.Table | None:
        """The first ``rows`` rows held (all if None), as one table of the layout, no longer
        held; None when none are held."""
        if not self._pending_rows:
            return None
        import pyarrow as pa

        table = pa.Table.from_batches(self._pending, self._layout.schema)
        taken = self._pending_rows if rows is None else rows
        rest = table.slice(taken)
        self._pending = rest.to_batches() if rest.num_rows else []
        self._pending_rows = rest.num_rows
        return table.slice(0, taken)

    def columns(self) -> str | None:
        """The layout's schema as a checkpoint records it (None before the first row)."""
        schema = self._layout.schema
        return None if schema is None else schema_to_text(schema)

    def adopt_columns(self, columns: str) -> None:
        """A resume: write rows of the columns a checkpoint recorded, which must be those the
        config asks for."""
        self._layout.adopt(schema_from_text(columns), f"the checkpoint of {self._where}")
        self.check_same_columns("cannot resume: the rows committed for")

    def check_same_columns(self, doing: str) -> None:
        """The columns adopted (a table's, a checkpoint's) must be those the config asks for."""
        layout, config = self._layout, self.config
        wanted = config.metadata_columns
        if layout.text != config.text or (wanted is not None and wanted != layout.metadata_keys):
            raise UserError(
                f"{doing} {self._where}: the rows have the columns text={layout.text}, "
                f"metadata={layout.metadata_keys}, but this sink is set to text={config.text}, "
                f"metadata_columns={wanted}; use the settings they were written with (resume "
                "with the interrupted run's), or start over (a run without resuming, or mode: "
                "overwrite)"
            )

    def reset(self) -> None:
        self.drop_store()
