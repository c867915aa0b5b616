"""The torch side of ``attention.vs_torch``: ``scaled_dot_product_attention`` on the same inputs.

Runs in ``.venv-golden`` (torch lives nowhere else). It loads the cases the driver
wrote (``CASES.npz``: for each case q, k, v in seamline's ``[B, T, heads, H]``
layout and, for masked cases, the segment ids), views them as torch's
``[B, heads, T, H]`` (a transpose, no copy: what transformers' BERT passes to SDPA)
with a boolean ``[B, 1, T, T]`` mask of equal segments made once, untimed, and then
answers the driver's ``run`` requests
(``benchmarks.common.workers.serve``) with the seconds of one call per case, the median of
``--calls`` calls (``--long-calls`` for the long cases).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

from benchmarks.common.workers import serve


class TorchSide:
    def __init__(self, path: str, calls: int, long_calls: int) -> None:
        import numpy as np
        import torch

        self.torch = torch
        self.calls = calls
        self.long_calls = long_calls
        data = np.load(path)
        names = sorted({key.split("/")[0] for key in data.files})
        self.cases: dict[str, tuple[Any, ...]] = {}
        for name in names:
            # The same memory seamline's kernel reads, seen as [B, heads, T, H]: a strided
            # view, exactly what transformers' BERT hands to SDPA (view, then transpose).
            q, k, v = (
                torch.from_numpy(data[f"{name}/{x}"]).transpose(1, 2) for x in ("q", "k", "v")
            )
            mask = None
            if f"{name}/segments" in data.files:
                segments = torch.from_numpy(data[f"{name}/segments"])
                mask = (segments[:, None, :, None] == segments[:, None, None, :]).contiguous()
            self.cases[name] = (q, k, v, mask)
        for name in names:  # warm-up: one call each
            self._call(name)
        self.info = {
            "implementation": "torch.nn.functional.scaled_dot_product_attention",
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
        }

    def _call(self, name: str) -> float:
        q, k, v, mask = self.cases[name]
        with self.torch.inference_mode():
            started = time.perf_counter()
            out = self.torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            # Back to [B, T, heads, H], as transformers' sdpa_attention_forward does and as
            # seamline's kernels return it.
            out.transpose(1, 2).contiguous()
            return time.perf_counter() - started

    def run_once(self) -> dict[str, Any]:
        seconds = {
            name: statistics.median(
                self._call(name)
                for _ in range(self.long_calls if name.startswith("1x") else self.calls)
            )
            for name in self.cases
        }
        return {"seconds": sum(seconds.values()), "cases": seconds}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cases", help="the driver's CASES.npz")
    parser.add_argument("--calls", type=int, default=5)
    parser.add_argument("--long-calls", type=int, default=1, help="for the 1xN long cases")
    args = parser.parse_args(argv)
    serve(lambda: TorchSide(args.cases, args.calls, args.long_calls))
    return 0


if __name__ == "__main__":
    sys.exit(main())
