"""Stand-ins for pandas' and polars' tables (and pandas' ``NA``): neither library is a
dependency of seamline (nor installed for its tests), and seamline recognises a table
by its ``ndim``/``shape`` and ``columns`` alone, and ``NA`` by its type's name, as
these give them.
"""

from __future__ import annotations

from collections.abc import Iterator


class DataFrame:
    """As a pandas DataFrame looks to a caller of ``list()``: its column labels."""

    __module__ = "pandas.core.frame"

    def __init__(self, columns: dict[str, list[str]]) -> None:
        self.data = columns
        self.columns = list(columns)
        self.ndim = 2
        self.shape = (len(next(iter(columns.values()), [])), len(columns))

    def __iter__(self) -> Iterator[str]:
        return iter(self.columns)

    def __len__(self) -> int:
        return self.shape[0]


class PolarsFrame:
    """As a polars DataFrame looks: a shape and columns, no ``ndim``; it iterates columns."""

    __module__ = "polars.dataframe.frame"

    def __init__(self, columns: dict[str, list[str]]) -> None:
        self.data = columns
        self.columns = list(columns)
        self.shape = (len(next(iter(columns.values()), [])), len(columns))

    def __iter__(self) -> Iterator[list[str]]:
        return iter(self.data.values())


PolarsFrame.__name__ = PolarsFrame.__qualname__ = "DataFrame"  # as polars names it


class NAType:
    """As pandas' ``pd.NA`` is typed: what a column of dtype ``string`` holds for a gap."""

    __module__ = "pandas._libs.missing"

    def __repr__(self) -> str:
        return "<NA>"


NA = NAType()
