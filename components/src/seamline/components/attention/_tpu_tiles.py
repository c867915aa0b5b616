"""The TPU tiling facts and ``with:`` settings that ``tpu-flash`` and ``tpu-splash`` share.

Both wrap a Pallas TPU kernel that tiles queries in rows of 8 sublanes and keys in
multiples of 128 lanes, and both are configured the same way. They live here, not
in either kernel's module, so that no kernel imports another (import-linter's
independence contract over the attention modules keeps it so).
"""

from __future__ import annotations

from pydantic import Field

from seamline.contracts import ComponentConfig

#: The kernels' own default tile; key blocks must be multiples of 128 lanes.
DEFAULT_BLOCK = 128
LANES = 128
SUBLANES = 8
DTYPES = ("float32", "bfloat16")


class TpuTilesConfig(ComponentConfig):
    """Interpret mode and tile sizes of a Pallas TPU attention kernel."""

    interpret: bool = Field(
        default=False,
        description="Run the kernel in Pallas's TPU interpret mode, which simulates a TPU on "
        "the CPU. Slow (seconds per call); for testing the kernel where there is no TPU.",
    )
    block_q: int | None = Field(
        default=None,
        ge=SUBLANES,
        multiple_of=SUBLANES,
        description="Query rows per tile (a multiple of 8). Default 128, or the padded query "
        "length when that is shorter.",
    )
    block_k: int | None = Field(
        default=None,
        ge=LANES,
        multiple_of=LANES,
        description="Keys per tile (a multiple of 128, as the kernel requires). Default 128.",
    )
