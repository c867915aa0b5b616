"""How seamline's conformance suite builds this package's components (``seamline check
loader:csv``, ``seamline check sink:tsv``).

The suite hands over texts in an order (``None`` standing for an unreadable item);
only this package knows how to write them as its input: one CSV row each, and a
row too short to reach the text column for an unreadable one. A sink's suite writes
records in a folder and reads back what is published there: through the manifest and
the sink's own reader, as ``seamline search`` does. Registered under the
``seamline.conformance`` entry point group; needs ``seamline-contracts[testing]``.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from seamline.contracts import OutputRecord
from seamline.contracts.readback import read_records
from seamline.contracts.sink_kit import OutputConfig
from seamline.contracts.testing import LoaderContract, SinkContract
from seamline_example_csv import CsvLoader, CsvLoaderConfig
from seamline_example_csv.tsv import TsvSink


class CsvConformance(LoaderContract):
    @pytest.fixture
    def make_loader(self) -> Callable[[Path, Sequence[str | None]], CsvLoader]:
        def make(directory: Path, texts: Sequence[str | None]) -> CsvLoader:
            directory.mkdir(parents=True, exist_ok=True)
            path = directory / "docs.csv"
            with path.open("w", encoding="utf-8", newline="") as handle:
                writer = csv.writer(handle)
                writer.writerow(["id", "text"])
                for position, text in enumerate(texts):
                    # A row with an id but no text column is this loader's error record.
                    writer.writerow(
                        [f"row-{position}"] if text is None else [f"row-{position}", text]
                    )
            return CsvLoader(CsvLoaderConfig(path=path))

        return make


class TsvConformance(SinkContract):
    @pytest.fixture
    def make_sink(self) -> Callable[[Path], TsvSink]:
        return lambda directory: TsvSink(OutputConfig(path=directory / "out.tsv"))

    @pytest.fixture
    def read_output(self) -> Callable[[Path], list[OutputRecord] | None]:
        return lambda directory: read_records(directory / "out.tsv", TsvSink)
