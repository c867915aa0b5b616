"""Make loader-supplied values writable as strict JSON in UTF-8.

A sink writes metadata and error records it did not make: whatever a loader put
there (and a loader copies ids and fields from files it does not control). Two
kinds of value that Python holds happily break a JSON Lines file:

* a float that is NaN or infinite: ``json.dumps`` writes the bare words ``NaN`` and
  ``Infinity``, which are not JSON, so a strict reader (``jq``, JavaScript, Go,
  DuckDB) refuses the whole file. They are written as ``null``.
* a string holding a lone surrogate (``"\\ud800"`` in a JSON input, or a file name
  that is not valid UTF-8, which Python decodes with ``surrogateescape``): it cannot
  be encoded as UTF-8, so writing it would end the run. Each lone surrogate is
  written as its escape text instead (``\\udcff``), so the value stays readable and
  tells the user what was there.
* bytes (a Parquet ``binary`` column's values): ``json.dumps`` knows no bytes, and its
  fallback wrote Python's ``repr`` (``"b'\\x00\\xff'"``), which no other tool decodes.
  They are written as their base64 text (``"AP8="``), as a schema is kept in a
  checkpoint.

Values that are already safe pass through unchanged, at the cost of one look at
each; metadata is small (a path, a line number), so this is negligible per record.
"""

from __future__ import annotations

import base64
import math
import os
from collections.abc import Mapping
from typing import Any


def safe_text(value: str) -> str:
    """``value``, with every lone surrogate replaced by its ``\\uXXXX`` escape text."""
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-8", "backslashreplace").decode("utf-8")
    return value


def name_text(name: str | os.PathLike[str]) -> str:
    """A file name (or path) as the UTF-8 text its bytes spell, the same under every locale.

    Python decodes a name it lists with the locale's encoding: under ``LC_ALL=de_DE``
    (ISO-8859-1) the UTF-8 name ``türkçe.txt`` became ``tÃ¼rkÃ§e.txt``, so a document id
    made from it changed with the locale, and a ``sync`` run deleted and re-added every
    non-ASCII file (an ``upsert`` doubled them). ``os.fsencode`` takes back the bytes
    exactly; a byte that is not UTF-8 stays a lone surrogate (``surrogateescape``), as
    under a UTF-8 locale, for :func:`safe_text` to write as its escape text.
    """
    return os.fsencode(name).decode("utf-8", "surrogateescape")


def bytes_text(value: bytes | bytearray) -> str:
    """Bytes as JSON holds them: their base64 text, which every language decodes."""
    return base64.b64encode(value).decode("ascii")


def json_safe(value: Any) -> Any:
    """``value`` as strict JSON can hold it: non-finite floats become None, texts UTF-8 safe,
    bytes their base64 text.

    Containers are rebuilt only when something in them changes; numpy values become
    their Python equivalents first (so a NumPy NaN is caught too).
    """
    if isinstance(value, str):
        return safe_text(value)
    if isinstance(value, bool) or value is None or isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, bytes | bytearray):
        return bytes_text(value)
    if isinstance(value, Mapping):
        return {safe_text(str(key)): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [json_safe(item) for item in value]
    tolist = getattr(value, "tolist", None)  # numpy arrays and scalars
    if callable(tolist):
        return json_safe(tolist())
    return value  # left to the writer's own fallback (paths, sets: their text)
