"""What a caller handed where texts go (``Embedder.encode``, ``find_each``), judged before
any of it is read: the checks that both places share, so that they say the same.

Tables and arrays are recognised by their shape, not by their type: pandas and polars
are not seamline's dependencies, and importing them to ask ``isinstance`` would cost a
second of import to every caller who has none.
"""

from __future__ import annotations

import math

__all__ = ["MISSING_FIX", "dimensions_problem", "missing_kind"]


def dimensions_problem(value: object, what: str, give: str) -> str | None:
    """Why ``value``, handed as ``what`` (``texts``, ``queries``), is not a sequence of one
    dimension, with what to ``give`` instead; None when it is one, or has no shape.

    Iterating a table yields its column labels (pandas) or its columns (polars): a
    DataFrame of three questions under ``"question"`` was searched as the one query
    "question", and embedded as one vector, without a word. An array of two dimensions
    yields rows, of none fails inside NumPy. So anything whose ``ndim`` (or ``shape``)
    says other than one dimension is refused, a table with the column to pass instead.
    """
    dims = _dimensions(value)
    if dims is None or dims == 1:
        return None
    described = _described(value)
    columns = getattr(value, "columns", None)
    if dims == 2 and columns is not None:  # a table: one column of it is a sequence of str
        return f"{what} is {described} ({dims} dimensions): pass one column, df[{_first(columns)}]"
    return f"{what} is {described} ({dims} dimensions): give {give}"


def _dimensions(value: object) -> int | None:
    """How many dimensions ``value`` says it has (``ndim``, else the length of ``shape``)."""
    ndim = getattr(value, "ndim", None)
    if isinstance(ndim, int):
        return ndim
    shape = getattr(value, "shape", None)  # a polars DataFrame has a shape, no ndim
    return len(shape) if isinstance(shape, tuple) else None


def _described(value: object) -> str:
    """``value``'s type with its library and article: "a NumPy array", "a pandas DataFrame"."""
    kind = type(value)
    library = kind.__module__.partition(".")[0]
    if library == "numpy":
        return "a NumPy array"
    named = f"{library} {kind.__name__}" if library and library != "builtins" else kind.__name__
    return f"{'an' if named[:1].lower() in 'aeio' else 'a'} {named}"


def _first(columns: object) -> str:
    """The first of a table's column labels as Python writes it (``'text'``), or a stand-in."""
    try:
        first = next(iter(columns), None)  # type: ignore[call-overload]
    except TypeError:
        first = None
    return "'<column>'" if first is None else repr(first)


def missing_kind(value: object) -> str | None:
    """How ``value`` stands for a missing text, or None when it does not: ``NaN`` (pandas'
    and NumPy's missing value in a column of objects), ``None``, pandas' ``<NA>`` or
    ``NaT``. Named, not typed: "texts[1] is a float" sent its reader looking for a number
    where a Series held a gap."""
    if value is None:
        return "None"
    if isinstance(value, float) or type(value).__module__ == "numpy":
        try:
            return "NaN" if math.isnan(value) else None  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
    if type(value).__module__.startswith("pandas") and type(value).__name__ in _PANDAS_MISSING:
        return _PANDAS_MISSING[type(value).__name__]
    return None


_PANDAS_MISSING = {"NAType": "<NA>", "NaTType": "NaT"}
"""pandas' missing values, by their type's name (pandas is not imported to compare)."""


MISSING_FIX = "leave it out (pandas: .dropna()) or give '' for it (.fillna(''))"
"""What to do about a missing text, said after :func:`missing_kind`'s name for it."""
