"""What the attention benchmark measures: the shapes, the padding, the limits and units.

The driver, the workers and the report all read these, so a cell in the table, the
worker that measured it and the JSON that records it cannot disagree about the workload.
"""

from __future__ import annotations

from pathlib import Path

BATCH = 1
HEADS = 12
HEAD_DIM = 64
DTYPES = ("float32", "bfloat16")
"""The dtypes q, k and v can be measured in (``--dtype``): bfloat16 for the GPU kernels'
half-precision paths (cuDNN flash attention takes nothing else)."""
DEFAULT_DTYPE = "float32"
PAD_FRACTION = 0.05
SEED = 0
REFERENCE_IMPLEMENTATION = "native"
"""The implementation every other one is compared with in the table and the verdicts."""

CHECK_TOLERANCE: dict[str, float] = {"float32": 1e-4, "bfloat16": 5e-2}
"""Per dtype, the largest absolute difference from the float64 reference rows (computed
from the inputs as the worker holds them, already rounded) that counts as agreeing.
bfloat16 keeps 8 bits of mantissa: its figure is the attention contract's own
``TOLERANCES["bfloat16"]`` (seamline.contracts.attention), the ceiling the conformance
suite (seamline.contracts.testing.attention.tolerance) allows a bfloat16 output."""
SYSTEM_RESERVE_GIB = 1.0
"""Kill a worker when the machine's available memory falls below this (shared machine)."""
FAILED_STATUSES = ("oom", "timeout", "failed")
"""Statuses of a cell whose worker ran and did not measure (skipped and refused did not run)."""

GIB = 2**30
MIB = 2**20

ROOT = Path.cwd()
"""Relative paths (results, logs, the workers' working folder) are taken from where the
benchmark starts; workers run there too, so source paths in the JSON are relative to it."""


MIN_LENGTH = 128
"""The shortest length of a default sweep."""
SHORTEST_LENGTH = 2
"""The shortest length a worker measures: the check reads rows 0 and 1 (and the row
before the padding), and a masked sequence needs a real token before its padding. A
length of 1 was accepted, and every worker died on an ``IndexError`` whose traceback,
cut short, became the cell's reason."""


def default_lengths(max_length: int) -> list[int]:
    """Powers of two from :data:`MIN_LENGTH` up to ``max_length``."""
    lengths, length = [], MIN_LENGTH
    while length <= max_length:
        lengths.append(length)
        length *= 2
    return lengths


def padding_of(length: int) -> int:
    """Padding tokens at the end of a sequence of ``length``: ~5%, at least one."""
    return max(1, round(PAD_FRACTION * length))
