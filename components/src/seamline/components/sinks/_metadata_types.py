"""The Arrow type of a metadata key, worked out from its values in the first batch written.

A columnar output fixes its schema with its first batch (:mod:`._columns`), and a
record's metadata is plain Python values (the loader contract carries no Arrow type),
so each key's type is inferred from the values that batch holds. Inference sees only
those values, and two things it would infer are narrower than the key's values can be:

- a part of a value with nothing in it yet: a list that is empty in every record of the
  batch (``list<null>``), a struct field null in every record (``struct<b: null>``).
  Any value may come later, so such a part is text (``list<string>``), and a
  non-string value written to it is text (:func:`json_text`), as a whole key with no
  value in the first batch always was. A Parquet ``list<string>`` column whose first 99 rows were
  empty stopped the run at row 100, ``['urgent']`` not fitting ``list<null>``.
- a decimal: pyarrow infers the smallest precision that holds the first values
  (``decimal128(3, 2)`` for ``1.00``), and a later ``123456789012.34`` of the same
  Parquet ``decimal128(38, 2)`` column did not fit. The precision is widened to the
  largest of its width (38 digits, or 76 for decimal256); the scale is kept, as a
  column's values all share it.

What inference cannot know stays as it was: integers of the first batch that all fit
int64 make an int64 column, so a later uint64 value above int64's range stops the run
(the error says so, and what to do).
"""

from __future__ import annotations

import json
import numbers
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from seamline.contracts.json_safe import json_safe

if TYPE_CHECKING:
    import pyarrow as pa

_INT64, _UINT64 = np.iinfo(np.int64), np.iinfo(np.uint64)
_WIDEST = {128: 38, 256: 76}
"""The most digits a decimal of each bit width holds."""


def inferred_type(values: Sequence[Any]) -> pa.DataType:
    """The Arrow type of one metadata key, from its values in the first batch."""
    import pyarrow as pa

    present = [value for value in values if value is not None]
    if not present:
        return pa.string()
    if all(is_integer(value) for value in present):
        return integer_type(min(map(int, present)), max(map(int, present)))
    try:
        inferred = pa.array(present).type
    except (pa.ArrowInvalid, pa.ArrowTypeError, OverflowError):  # mixed types: keep them as text
        return pa.string()
    if pa.types.is_integer(inferred):
        return pa.int64()
    if pa.types.is_floating(inferred):
        return pa.float64()
    if pa.types.is_null(inferred) or _holds_empty_struct(inferred):
        return pa.string()
    return _widened(inferred)


def _widened(kind: pa.DataType) -> pa.DataType:
    """``kind`` with each part no value typed made text, and each decimal at full precision."""
    import pyarrow as pa

    if pa.types.is_null(kind):
        return pa.string()
    if pa.types.is_decimal(kind):
        widest = _WIDEST.get(kind.bit_width)
        if widest is None or not 0 <= kind.scale <= widest:
            return kind
        return (pa.decimal128 if kind.bit_width == 128 else pa.decimal256)(widest, kind.scale)
    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        return pa.struct([field.with_type(_widened(field.type)) for field in fields])
    if pa.types.is_list(kind):
        return pa.list_(_widened(kind.value_type))
    if pa.types.is_large_list(kind):
        return pa.large_list(_widened(kind.value_type))
    if pa.types.is_fixed_size_list(kind):
        return pa.list_(_widened(kind.value_type), kind.list_size)
    return kind


def _holds_empty_struct(kind: pa.DataType) -> bool:
    """Whether ``kind`` is or nests a struct of no fields (a JSON ``{}``): Parquet cannot
    write one and Lance refuses it, at the end of the run, so such a key is kept as text."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        fields = [kind.field(i) for i in range(kind.num_fields)]
        return not fields or any(_holds_empty_struct(field.type) for field in fields)
    if _is_list(kind):
        return _holds_empty_struct(kind.value_type)
    if pa.types.is_map(kind):
        return _holds_empty_struct(kind.key_type) or _holds_empty_struct(kind.item_type)
    return False


def is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool | np.bool_)


def integer_type(low: int, high: int) -> pa.DataType:
    """The narrowest of int64, uint64 and (for integers neither holds) string that fits."""
    import pyarrow as pa

    if _INT64.min <= low and high <= _INT64.max:
        return pa.int64()
    if low >= 0 and high <= _UINT64.max:
        return pa.uint64()
    return pa.string()


def is_text(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(kind) or pa.types.is_large_string(kind))


def has_text(kind: pa.DataType) -> bool:
    """Whether ``kind`` is, or nests in a struct or a list, a string."""
    import pyarrow as pa

    if pa.types.is_struct(kind):
        return any(has_text(kind.field(i).type) for i in range(kind.num_fields))
    if _is_list(kind):
        return has_text(kind.value_type)
    return is_text(kind)


def with_texts(value: Any, kind: pa.DataType) -> Any:
    """``value`` with each non-string value of a string part of ``kind`` as its JSON text."""
    import pyarrow as pa

    if value is None:
        return None
    if is_text(kind):
        return value if isinstance(value, str) else json_text(value)
    if pa.types.is_struct(kind) and isinstance(value, dict):
        fields = {kind.field(i).name: kind.field(i).type for i in range(kind.num_fields)}
        return {
            key: with_texts(item, fields[key]) if key in fields else item
            for key, item in value.items()
        }
    if _is_list(kind) and isinstance(value, list | tuple):
        return [with_texts(item, kind.value_type) for item in value]
    return value


def json_text(value: Any) -> str | None:
    """A non-string metadata value for a string column or part: the text the jsonl sink
    writes for it, so both outputs of one input agree.

    The value goes through :func:`~seamline.contracts.json_safe.json_safe` first, as
    every JSON line does: a NaN or infinity is null (``json.dumps`` wrote ``NaN``, not
    JSON), bytes their base64 text. A lone text that makes (bytes, a date, a path) is
    stored bare, as a string column holds a string: quoted, ``"AP8="`` did not decode as
    base64. A number, a boolean, a list or an object is its JSON text (``[1, 2]``).
    """
    safe = json_safe(value)
    if safe is None or isinstance(safe, str):
        return safe
    if isinstance(safe, bool | int | float | list | dict):
        return json.dumps(safe, ensure_ascii=False, sort_keys=True, default=_plain_text)
    return _plain_text(safe)


def _plain_text(value: Any) -> str:
    """A value JSON has no type for (a date, a decimal, a path): its text, as the jsonl
    sink's writer falls back to."""
    return str(value)


def _is_list(kind: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(
        pa.types.is_list(kind) or pa.types.is_large_list(kind) or pa.types.is_fixed_size_list(kind)
    )
