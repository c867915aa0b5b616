"""The attention sweep's report shows no negative memory, and its worker logs do not pile up.

A peak is the worker's RSS peak minus the baseline worker's, so an implementation that needs
next to nothing (``cpu-flash``) measured ``-0`` MiB and ``-0.007x`` of native's; and every
sweep left its folder of worker logs in the temporary directory (193 had built up). Both
are checked here on hand-made reports and a sweep whose workers are stand-ins: nothing is
measured.
"""

from __future__ import annotations

import io
import re
import tempfile
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from seamline.adapters.bench_attention import driver
from seamline.adapters.bench_attention.report import peak_text, print_report, verdicts

CONFIG = {
    "lengths": [128],
    "batch": 1,
    "heads": 12,
    "head_dim": 64,
    "dtype": "float32",
    "causal": False,
    "repeats": 1,
    "long_repeats": 1,
    "long_from": 32768,
    "address_limit_gib": 24.0,
    "memory_limit_gib": 20.0,
}


def cell(peak_mib: float, status: str = "ok") -> dict[str, Any]:
    return {
        "status": status,
        "median_s": 0.01,
        "min_s": 0.01,
        "peak_mib": peak_mib,
        "compile_s": 0.5,
        "nonfinite_outputs": 0,
        "check": {"agrees": True, "max_abs_error_vs_float64": 1e-7},
    }


def report_of(results: dict[str, dict[str, Any]]) -> dict[str, Any]:
    report: dict[str, Any] = {
        "date": "2026-12-05 10:00 UTC",
        "platform": "cpu",
        "host": {"cpus": 2},
        "load_average": {"start": [0.1, 0.1, 0.1], "end": [0.1, 0.1, 0.1]},
        "load_warning": False,
        "config": CONFIG,
        "implementations": [{"name": name, "interpret": False} for name in results],
        "not_run": {},
        "source_changed_during_sweep": {},
        "results": {name: {"128": row} for name, row in results.items()},
    }
    report["verdicts"] = verdicts(report)
    return report


@pytest.mark.parametrize(
    ("mib", "shown"), [(-0.4, "~0"), (-12.0, "~0"), (0.2, "~0"), (0.6, "1"), (6256.0, "6,256")]
)
def test_a_peak_below_zero_or_rounding_to_it_is_shown_as_about_zero(mib: float, shown: str) -> None:
    assert peak_text(mib) == shown
    assert peak_text(None) == "?"


def test_the_table_shows_about_zero_for_a_negative_peak_and_its_ratio() -> None:
    report = report_of({"native": cell(445.0), "blockwise": cell(117.0), "cpu-flash": cell(-3.2)})
    out = Console(file=io.StringIO(), width=250, color_system=None)
    print_report(report, out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    (row, *_) = [line for line in text.splitlines() if re.match(r"^│\s+128 │", line)]
    cells = [part.strip() for part in row.strip("│").split("│")]
    # length | native ms, MiB | blockwise ms, MiB, time, mem | cpu-flash ms, MiB, time, mem
    assert cells[1:7] == ["10.0", "445", "10.0", "117", "1.00x", "0.263x"], cells
    assert cells[7:] == ["10.0", "~0", "1.00x", "~0"], cells
    assert not re.search(r"(?<![\w-])-\d", text)  # no negative figure anywhere


def stand_in_sweep(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, status: str
) -> tuple[Path, list[str]]:
    """``run_benchmark`` with the probe and the workers replaced: one cell of ``status``;
    its log folder, and what it said."""
    logs = tmp_path / "seamline-attention-bench-test"

    def mkdtemp(prefix: str = "") -> str:
        logs.mkdir()
        (logs / "probe.log").write_text("probe\n", encoding="utf-8")
        return str(logs)

    probed = {"platform": "cpu", "device_kind": "cpu", "device": "cpu", "versions": {}}
    run = {"name": "native", "config": {}, "lengths": [128], "interpret": False}
    logged = {**cell(10.0, status), "log": str(logs / "native-128.log")}
    measured = driver.Cells(
        {"native": {"128": logged}, "blockwise": {}},
        {"128": {"status": "ok", "peak_rss_bytes": 1, "log": str(logs / "baseline-128.log")}},
        {},
    )
    monkeypatch.setattr(tempfile, "mkdtemp", mkdtemp)
    monkeypatch.setattr(driver, "probe", lambda *args, **kwargs: {**probed, "entries": []})
    monkeypatch.setattr(driver, "_plan", lambda *args: ([{**run, "max_length_cap": None}], {}))
    monkeypatch.setattr(driver, "_measure_every_length", lambda *args: measured)
    said: list[str] = []
    driver.run_benchmark([128], ["native"], 1, tmp_path / "out", plot=False, log=said.append)
    return logs, said


def test_a_sweep_whose_workers_all_succeeded_removes_its_logs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, said = stand_in_sweep(tmp_path, monkeypatch, "ok")
    assert not logs.exists()
    written = (tmp_path / "out" / "attention.json").read_text(encoding="utf-8")
    assert str(logs) not in written  # no path to a log that is gone
    assert not [line for line in said if "kept" in line]


@pytest.mark.parametrize("status", ["failed", "oom", "timeout"])
def test_a_sweep_where_a_worker_failed_keeps_its_logs_and_names_them(
    status: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs, said = stand_in_sweep(tmp_path, monkeypatch, status)
    assert (logs / "probe.log").is_file()
    assert f"[yellow]worker logs kept in {logs} (1 worker(s) failed)" in said
    written = (tmp_path / "out" / "attention.json").read_text(encoding="utf-8")
    assert str(logs / "native-128.log") in written


def test_an_unknown_implementation_is_a_usage_error_that_keeps_the_last_results(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A typo ("natve") was a "not run" line, then an empty sweep written over the last
    # results (benchmarks/results/attention.json by default), exit code 1.
    from seamline.adapters.bench_attention.cli import main

    out = tmp_path / "results"
    out.mkdir()
    (out / "attention.json").write_text('{"last": "sweep"}', encoding="utf-8")
    entries = [{"name": "native"}, {"name": "blockwise"}]
    probed = {"platform": "cpu", "device_kind": "cpu", "device": "cpu", "entries": entries}
    monkeypatch.setattr(driver, "probe", lambda *args, **kwargs: probed)
    code = main(["--implementations", "natve", "--lengths", "128", "--no-plot", "-o", str(out)])
    assert code == 2
    assert (
        "error: --implementations: no attention registered as 'natve' (did you mean "
        "'native'?); registered: blockwise, native"
    ) in capsys.readouterr().err.replace("\n", "")
    assert (out / "attention.json").read_text(encoding="utf-8") == '{"last": "sweep"}'


def test_a_max_length_below_the_shortest_sweep_length_is_a_usage_error(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --max-length 100 made no lengths, and the probe worker died on int('').
    from seamline.adapters.bench_attention.cli import main

    assert main(["--max-length", "100", "--no-plot"]) == 2
    assert "--max-length must be at least 128" in capsys.readouterr().err


@pytest.mark.parametrize("names", ["", ",", " , "])
def test_implementations_naming_none_is_a_usage_error(
    names: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # '' ran every implementation (a sweep of minutes), and 'native,' asked for ''.
    from seamline.adapters.bench_attention.cli import main

    assert main(["--implementations", names, "--no-plot"]) == 2
    assert "--implementations names no attention" in capsys.readouterr().err
