"""``seamline bench attention``: a real sweep, a sweep where every worker fails, and the report.

Two real runs (each starts a JAX worker process per cell, so they take seconds, not
milliseconds) pin what the JSON records and what the exit code says; the tables, notes
and verdicts are tested on hand-made reports, where each case can be chosen.
"""

from __future__ import annotations

import io
import json
import re
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from seamline.adapters.bench_attention import cli, driver, worker
from seamline.adapters.bench_attention.driver import Sweep
from seamline.adapters.bench_attention.plot import plot_report
from seamline.adapters.bench_attention.report import (
    describe_failure,
    measured_cells,
    print_report,
    verdicts,
)
from seamline.adapters.bench_attention.workload import CHECK_TOLERANCE, DTYPES
from seamline.adapters.cli.main import app

GIB = 2**30


@dataclass
class Run:
    exit_code: int
    stdout: str
    stderr: str
    report: dict[str, Any]


def bench(out: Path, *arguments: str) -> Run:
    """``seamline bench attention ARGUMENTS --no-plot --out OUT``, in this process."""
    result = CliRunner().invoke(
        app,
        ["bench", "attention", *arguments, "--no-plot", "--out", str(out)],
        env={"COLUMNS": "200"},
    )
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    report = json.loads((out / "attention.json").read_text(encoding="utf-8"))
    return Run(result.exit_code, result.stdout, result.stderr, report)


# -- real runs ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Run:
    """The smallest real sweep of two implementations, run once for the tests below."""
    out = tmp_path_factory.mktemp("sweep")
    return bench(out, "--lengths", "128", "--implementations", "native,blockwise", "--repeats", "1")


@pytest.mark.slow
def test_a_real_sweep_measures_every_cell_and_exits_0(sweep: Run) -> None:
    assert sweep.exit_code == cli.EXIT_OK, sweep.stdout + sweep.stderr
    report = sweep.report
    assert report["benchmark"] == "attention"
    assert report["config"]["lengths"] == [128]
    assert report["config"]["repeats"] == 1
    assert [r["name"] for r in report["implementations"]] == ["native", "blockwise"]
    assert report["baselines"]["128"]["status"] == "ok"
    assert report["baselines"]["128"]["peak_rss_bytes"] > 0
    for name in ("native", "blockwise"):
        cell = report["results"][name]["128"]
        assert cell["status"] == "ok", cell
        assert len(cell["times_s"]) == 1
        assert cell["times_s"][0] > 0
        assert cell["median_s"] == cell["min_s"] == cell["times_s"][0]
        assert cell["compile_s"] > 0
        # Checked against float64 NumPy in the worker, not against native.
        assert cell["check"]["agrees"] is True
        assert 0 <= cell["check"]["max_abs_error_vs_float64"] <= 1e-4
        assert cell["check"]["shape_ok"] is True
        assert cell["nonfinite_outputs"] == 0
        assert cell["output_shape"] == [1, 128, 12, 64]
        # Memory: the worker's own peak, over the baseline's, and XLA's view of it.
        assert cell["peak_rss_bytes"] > cell["rss_after_inputs_bytes"] > 0
        assert isinstance(cell["peak_mib"], float)
        assert isinstance(cell["compile_peak_mib"], float)
        assert cell["xla_memory"]["temp_size_in_bytes"] >= 0
        assert "device_peak_bytes" in cell
        assert re.fullmatch(r"[0-9a-f]{16}", cell["source"]["sha256"])
    assert measured_cells(report) == 2
    assert report["verdicts"] == verdicts(report)


