"""Draw ``embed_throughput.json`` as a PNG bar chart.

Run it with the ``.venv-golden`` interpreter (``embed_throughput`` does so at
the end of a run); matplotlib is never installed in ``.venv``. If matplotlib is
missing from the interpreter running this script, it is installed with pip first
(``.venv-golden`` is a throw-away venv)::

    .venv-golden/bin/python -m benchmarks.throughput.plot_results JSON [-o PNG]

with ``JSON`` ``benchmarks/results/embed_throughput.json``, from the repository root.

Left: tokens per second of each implementation (bar: median repeat; whisker: the
fastest). Right: where the time of the median pipeline run goes.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

MATPLOTLIB = "matplotlib==3.11.2"


def ensure_matplotlib() -> None:
    if importlib.util.find_spec("matplotlib") is None:
        print(f"installing {MATPLOTLIB} into {sys.prefix}", file=sys.stderr)
        subprocess.run(
            [sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check",
             "--only-binary=:all:", MATPLOTLIB],
            check=True,
        )  # fmt: skip


def draw(report: dict[str, Any], png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = report["rows"]
    names = [row["implementation"] for row in rows]
    medians = [row["tokens_per_s"] for row in rows]
    best = [row["tokens"] / row["min_s"] for row in rows]
    colours = ["#4c72b0" if name.startswith("seamline") else "#dd8452" for name in names]

    fig, (left, right) = plt.subplots(1, 2, figsize=(13, 4.8), width_ratios=[3, 2])
    positions = range(len(rows))
    bars = left.barh(positions, medians, color=colours)
    left.errorbar(
        best,
        positions,
        xerr=[[b - m for b, m in zip(best, medians, strict=True)], [0] * len(rows)],
        fmt="none",
        ecolor="black",
        capsize=3,
    )
    for bar, row, fastest in zip(bars, rows, best, strict=True):
        left.text(
            max(bar.get_width(), fastest),
            bar.get_y() + bar.get_height() / 2,
            f"  {row['tokens_per_s']:,.0f} ({row['ratio_vs_reference']:.2f}x)",
            va="center",
            fontsize=8,
        )
    left.set_yticks(list(positions), names, fontsize=8)
    left.invert_yaxis()
    left.set_xlabel("tokens / s (median repeat; whisker reaches the fastest)")
    left.set_xlim(0, max(best) * 1.35)
    load = report["load_average"]
    left.set_title(
        f"all-MiniLM-L6-v2, {report['corpus']['documents']} docs, "
        f"{report['config']['repeats']} repeats, load {load['start'][0]:.1f}"
        f"->{load['end'][0]:.1f} on {report['host']['cpus']} CPUs",
        fontsize=9,
    )

    breakdown = report["overhead"]["median_run_breakdown_s"]
    parts = list(breakdown)
    seconds = [breakdown[p] for p in parts]
    right.barh(range(len(parts)), seconds, color="#55a868")
    right.set_yticks(range(len(parts)), parts, fontsize=7)
    right.invert_yaxis()
    right.axvline(0, color="black", linewidth=0.5)
    right.set_xlabel("seconds")
    right.set_title("median seamline pipeline run: where the time goes", fontsize=9)
    fig.suptitle(f"embed_throughput, {report['date']}", fontsize=10)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("json", type=Path, help="embed_throughput.json")
    parser.add_argument("-o", "--output", type=Path, help="PNG path (default: beside the JSON)")
    args = parser.parse_args(argv)
    report = json.loads(args.json.read_text(encoding="utf-8"))
    ensure_matplotlib()
    png = args.output or args.json.with_suffix(".png")
    draw(report, png)
    print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
