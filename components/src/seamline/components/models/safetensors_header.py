"""A safetensors file's header, read and checked as the safetensors library checks it.

``seamline validate`` builds the encoder, and building it reads the weights file's
header alone (kilobytes), never the weights: every tensor's dtype, shape and
``data_offsets``. What it says ok to, a run must load, and nothing may be built from
sizes the file does not hold. So the header is held to the safetensors format as the
library's own reader holds it when a run loads the file: each tensor's bytes exactly
its shape times its dtype's size, the tensors one after the other from the start of
the data and ending where the file does. A header whose shapes claim a model a
thousand times the file's size (a 4 kB file posing as a 262,144-wide model, whose
tuning then took 13 GB), an interrupted download, or a tensor whose dtype does not
match its bytes is refused here, naming the tensor.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from seamline.contracts import WeightsError
from seamline.contracts.untrusted import NotRegularFile, cut, open_regular

MAX_HEADER_BYTES = 100_000_000
"""The longest header read: the safetensors library's own limit (real ones are kilobytes)."""

MAX_OFFSET = (1 << 64) - 1
"""The largest ``data_offsets`` value (the library reads them as 64-bit sizes)."""

MAX_DIMENSION = 1 << 24
"""The largest size of a tensor's dimension taken (the encoders' largest ``config.json`` size)."""

DTYPE_BYTES = {
    "F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "U64": 8, "I32": 4, "U32": 4,
    "I16": 2, "U16": 2, "I8": 1, "U8": 1, "BOOL": 1, "C64": 8,
}  # fmt: skip
"""Bytes per element of each dtype the weights reader (safetensors' numpy loader) loads.
It loads every tensor of the file, so one of any other dtype (``F8_E4M3``, ``F4``) in
it, used or not, would fail the run: it is refused with the rest."""

Header = dict[str, tuple[str, tuple[int, ...]]]
"""Each tensor's ``(dtype, shape)``, by name."""


def read_header(path: Path) -> Header:
    """Every tensor's ``(dtype, shape)`` from the safetensors file at ``path``, once the
    header is known to describe the file's data exactly (:func:`check_layout`)."""
    damaged = f"{path} is not a safetensors file (its header could not be read"
    try:
        with open_regular(path) as stream:
            total = os.fstat(stream.fileno()).st_size
            size_bytes = stream.read(8)
            size = int.from_bytes(size_bytes, "little") if len(size_bytes) == 8 else -1
            if not 0 < size <= min(MAX_HEADER_BYTES, total - 8):
                raise WeightsError(f"{damaged}); restore the file")
            header = json.loads(stream.read(size).decode("utf-8"))
    except RecursionError:
        raise WeightsError(f"{damaged}: it is nested too deeply); restore the file") from None
    except NotRegularFile as err:
        raise WeightsError(f"{path} is {err}, not a file; restore the weights there") from None
    except (OSError, ValueError) as err:  # ValueError: not UTF-8, not JSON, huge numbers
        raise WeightsError(f"{damaged}: {cut(str(err))}); restore the file") from err
    if not isinstance(header, dict):
        raise WeightsError(f"{damaged}); restore the file")
    tensors: Header = {}
    spans: list[tuple[int, int, str]] = []
    for name, entry in header.items():
        if name == "__metadata__":
            _check_metadata(entry, path)
            continue
        dtype, shape, span = _entry(name, entry, path)
        tensors[name] = (dtype, shape)
        spans.append((*span, name))
    check_layout(path, spans, total - 8 - size)
    return tensors


def _entry(name: str, entry: object, path: Path) -> tuple[str, tuple[int, ...], tuple[int, int]]:
    """One tensor's dtype, shape and ``data_offsets``, each of the type the format says,
    its bytes exactly what its shape and dtype take."""
    damaged = f"{path} is not a safetensors file (its header could not be read"
    fields = entry if isinstance(entry, dict) else {}
    shape, offsets, dtype = fields.get("shape"), fields.get("data_offsets"), fields.get("dtype")
    if not isinstance(shape, list) or not all(_whole(n, MAX_DIMENSION) for n in shape):
        raise WeightsError(
            f"{damaged}: entry {cut(name, 60)!r} has no shape of whole numbers); restore the file"
        )
    if not (
        isinstance(offsets, list)
        and len(offsets) == 2
        and all(_whole(n, MAX_OFFSET) for n in offsets)
    ):
        raise WeightsError(
            f"{damaged}: entry {cut(name, 60)!r} has data_offsets {cut(repr(offsets), 60)}, "
            "not two whole numbers); restore the file"
        )
    if dtype not in DTYPE_BYTES:
        raise WeightsError(
            f"{path}: tensor {cut(name, 60)!r} is stored as "
            f"{cut(repr(dtype), 60)}, which the weights reader cannot load (it loads "
            f"{', '.join(DTYPE_BYTES)}); convert the checkpoint's tensors to float32"
        )
    nbytes = 0 if 0 in shape else DTYPE_BYTES[dtype]
    for n in shape:  # stops once past any file: a million dimensions are not multiplied out
        nbytes = nbytes * n if nbytes <= MAX_OFFSET else nbytes
    begin, end = offsets
    if end - begin != nbytes:
        raise WeightsError(
            f"{path}: tensor {cut(name, 60)!r} has data_offsets "
            f"[{begin}, {end}], {end - begin:,} bytes, but its shape "
            f"{cut(str(tuple(shape)), 60)} of {dtype} takes {_bytes(nbytes)}; restore the file "
            "(its header does not describe its data)"
        )
    return dtype, tuple(shape), (begin, end)


def check_layout(path: Path, spans: list[tuple[int, int, str]], data: int) -> None:
    """Refuse tensors that overlap, leave gaps, or do not end where the file's data does.

    The library reads a tensor's bytes from its ``data_offsets`` and refuses a file whose
    tensors do not tile its data exactly ("file not fully covered"): a file cut short
    (an interrupted download), bytes appended, or offsets that point past the end.
    """
    start = 0
    for begin, end, name in sorted(spans):
        if end > data:
            raise WeightsError(
                f"{path}: tensor {cut(name, 60)!r} has data_offsets [{begin}, {end}], past the "
                f"{data:,} bytes of data the file holds; the file is cut short (an interrupted "
                "download?) or its header damaged: restore the file"
            )
        if begin != start:
            raise WeightsError(
                f"{path}: tensor {cut(name, 60)!r} has data_offsets [{begin}, {end}], but the "
                f"tensors before it end at byte {start:,}: tensors follow one another from "
                "byte 0, without gaps or overlaps; restore the file"
            )
        start = end
    if start != data:
        raise WeightsError(
            f"{path}: its tensors' data ends at byte {start:,}, but the file holds {data:,} "
            "bytes of data after the header; the file is damaged or has bytes appended: "
            "restore the file"
        )


def _check_metadata(entry: object, path: Path) -> None:
    """``__metadata__`` must map strings to strings, or the library refuses the file."""
    if not isinstance(entry, dict) or not all(isinstance(v, str) for v in entry.values()):
        raise WeightsError(
            f"{path}: its header's __metadata__ is {cut(repr(entry), 60)}, not text by name; "
            "restore the file"
        )


def _whole(value: Any, limit: int) -> bool:
    """Whether ``value`` is a whole number from 0 to ``limit``, as the format's sizes are."""
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= limit


def _bytes(count: int) -> str:
    return f"{count:,} bytes" if count <= MAX_OFFSET else "more bytes than any file holds"