@pytest.mark.slow
def test_a_real_sweep_prints_the_table_and_the_verdicts(sweep: Run) -> None:
    report = sweep.report
    native, block = (report["results"][n]["128"] for n in ("native", "blockwise"))
    times, _ = rows_at(sweep.stdout, 128)
    assert times == [
        "128",
        f"{1e3 * native['median_s']:,.1f}",
        f"{native['peak_mib']:,.0f}",
        f"{1e3 * block['median_s']:,.1f}",
        f"{block['peak_mib']:,.0f}",
        f"{block['median_s'] / native['median_s']:.2f}x",
        f"{block['peak_mib'] / native['peak_mib']:.3f}x",
    ]
    for verdict in report["verdicts"]:  # nothing ran at 8192 or 32768
        assert verdict in sweep.stdout
    assert report["verdicts"][0] == (
        "at 8192, blockwise peak memory <= 1/8 of native's: n/a "
        "(native was not run at 8192; blockwise was not run at 8192)"
    )
    assert "length    128: baseline" in sweep.stderr  # the progress goes to stderr


@pytest.mark.slow
def test_when_every_worker_fails_it_exits_1_and_records_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The failed workers' logs are kept on purpose; keep them in this test's folder, not
    # in the machine's temporary directory (each suite run left one there).
    temporary = tmp_path / "temporary"
    temporary.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temporary))
    # No JAX worker starts within 0.01 s; the probe and the baseline are exempt (300 s).
    run = bench(
        tmp_path,
        "--lengths",
        "128",
        "--implementations",
        "native",
        "--repeats",
        "1",
        "--timeout",
        "0.01",
    )
    assert run.exit_code == cli.EXIT_NOTHING_MEASURED == 1
    report = run.report
    cell = report["results"]["native"]["128"]
    assert cell["status"] == "timeout"
    assert cell["error"] == "still running after 0.01 s"
    assert report["baselines"]["128"]["status"] == "ok"
    assert measured_cells(report) == 0
    assert "native at 128: did not run: timeout" in run.stdout
    # A name no entry point registers is a usage error before anything runs (exit 2):
    # tests/benchmarks/test_bench_cli_attention.py.
    assert "nothing was measured" in run.stderr
    (kept,) = temporary.glob("seamline-attention-bench-*")
    assert f"worker logs kept in {kept}" in " ".join(run.stderr.split()), run.stderr


@pytest.mark.slow
def test_a_real_bfloat16_sweep_measures_in_bfloat16_and_checks_within_its_tolerance(
    tmp_path: Path,
) -> None:
    run = bench(
        tmp_path,
        "--lengths",
        "128",
        "--implementations",
        "native,xla-sdpa",
        "--repeats",
        "1",
        "--dtype",
        "bfloat16",
    )
    assert run.exit_code == cli.EXIT_OK, run.stdout + run.stderr
    report = run.report
    assert report["config"]["dtype"] == "bfloat16"
    assert [r["name"] for r in report["implementations"]] == ["native", "xla-sdpa"]
    for name in ("native", "xla-sdpa"):
        cell = report["results"][name]["128"]
        assert cell["status"] == "ok", cell
        assert ":bfloat16:" in cell["spec"], cell["spec"]
        check = cell["check"]
        assert check["dtype"] == "bfloat16"
        assert check["shape_ok"] is True
        assert check["agrees"] is True, check
        assert check["tolerance"] == CHECK_TOLERANCE["bfloat16"]
        # Rounded to 8 bits of mantissa: further from float64 than float32 could be.
        assert CHECK_TOLERANCE["float32"] < check["max_abs_error_vs_float64"] <= 2e-2
        assert cell["nonfinite_outputs"] == 0
    assert "bfloat16" in run.stdout  # the table's title
    # The probe asked supports() about bfloat16 too: cudnn's refusal does not name float32.
    (cudnn,) = (entry for entry in report["probe"] if entry["name"] == "cudnn")
    reasons = cudnn["configs"][0]["supports"]["128"]["reasons"]
    assert not any("float32" in reason for reason in reasons), reasons


