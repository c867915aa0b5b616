"""The attention benchmark's picture: time and peak memory against length, log-log.

matplotlib draws with the Agg backend (no display needed); the driver skips the picture
with a warning if matplotlib is missing or fails, because the JSON is what matters.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from seamline.adapters.bench_attention.workload import FAILED_STATUSES, GIB, MIB

Failure = tuple[int, int, str, str, int | None]
"""A cell that did not measure: implementation index, length, label, text, bytes asked."""


def plot_report(report: dict[str, Any], png: Path) -> None:
    """Two log-log panels, time and peak memory against length; failures marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_time, ax_mem) = plt.subplots(1, 2, figsize=(13, 5.4))
    failures = _draw_measured(report, ax_time, ax_mem)
    _log_axes((ax_time, ax_mem), report["config"]["lengths"])
    if ax_mem.lines:
        _draw_memory_limits(ax_mem, report["config"], failures)
    for ax in (ax_time, ax_mem):
        _mark_failures(ax, failures, memory=ax is ax_mem)
    _label_axes(ax_time, ax_mem)
    fig.suptitle(_title(report), fontsize=10)
    fig.tight_layout()
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)


def _draw_measured(report: dict[str, Any], ax_time: Any, ax_mem: Any) -> list[Failure]:
    """One line per implementation on each panel, from its measured cells; its failures."""
    failures: list[Failure] = []
    for index, entry in enumerate(report["implementations"]):
        color = f"C{index}"
        label = entry["name"] + (" (interpret)" if entry["interpret"] else "")
        rows = report["results"][entry["name"]]
        ok = sorted((int(n), r) for n, r in rows.items() if r.get("status") == "ok")
        if ok:
            xs = [n for n, _ in ok]
            ax_time.plot(xs, [1e3 * r["median_s"] for _, r in ok], "o-", color=color, label=label)
            mem = [(n, r["peak_mib"]) for n, r in ok if r.get("peak_mib", 0) > 0]
            if mem:
                ax_mem.plot(*zip(*mem, strict=True), "o-", color=color, label=label)
        for n, r in rows.items():
            if r.get("status") in FAILED_STATUSES:
                text = {"oom": "OOM", "timeout": "timeout"}.get(r["status"], "error")
                failures.append((index, int(n), label, text, r.get("allocation_bytes")))
    return failures


def _log_axes(axes: tuple[Any, ...], lengths: list[int]) -> None:
    """Powers of two along x, log y where there is data, "no data" where there is none."""
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_xlim(min(lengths) / 1.4, max(lengths) * 1.4)
        ax.set_xticks(lengths, [str(n) for n in lengths], fontsize=7)
        ax.minorticks_off()
        if ax.lines:
            ax.set_yscale("log")
        else:
            ax.text(0.5, 0.5, "no data", transform=ax.transAxes, ha="center")


def _draw_memory_limits(ax_mem: Any, config: dict[str, Any], failures: list[Failure]) -> None:
    """The 2 GiB target, the address-space cap and the watchdog, as dotted lines; the y range
    stretched to show them and what the failed cells asked for."""
    limits = [(2048.0, "2 GiB", "grey")]
    if config["address_limit_gib"]:
        cap = config["address_limit_gib"]
        limits.append((cap * 1024, f"{cap:g} GiB address-space cap (RLIMIT_AS)", "red"))
    watchdog = config["memory_limit_gib"]
    limits.append((watchdog * 1024, f"{watchdog:g} GiB RSS watchdog", "darkorange"))
    low, high = ax_mem.get_ylim()
    asked = [1.1 * f[4] / MIB for f in failures if f[4]]
    ax_mem.set_ylim(low, max(high, *(1.6 * mib for mib, _, _ in limits), *asked))
    for mib, text, color in limits:
        ax_mem.axhline(mib, color=color, ls=":", lw=1)
        ax_mem.annotate(
            text,
            (0.01, mib),
            xycoords=("axes fraction", "data"),
            fontsize=7,
            va="bottom",
            color=color,
        )


def _mark_failures(ax: Any, failures: list[Failure], *, memory: bool) -> None:
    """A cross and a label per failed cell: at what it asked for on the memory panel, when
    known, else stacked along the top."""
    from matplotlib.transforms import blended_transform_factory

    ax.autoscale(False)  # the failure marks must not move the data's limits
    edge = blended_transform_factory(ax.transData, ax.transAxes)
    stacked: dict[int, int] = {}
    for index, length, label, text, asked_bytes in failures:
        color = f"C{index}"
        shift = 0
        if memory and asked_bytes:
            # Out of memory with a known request: mark what it asked for, in MiB.
            point, trans = (length, asked_bytes / MIB), ax.transData
            text = f"{text} (asked {asked_bytes / GIB:.1f} GiB)"
            shift = -11 * stacked.get(length, 0)  # labels at one length stack downwards
            stacked[length] = stacked.get(length, 0) + 1
        else:
            point, trans = (length, 0.95 - 0.06 * index), edge
        ax.plot(*point, "x", color=color, ms=10, mew=2.5, transform=trans)
        ax.annotate(
            f"{label}: {text}",
            point,
            xycoords=trans,
            xytext=(-9, shift),
            textcoords="offset points",
            ha="right",
            va="center",
            fontsize=8,
            color=color,
        )


def _label_axes(ax_time: Any, ax_mem: Any) -> None:
    for ax, title, unit in (
        (ax_time, "median time per call (compile excluded)", "ms"),
        (ax_mem, "peak memory over the baseline process (RSS)", "MiB"),
    ):
        ax.set_xlabel("sequence length (tokens)")
        ax.set_ylabel(unit)
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(loc="lower right", fontsize=8)


def _title(report: dict[str, Any]) -> str:
    """The workload, the platform, the date and the load, in one line."""
    config = report["config"]
    load = report["load_average"]
    return (
        f"seamline attention: B={config['batch']}, {config['heads']} heads, "
        f"head dim {config['head_dim']}, {config['dtype']}, "
        f"{'no mask' if str(config.get('segments', '')).startswith('none') else 'segments'}"
        f"{', causal' if config['causal'] else ''}, {report['platform']} - {report['date']}, "
        f"load {load['start'][0]:.2f} -> {load['end'][0]:.2f}"
    )
