"""The attention benchmark's report: the tables, the notes under them and the verdicts.

Everything here reads the report dictionary that the driver writes to ``attention.json``
and nothing else, so a saved JSON can be formatted again, and hand-made reports test it.
"""

from __future__ import annotations

import sys
from typing import Any

from rich.console import Console
from rich.table import Table

from seamline.adapters.bench_attention.workload import (
    FAILED_STATUSES,
    GIB,
    MIB,
    REFERENCE_IMPLEMENTATION,
)
from seamline.adapters.measure.load import describe_load

Report = dict[str, Any]
Cell = dict[str, Any]


NO_MEMORY_MIB = 0.5
"""A peak under this many MiB is shown as ``~0``: below it the figure rounds to zero, and
below zero it is noise, not memory handed back (see :func:`peak_text`)."""


def peak_text(mib: float | None) -> str:
    """A cell's peak MiB as the report shows it: ``~0`` under :data:`NO_MEMORY_MIB`.

    The peak is the worker's RSS peak minus the baseline worker's, so an implementation
    that needs next to nothing (``cpu-flash`` at short lengths) can measure below zero
    (the baseline held a little the worker did not): shown as ``-0`` or a negative
    ratio, it read as a gain. ``attention.json`` keeps the figure as measured.
    """
    if mib is None:
        return "?"
    return "~0" if mib < NO_MEMORY_MIB else f"{mib:,.0f}"


def _memory_ratio(mine: Cell, base: Cell) -> str:
    """``mine``'s peak against the reference's, ``~0`` where ``mine``'s is; empty where the
    reference's is none to divide by."""
    peak, base_peak = mine.get("peak_mib"), base.get("peak_mib")
    if peak is None or base_peak is None or base_peak < NO_MEMORY_MIB:
        return ""
    return "~0" if peak < NO_MEMORY_MIB else f"{peak / base_peak:.3f}x"


def describe_failure(result: Cell, address_limit_gib: float) -> str:
    """Why a cell has no time: out of memory (at which limit, asking for what), timeout..."""
    status = result.get("status")
    if status == "oom":
        limit = result.get("limit_gib") or address_limit_gib
        asked = result.get("allocation_bytes")
        more = f" (asked for {asked / GIB:.1f} GiB at once)" if asked else ""
        return f"did not run: out of memory at {limit:g} GiB{more}"
    if status == "timeout":
        return "did not run: timeout"
    if status == "skipped":
        return f"skipped: {result.get('reason', '')}"
    if status == "refused":
        return f"refused: {'; '.join(result.get('reasons', []))}"
    return f"did not run: {status}: {str(result.get('error', ''))[:200]}"


def measured(report: Report, name: str, length: int) -> Cell | None:
    """The cell of ``name`` at ``length`` if it was measured, else None."""
    result = report["results"].get(name, {}).get(str(length))
    return result if result and result.get("status") == "ok" else None


def measured_cells(report: Report) -> int:
    """How many (implementation, length) cells were measured."""
    return sum(
        1 for rows in report["results"].values() for r in rows.values() if r.get("status") == "ok"
    )


def _why_not(report: Report, name: str, length: int) -> str:
    if name not in report["results"]:
        return f"{name} did not run ({'; '.join(report['not_run'].get(name, ['not asked']))})"
    result = report["results"][name].get(str(length))
    if result is None:
        return f"{name} was not run at {length}"
    return f"{name}: {describe_failure(result, report['config']['address_limit_gib'])}"


def _verdicts_at_8192(report: Report) -> list[str]:
    native, block = measured(report, "native", 8192), measured(report, "blockwise", 8192)
    if not (native and block and "peak_mib" in native and "peak_mib" in block):
        missing = "; ".join(
            _why_not(report, n, 8192)
            for n, r in (("native", native), ("blockwise", block))
            if not r
        )
        return [
            f"at 8192, blockwise peak memory <= 1/8 of native's: n/a ({missing})",
            f"at 8192, blockwise no slower than native: n/a ({missing})",
        ]
    x, y = block["peak_mib"], native["peak_mib"]
    ratio = block["median_s"] / native["median_s"]
    fastest = block["min_s"] / native["min_s"]
    return [
        f"at 8192, blockwise peak memory <= 1/8 of native's: {'yes' if x <= y / 8 else 'no'} "
        f"({peak_text(x)} / {peak_text(y)} MiB = 1/{y / x if x > 0 else float('inf'):.1f})",
        f"at 8192, blockwise no slower than native: {'yes' if ratio <= 1.0 else 'no'} "
        f"(time ratio {ratio:.2f}: median {1e3 * block['median_s']:,.0f} ms / "
        f"{1e3 * native['median_s']:,.0f} ms; fastest call against fastest call "
        f"{fastest:.2f})",
    ]


def _verdict_at_32768(report: Report) -> str:
    block = measured(report, "blockwise", 32768)
    if block and "peak_mib" in block:
        mib = block["peak_mib"]
        within = "yes" if mib <= 2048 else "no"
        first = f"at 32768, blockwise within 2 GiB: {within} ({peak_text(mib)} MiB)"
    else:
        first = f"at 32768, blockwise within 2 GiB: n/a ({_why_not(report, 'blockwise', 32768)})"
    cap = f"native in {report['config']['address_limit_gib']:g} GiB"
    native = report["results"].get("native", {}).get("32768")
    if native and native.get("status") == "ok":
        second = f"{cap}: ran ({peak_text(native.get('peak_mib'))} MiB)"
    elif native and native.get("status") in FAILED_STATUSES:
        second = f"{cap}: could not ({_why_not(report, 'native', 32768)})"
    elif native and native.get("status") == "skipped" and "already" in str(native.get("reason")):
        second = f"{cap}: could not (not tried: {native['reason']})"
    else:
        second = f"{cap}: n/a ({_why_not(report, 'native', 32768)})"
    return f"{first}; {second}"