def test_the_dtype_option_reaches_the_sweep_the_workers_and_the_record(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    asked: list[dict[str, Any]] = []

    def record_options(*args: Any, **kwargs: Any) -> dict[str, Any]:
        asked.append(kwargs)
        raise RuntimeError("stop here")

    monkeypatch.setattr(cli, "run_benchmark", record_options)
    cli.main(["--lengths", "128", "--dtype", "bfloat16"])
    cli.main(["--lengths", "128"])
    assert [kwargs["dtype"] for kwargs in asked] == ["bfloat16", "float32"]

    sweep = Sweep(
        lengths=(128,),
        implementations=None,
        repeats=1,
        causal=False,
        masked=True,
        dtype="bfloat16",
        interpret=False,
        interpret_max_length=1024,
        long_repeats=1,
        long_from=32768,
        timeout=1.0,
        memory_limit_gib=1.0,
        address_limit_gib=0.0,
    )
    assert sweep.record()["dtype"] == "bfloat16"
    flags = sweep.worker_flags()
    assert worker.parse_arguments(["measure", "native", "128", *flags]).dtype == "bfloat16"
    assert worker.parse_arguments(["measure", "native", "128"]).dtype == "float32"

    argvs: list[list[str]] = []

    def watched(argv: list[str], *args: Any) -> dict[str, Any]:
        argvs.append(argv)
        return {"entries": []}

    monkeypatch.setattr(driver, "run_watched", watched)
    driver.probe([128], False, tmp_path, 1.0, dtype="bfloat16")
    probe_argv = argvs[0][argvs[0].index("probe") :]
    assert worker.parse_arguments(probe_argv).dtype == "bfloat16"


def test_the_spec_and_the_check_are_of_the_dtype_asked_for() -> None:
    # supports() is asked about bfloat16 inputs, the inputs are bfloat16, and an output
    # widened to float32 is not the shape and dtype asked for.
    import numpy as np

    spec = worker.attention_spec(128, causal=False, dtype="bfloat16")
    assert spec.dtype == "bfloat16"
    q, k, v, segments = worker.make_inputs(128, dtype="bfloat16")
    assert {str(x.dtype) for x in (q, k, v)} == {"bfloat16"}
    assert segments.dtype == np.int32
    same = worker.check_output(q, q, k, v, segments, False, dtype="bfloat16")["check"]
    assert same["shape_ok"] is True
    assert same["tolerance"] == CHECK_TOLERANCE["bfloat16"]
    widened = worker.check_output(q.astype("float32"), q, k, v, segments, False, dtype="bfloat16")
    assert widened["check"]["shape_ok"] is False


def test_the_probe_asks_supports_about_the_dtype() -> None:
    # cudnn takes only half precision: its refusal names float32 only when asked about it.
    def cudnn_reasons(dtype: str) -> list[str]:
        entries = worker.probe_registry([128], False, dtype=dtype)["entries"]
        (cudnn,) = (e for e in entries if e["name"] == "cudnn")
        return list(cudnn["configs"][0]["supports"]["128"]["reasons"])

    assert any("not float32" in reason for reason in cudnn_reasons("float32"))
    assert not any("float32" in reason for reason in cudnn_reasons("bfloat16"))


def test_the_bfloat16_tolerance_is_the_attention_contracts() -> None:
    from seamline.contracts.attention import TOLERANCES

    assert CHECK_TOLERANCE["bfloat16"] == TOLERANCES["bfloat16"]
    assert set(CHECK_TOLERANCE) == set(DTYPES)


# -- exit codes, without running a sweep -------------------------------------------------------


@pytest.mark.parametrize(
    "arguments",
    [
        ["--repeats", "0"],
        ["--lengths", "128,-4"],
        ["--lengths", "1"],  # every worker died on an IndexError, its traceback the reason
        ["--lengths", "128,1"],
        ["--no-such-option"],
        ["--timeout", "soon"],
        ["--dtype", "float16"],
        ["--dtype"],
    ],
)
def test_a_usage_error_exits_2_before_anything_runs(
    arguments: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cli, "run_benchmark", _must_not_run)
    assert cli.main(arguments) == cli.EXIT_USAGE == 2


def test_a_length_below_2_is_refused_in_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cli, "run_benchmark", _must_not_run)
    assert cli.main(["--lengths", "1,128"]) == cli.EXIT_USAGE
    (line,) = [line for line in capsys.readouterr().err.splitlines() if "error:" in line]
    assert line.endswith(
        "argument --lengths: '1,128': lengths must be comma-separated integers of at least 2 "
        "(the check reads a sequence's first two rows)"
    ), line