def verdicts(report: Report) -> list[str]:
    """The three targets, as sentences that start with yes, no or n/a."""
    return [*_verdicts_at_8192(report), _verdict_at_32768(report)]


def _cell(result: Cell | None) -> tuple[str, str]:
    """A cell as the table shows it: median ms (``!`` if the check failed) and peak MiB."""
    if result is None:
        return "", ""
    status = result.get("status")
    if status == "ok":
        mark = "" if result.get("check", {}).get("agrees", True) else " !"
        return f"{1e3 * result['median_s']:,.1f}{mark}", peak_text(result.get("peak_mib"))
    short = {"oom": "OOM", "timeout": "timeout", "skipped": "-", "refused": "refused"}
    return short.get(str(status), "error"), ""


def _times_table(report: Report, names: list[str]) -> Table:
    """Median ms and peak MiB per cell, with ratios to the reference implementation."""
    config = report["config"]
    table = Table(
        title=f"attention, B={config['batch']} N={config['heads']} H={config['head_dim']} "
        f"{config['dtype']}, {_mask(config)}{', causal' if config['causal'] else ''}, "
        f"{report['platform']} ({report['date']}; median ms of {config['repeats']} calls, "
        f"{config['long_repeats']} from {config['long_from']}; peak MiB over baseline)"
    )
    table.add_column("length", justify="right")
    reference = REFERENCE_IMPLEMENTATION if REFERENCE_IMPLEMENTATION in names else None
    for name in names:
        table.add_column(f"{name}\nms", justify="right")
        table.add_column(f"{name}\nMiB", justify="right")
        if reference and name != reference:
            table.add_column("time\nvs native", justify="right")
            table.add_column("mem\nvs native", justify="right")
    for length in config["lengths"]:
        row = [str(length)]
        base = measured(report, reference, length) if reference else None
        for name in names:
            row.extend(_cell(report["results"][name].get(str(length))))
            if reference and name != reference:
                mine = measured(report, name, length)
                if mine and base:
                    row.append(f"{mine['median_s'] / base['median_s']:.2f}x")
                    row.append(_memory_ratio(mine, base))
                else:
                    row.extend(["", ""])
        table.add_row(*row)
    return table


def _compile_table(report: Report, names: list[str]) -> Table:
    """Compile seconds and XLA's temp buffer per measured cell."""
    table = Table(title="compile seconds and XLA's temp buffer (memory_analysis), MiB")
    table.add_column("length", justify="right")
    for name in names:
        table.add_column(f"{name}\ncompile s", justify="right")
        table.add_column(f"{name}\nXLA temp", justify="right")
    for length in report["config"]["lengths"]:
        row = [str(length)]
        for name in names:
            mine = measured(report, name, length)
            temp = ((mine or {}).get("xla_memory") or {}).get("temp_size_in_bytes")
            row.append(f"{mine['compile_s']:.2f}" if mine else "")
            row.append(f"{temp / MIB:,.0f}" if temp is not None else "")
        table.add_row(*row)
    return table


def _notes(report: Report, names: list[str]) -> list[str]:
    """The lines under the tables: failures, failed checks, what did not run, warnings."""
    config = report["config"]
    lines = []
    for name in names:
        for length, result in report["results"][name].items():
            status = result.get("status")
            if status in FAILED_STATUSES:
                lines.append(
                    f"{name} at {length}: {describe_failure(result, config['address_limit_gib'])}"
                )
            elif status == "ok":
                check = result.get("check", {})
                if not check.get("agrees") or result.get("nonfinite_outputs"):
                    lines.append(
                        f"[red]{name} at {length}: output check failed: max |error| vs float64 "
                        f"reference {check.get('max_abs_error_vs_float64')}, "
                        f"{result.get('nonfinite_outputs')} non-finite outputs"
                    )
    for name, reasons in report["not_run"].items():
        lines.append(f"not run: {name}: {'; '.join(reasons)}")
    for name, hashes in report.get("source_changed_during_sweep", {}).items():
        lines.append(
            f"[bold yellow]warning: {name}'s source file changed during the sweep "
            f"(sha256 {', '.join(hashes)}): its rows mix versions"
        )
    # Workers run one after another, not interleaved: load hits cells unevenly, ratios too.
    load, *warning = describe_load(
        report["load_average"], report["load_warning"], report["host"]["cpus"], interleaved=False
    )
    return [*lines, load, *(f"[bold yellow]{line}" for line in warning)]


def print_report(report: Report, out: Console | None = None) -> None:
    """The results table, the compile table, the notes under them and the verdicts."""
    names = [r["name"] for r in report["implementations"]]
    if out is None:
        columns = 1 + 4 * len(names)  # length; ms, MiB and two ratios per implementation
        out = Console(width=None if sys.stdout.isatty() else max(160, 11 * columns + 10))
    out.print(_times_table(report, names))
    out.print(_compile_table(report, names))
    for line in _notes(report, names):
        out.print(line)
    for line in report["verdicts"]:
        out.print(f"[bold]{line}")


def _mask(config: dict[str, Any]) -> str:
    """``segments`` (5 % padding) or ``no mask``, as the sweep ran."""
    return "no mask" if str(config.get("segments", "")).startswith("none") else "segments"