def test_help_exits_0(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(cli, "run_benchmark", _must_not_run)
    assert cli.main(["--help"]) == cli.EXIT_OK
    assert "Exit codes: 0 at least one cell measured" in capsys.readouterr().out


def _must_not_run(*args: Any, **kwargs: Any) -> dict[str, Any]:
    raise AssertionError("a usage error must stop before the sweep")


@pytest.mark.parametrize(
    ("statuses", "code"),
    [
        (["oom", "timeout", "failed", "skipped"], 1),
        ([], 1),
        (["ok", "oom"], 0),
    ],
)
def test_the_exit_code_says_whether_anything_was_measured(
    statuses: list[str], code: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = hand_made_report()
    report["implementations"] = [{"name": "native", "interpret": False}]
    report["config"]["lengths"] = [128 * 2**i for i in range(len(statuses))]
    report["results"] = {
        "native": {
            str(length): {**MEASURED_NATIVE, "status": status}
            for length, status in zip(report["config"]["lengths"], statuses, strict=True)
        }
    }
    monkeypatch.setattr(cli, "run_benchmark", lambda *a, **k: report)
    assert cli.main(["--lengths", "128", "--no-plot"]) == code


def test_a_failed_probe_exits_1(monkeypatch: pytest.MonkeyPatch) -> None:
    def probe_fails(*args: Any, **kwargs: Any) -> dict[str, Any]:
        raise RuntimeError("the probe worker failed: worker exited with code 1")

    monkeypatch.setattr(cli, "run_benchmark", probe_fails)
    assert cli.main(["--lengths", "128"]) == cli.EXIT_NOTHING_MEASURED


# -- the report, on hand-made results ------------------------------------------------------------

MEASURED_NATIVE: dict[str, Any] = {
    "status": "ok",
    "median_s": 10.0,
    "min_s": 8.0,
    "peak_mib": 6000.0,
    "compile_s": 1.5,
    "xla_memory": {"temp_size_in_bytes": 6174 * 2**20},
    "check": {"agrees": True, "max_abs_error_vs_float64": 3e-7},
    "nonfinite_outputs": 0,
}
OOM_NATIVE = {
    "status": "oom",
    "error": "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 25877000000 bytes.",
    "allocation_bytes": 25_877_000_000,
}
FAILED_BLOCKWISE = {
    "status": "failed",
    "error": "worker exited with code -11: Fatal Python error: Segmentation fault",
}


def hand_made_report() -> dict[str, Any]:
    """native ran at 8192, ran out of memory at 16384 and was not tried at 32768;
    blockwise ran at 8192 and 32768 and crashed at 16384; cudnn refused this platform."""
    report: dict[str, Any] = {
        "benchmark": "attention",
        "date": "2026-11-29 19:12 UTC",
        "platform": "cpu",
        "host": {"cpus": 2},
        "load_average": {"start": [1.2, 2.8, 3.7], "end": [2.1, 3.1, 3.5]},
        "load_warning": True,
        "config": {
            "lengths": [8192, 16384, 32768],
            "batch": 1,
            "heads": 12,
            "head_dim": 64,
            "dtype": "float32",
            "causal": False,
            "repeats": 3,
            "long_repeats": 1,
            "long_from": 32768,
            "address_limit_gib": 24.0,
            "memory_limit_gib": 20.0,
        },
        "implementations": [
            {"name": "native", "interpret": False},
            {"name": "blockwise", "interpret": False},
        ],
        "not_run": {"cudnn": ["needs an NVIDIA GPU, this is cpu"]},
        "source_changed_during_sweep": {},
        "results": {
            "native": {
                "8192": MEASURED_NATIVE,
                "16384": OOM_NATIVE,
                "32768": {"status": "skipped", "reason": "oom at 16384 already"},
            },
            "blockwise": {
                "8192": {
                    **MEASURED_NATIVE,
                    "median_s": 5.0,
                    "min_s": 6.0,
                    "peak_mib": 250.0,
                    "xla_memory": {"temp_size_in_bytes": 174 * 2**20},
                },
                "16384": FAILED_BLOCKWISE,
                "32768": {
                    **MEASURED_NATIVE,
                    "median_s": 97.0,
                    "min_s": 97.0,
                    "peak_mib": 632.0,
                    "xla_memory": {"temp_size_in_bytes": 696 * 2**20},
                    "check": {"agrees": False, "max_abs_error_vs_float64": 0.25},
                },
            },
        },
    }
    report["verdicts"] = verdicts(report)
    return report


def printed(report: dict[str, Any]) -> str:
    out = Console(file=io.StringIO(), width=250, color_system=None)
    print_report(report, out)
    text = out.file.getvalue()  # type: ignore[attr-defined]
    assert isinstance(text, str)
    return text


def rows_at(text: str, length: int) -> list[list[str]]:
    """The cells of the row for ``length`` in each printed table, in order."""
    lines = [line for line in text.splitlines() if re.match(rf"^│\s+{length} │", line)]
    return [[cell.strip() for cell in line.strip("│").split("│")] for line in lines]


def test_verdicts_on_results_that_ran_failed_and_were_skipped() -> None:
    assert verdicts(hand_made_report()) == [
        "at 8192, blockwise peak memory <= 1/8 of native's: yes (250 / 6,000 MiB = 1/24.0)",
        "at 8192, blockwise no slower than native: yes (time ratio 0.50: median 5,000 ms / "
        "10,000 ms; fastest call against fastest call 0.75)",
        "at 32768, blockwise within 2 GiB: yes (632 MiB); native in 24 GiB: could not "
        "(not tried: oom at 16384 already)",
    ]


def test_verdicts_say_no_and_name_the_failure() -> None:
    report = hand_made_report()
    blockwise = report["results"]["blockwise"]
    blockwise["8192"] = {**blockwise["8192"], "median_s": 12.0, "peak_mib": 1000.0}
    blockwise["32768"] = {**blockwise["32768"], "peak_mib": 3000.0}
    report["results"]["native"]["32768"] = OOM_NATIVE
    first, second, third = verdicts(report)
    assert first.startswith("at 8192, blockwise peak memory <= 1/8 of native's: no (1,000 / 6,000")
    assert second.startswith("at 8192, blockwise no slower than native: no (time ratio 1.20")
    assert third == (
        "at 32768, blockwise within 2 GiB: no (3,000 MiB); native in 24 GiB: could not "
        "(native: did not run: out of memory at 24 GiB (asked for 24.1 GiB at once))"
    )


def test_verdicts_are_n_a_with_the_reason_when_a_side_did_not_run() -> None:
    report = hand_made_report()
    del report["results"]["blockwise"]
    report["not_run"]["blockwise"] = ["registry status broken: ImportError: no module"]
    first, _, third = verdicts(report)
    assert first == (
        "at 8192, blockwise peak memory <= 1/8 of native's: n/a (blockwise did not run "
        "(registry status broken: ImportError: no module))"
    )
    assert third.startswith("at 32768, blockwise within 2 GiB: n/a (blockwise did not run")


def test_describe_failure_names_the_cause() -> None:
    assert describe_failure(OOM_NATIVE, 24.0) == (
        "did not run: out of memory at 24 GiB (asked for 24.1 GiB at once)"
    )
    watchdog = {"status": "oom", "limit_gib": 20.0, "error": "RSS 20.3 GiB passed ..."}
    assert describe_failure(watchdog, 24.0) == "did not run: out of memory at 20 GiB"
    assert describe_failure({"status": "timeout"}, 24.0) == "did not run: timeout"
    assert describe_failure(FAILED_BLOCKWISE, 24.0) == (
        "did not run: failed: worker exited with code -11: Fatal Python error: Segmentation fault"
    )
    assert describe_failure({"status": "skipped", "reason": "x"}, 24.0) == "skipped: x"
    assert describe_failure({"status": "refused", "reasons": ["a", "b"]}, 24.0) == "refused: a; b"


def test_the_tables_show_times_failures_ratios_and_compile() -> None:
    text = printed(hand_made_report())
    # Times: length | native ms, MiB | blockwise ms, MiB, time and memory vs native.
    # Compile: length | native compile s, XLA temp MiB | the same for blockwise.
    assert rows_at(text, 8192) == [
        ["8192", "10,000.0", "6,000", "5,000.0", "250", "0.50x", "0.042x"],
        ["8192", "1.50", "6,174", "1.50", "174"],
    ]
    assert rows_at(text, 16384) == [
        ["16384", "OOM", "", "error", "", "", ""],
        ["16384", "", "", "", ""],
    ]
    assert rows_at(text, 32768) == [
        ["32768", "-", "", "97,000.0 !", "632", "", ""],
        ["32768", "", "", "1.50", "696"],
    ]


def test_the_notes_name_every_failure_and_the_failed_check() -> None:
    text = printed(hand_made_report())
    assert "native at 16384: did not run: out of memory at 24 GiB (asked for 24.1 GiB at once)" in (
        text
    )
    assert "blockwise at 16384: did not run: failed: worker exited with code -11" in text
    assert "blockwise at 32768: output check failed: max |error| vs float64 reference 0.25" in text
    assert "not run: cudnn: needs an NVIDIA GPU, this is cpu" in text
    assert "load average (1, 5, 15 min): start 1.20/2.80/3.70, end 2.10/3.10/3.50; 2 CPUs" in text
    assert "warning: the 1-minute load average exceeded 1.5" in text
    for verdict in hand_made_report()["verdicts"]:
        assert verdict in text
    assert measured_cells(hand_made_report()) == 3


def test_the_plot_is_drawn_from_a_report(tmp_path: Path) -> None:
    png = tmp_path / "attention.png"
    plot_report(hand_made_report(), png)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_workers_peak_is_its_own_not_its_parents() -> None:
    # ru_maxrss survives exec: a worker started by a large parent reported the parent's
    # peak. The parent here holds 400 MiB while the worker, a few tens, reads its own.
    import subprocess
    import sys

    held = bytearray(400 << 20)
    held[::4096] = b"\x01" * len(held[::4096])
    code = "from seamline.adapters.measure.memory import peak_rss_bytes\nprint(peak_rss_bytes())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert int(done.stdout) < 300 << 20, done.stdout
    del held


def test_no_mask_measures_without_segment_ids_and_checks_against_the_reference() -> None:
    # The unmasked case of the memory-linear target (8192 tokens, no mask) must be a run
    # without segment ids at all, not the padded one relabelled: the spec says so, and
    # every checked row, the last one included, attends to every key.
    from seamline.adapters.bench_attention.worker import measure

    masked = measure("native", 128, {}, 1, causal=False)
    unmasked = measure("native", 128, {}, 1, causal=False, masked=False)
    assert masked["status"] == unmasked["status"] == "ok"
    assert "segments" in masked["spec"]
    assert "segments" not in unmasked["spec"], unmasked["spec"]
    assert unmasked["check"]["agrees"], unmasked["check"]
    assert masked["check"]["agrees"], masked["check"]


def test_its_help_names_values_as_the_other_commands_do() -> None:
    # `-o` is `--out` on every command that has an output (docs/cli.md); values are named
    # by what they are (N, DIR, SECONDS), not by the option's own name in capitals.
    parser = cli.build_parser()
    assert parser.parse_args(["-o", "elsewhere"]).out == Path("elsewhere")
    text = parser.format_help()
    assert "--out DIR, -o DIR" in text
    assert "--max-length N" in text
    assert not re.search(r"--[a-z-]+ [A-Z_]{3,}_[A-Z_]+", text), text  # MAX_LENGTH and kin
