"""The pytest plugin, as a third party meets it: loaded by its pytest11 entry point, idle
unless asked, and writing conformance records with --seamline-record."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from seamline.contracts.conformance import ConformanceRecord

SUITE = """\
import pytest
from seamline.components.attention.native import NativeAttention
from seamline.contracts.testing import AttentionContract


class TestNative(AttentionContract):
    @pytest.fixture
    def attention(self):
        return NativeAttention(NativeAttention.Config())
"""


def pytest_in(directory: Path, *args: str) -> subprocess.CompletedProcess[str]:
    (directory / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
        cwd=directory,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def test_registered_and_idle_unless_asked(tmp_path: Path) -> None:
    (tmp_path / "test_nothing.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    result = pytest_in(tmp_path, "--help")
    assert "--seamline-record" in result.stdout
    assert "--seamline-max-examples" in result.stdout
    result = pytest_in(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "seamline" not in result.stdout  # nothing to say when not asked
    assert not list(tmp_path.rglob("*.json"))


def test_writes_a_record_per_component_tested(tmp_path: Path) -> None:
    (tmp_path / "test_native.py").write_text(SUITE, encoding="utf-8")
    records = tmp_path / "records"
    result = pytest_in(tmp_path, "--seamline-max-examples=1", f"--seamline-record={records}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passing conformance record for attention:native" in result.stdout
    (path,) = records.glob("attention-native-*.json")
    record = ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    assert record.passed
    assert record.distribution == "seamline-components"
    checks = {r.check for r in record.results}
    assert "feature_case[plain-f32]" in checks
    assert "config_rejects_unknown_fields" in checks
    assert "whole_suite" not in checks


def test_a_selection_writes_no_record_and_keeps_the_one_there(tmp_path: Path) -> None:
    """``-k`` with a check that cannot fail recorded a passing record, and a component that
    failed the whole suite became trusted; then a FAILING record of the selection replaced
    the passing one kept there, demoting the component under ``require_conformance``."""
    (tmp_path / "test_native.py").write_text(SUITE, encoding="utf-8")
    (tmp_path / "test_other.py").write_text("def test_ok():\n    pass\n", encoding="utf-8")
    records = tmp_path / "records"
    kept = keep_a_passing_record(records, "attention-native-0.json")
    result = pytest_in(tmp_path, "-k", "plain or config", f"--seamline-record={records}")
    assert_no_record_written(result, "attention:native", records, kept)


def keep_a_passing_record(records: Path, name: str) -> dict[Path, bytes]:
    """A passing record as a whole suite left it (a file of the name save() would choose is
    not needed: no record may be written at all), and every file's bytes there."""
    records.mkdir(parents=True, exist_ok=True)
    (records / name).write_text('{"a passing record": "kept as it is"}', encoding="utf-8")
    return {path: path.read_bytes() for path in records.iterdir()}


def assert_no_record_written(
    result: subprocess.CompletedProcess[str], target: str, records: Path, kept: dict[Path, bytes]
) -> None:
    out = result.stdout + result.stderr
    assert "conformance record for" not in result.stdout, out
    (said,) = [line for line in result.stdout.splitlines() if target in line]
    assert said.startswith(f"seamline: no conformance record written for {target} "), out
    assert "checks ran; a record proves conformance only when the whole suite ran" in said
    assert "run the whole suite to record" in said
    assert {path: path.read_bytes() for path in records.iterdir()} == kept


MONITOR_SUITE = """\
from seamline.components.conformance import LogMonitorConformance


class TestLog(LogMonitorConformance):
    pass
"""


MEMORY_SUITE = """\

from seamline.components.conformance import MemoryMonitorConformance


class TestMemory(MemoryMonitorConformance):
    pass
"""


def test_a_selection_of_whole_suites_records_each_as_it_ran(tmp_path: Path) -> None:
    """``-k TestLoader`` ran the loader's whole suite, yet its record failed (and replaced
    a passing one): the checks deselected of another suite were counted against every
    record. Here two suites of one kind: the log monitor's runs whole, the memory
    monitor's is deselected whole."""
    (tmp_path / "test_two.py").write_text(MONITOR_SUITE + MEMORY_SUITE, encoding="utf-8")
    records = tmp_path / "records"
    result = pytest_in(
        tmp_path, "-k", "TestLog", "--seamline-max-examples=1", f"--seamline-record={records}"
    )
    assert "passing conformance record for monitor:log" in result.stdout, result.stdout
    (path,) = records.glob("monitor-*.json")  # none for memory: none of it ran
    assert ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8")).passed


def recorded(records: Path, name: str) -> ConformanceRecord:
    (path,) = records.glob(f"*-{name}-*.json")
    return ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8"))


def whole_suite_problem(record: ConformanceRecord) -> str | None:
    found = [r for r in record.results if r.check == "whole_suite"]
    assert all(r.outcome == "error" for r in found)
    return found[0].message if found else None


@pytest.fixture(scope="module")
def log_suite_recorded(
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, tuple[subprocess.CompletedProcess[str], Path]]:
    """The log monitor's whole suite run with ``--seamline-record`` at three verbosities
    (pytest_in gives -q: then -qq, 0 and -v), each into a records folder of its own: the
    runs test_the_plugin_s_lines_start_lines_of_their_own reads; the record of the run at
    pytest's default verbosity is the one test_checks_chosen_by_node_id_write_no_record
    keeps."""
    folder = tmp_path_factory.mktemp("log-suite")
    (folder / "test_log.py").write_text(MONITOR_SUITE, encoding="utf-8")
    runs = {}
    for verbosity in ("-q", "-v", "-vv"):
        records = folder / f"records{verbosity}"
        runs[verbosity] = (pytest_in(folder, verbosity, f"--seamline-record={records}"), records)
    return runs


def test_checks_chosen_by_node_id_write_no_record(
    tmp_path: Path, log_suite_recorded: dict[str, tuple[subprocess.CompletedProcess[str], Path]]
) -> None:
    """One check named by its node id made a passing record ("1 passed"), then a FAILING one
    that replaced the passing record kept there: neither proves anything of the suite."""
    (tmp_path / "test_log.py").write_text(MONITOR_SUITE, encoding="utf-8")
    result, whole = log_suite_recorded["-v"]  # the whole suite: recorded
    assert "passing conformance record for monitor:log" in result.stdout, result.stdout
    records = tmp_path / "records"
    shutil.copytree(whole, records)
    kept = {path: path.read_bytes() for path in records.iterdir()}
    assert recorded(records, "log").passed
    node = "test_log.py::TestLog::test_accepts_odd_values"
    result = pytest_in(tmp_path, node, f"--seamline-record={records}")
    assert "1 passed" in result.stdout, result.stdout + result.stderr
    assert_no_record_written(result, "monitor:log", records, kept)
    assert "1 of 10 checks ran" in result.stdout, result.stdout


def test_a_record_under_xdist_is_of_the_whole_suite_or_none(tmp_path: Path) -> None:
    """``-n 2 -k ...`` made a passing record of two checks: xdist's workers deselect, and
    the controller that writes the record never heard of it. (Each worker also wrote a
    record of its share, which the controller's then replaced.)"""
    (tmp_path / "test_log.py").write_text(MONITOR_SUITE, encoding="utf-8")
    records = tmp_path / "records"
    result = pytest_in(tmp_path, "-n", "2", f"--seamline-record={records}")
    assert result.stdout.count("conformance record for") == 1, result.stdout + result.stderr
    assert "passing conformance record for monitor:log" in result.stdout, result.stdout
    record = recorded(records, "log")
    assert record.passed
    assert whole_suite_problem(record) is None
    kept = {path: path.read_bytes() for path in records.iterdir()}
    result = pytest_in(tmp_path, "-n", "2", "-k", "odd or unknown", f"--seamline-record={records}")
    assert "passed" in result.stdout, result.stdout + result.stderr
    assert_no_record_written(result, "monitor:log", records, kept)


def test_the_plugin_s_lines_start_lines_of_their_own(
    log_suite_recorded: dict[str, tuple[subprocess.CompletedProcess[str], Path]],
) -> None:
    # `-q` printed "[100%]seamline: passing conformance record ...": the plugin wrote when
    # the session finished, before pytest's terminal ended the progress line.
    for verbosity in ("-q", "-v", "-vv"):  # pytest_in gives -q: -qq, then 0, then -v
        result, _ = log_suite_recorded[verbosity]
        lines = result.stdout.splitlines()
        assert any(line.startswith("seamline: passing") for line in lines), result.stdout
        assert not [line for line in lines if "seamline:" in line[1:]], result.stdout


def test_only_conformance_checks_left_out_make_a_record_partial(tmp_path: Path) -> None:
    """Deselecting an author's other tests (``-m "not slow"``) proves nothing less."""
    (tmp_path / "test_log.py").write_text(MONITOR_SUITE, encoding="utf-8")
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n", encoding="utf-8")
    records = tmp_path / "records"
    result = pytest_in(tmp_path, "-k", "not test_other", f"--seamline-record={records}")
    assert "1 deselected" in result.stdout, result.stdout + result.stderr
    assert "passing conformance record for monitor:log" in result.stdout, result.stdout
    assert recorded(records, "log").passed


def test_a_record_whose_checks_were_not_counted_fails() -> None:
    """Reports from a process that did not count the suite (no size on them): whether the
    whole suite ran is unknown, so the record cannot pass."""
    from seamline.contracts.testing._common import IDENTITY_PROPERTY
    from seamline.contracts.testing.results import SUITE_SIZE_PROPERTY, Collector

    about = (
        '{"kind": "monitor", "name": "log", "class": "m:Log", "contract_version": "1.0", '
        '"config": {}}'
    )

    def report(check: str, size: int | None) -> Any:
        properties = [(IDENTITY_PROPERTY, about)]
        properties += [(SUITE_SIZE_PROPERTY, size)] if size is not None else []
        return SimpleNamespace(
            nodeid=f"test_x.py::TestLog::test_{check}",
            when="call",
            passed=True,
            skipped=False,
            failed=False,
            user_properties=properties,
        )

    for size, whole in ((None, False), (3, False), (2, True)):
        collector = Collector()
        collector.pytest_runtest_logreport(report("one", size))
        collector.pytest_runtest_logreport(report("two", size))
        (record,) = collector.records_to_keep()  # seamline check's table: a failing row
        assert record.passed is whole, (size, record.results)
        written, left_out = collector.records_of_whole_suites()  # the plugin's: no record
        assert len(written) == int(whole), (size, written)
        assert len(left_out) == int(not whole), (size, left_out)
    uncounted = Collector(results=collector.results, classes_of=collector.classes_of)
    (record,) = uncounted.records_to_keep()
    assert "did not count the checks of test_x.py::TestLog" in str(whole_suite_problem(record))
    (_, (left_out,)) = uncounted.records_of_whole_suites()
    assert (left_out.kind, left_out.name) == ("monitor", "log")
    assert "did not count the checks of test_x.py::TestLog" in left_out.why
    three = {"test_x.py::TestLog": 3}
    partial = Collector(collector.results, [], collector.classes_of, three, collector.ran_in)
    assert partial.records_of_whole_suites()[1][0].why.startswith("2 of 3 checks ran; ")


def test_a_failures_message_leaves_out_hypothesis_notes() -> None:
    # `seamline check`'s table held, for a random case, 23 lines of JAX's internal paths
    # (hypothesis's "Explanation: These lines were always and only run by failing ...").
    from types import SimpleNamespace

    from seamline.contracts.testing.results import _failure_message

    message = (
        "AssertionError: disagrees with the exact reference by 0.31 for B=1 Tq=8\n"
        "Falsifying example: agrees(\n    case=AttentionCase(batch=1),\n)\n"
        "Explanation:\n    These lines were always and only run by failing examples:\n"
        "        /site-packages/jax/_src/abstract_arrays.py:72\n"
        "You can reproduce this example by temporarily adding @reproduce_failure(...)"
    )
    report = SimpleNamespace(longrepr=SimpleNamespace(reprcrash=SimpleNamespace(message=message)))
    shown = _failure_message(report)  # type: ignore[arg-type]
    assert shown.startswith("disagrees with the exact reference by 0.31 for B=1 Tq=8")
    assert "case=AttentionCase(batch=1)" in shown  # which case: kept
    assert "abstract_arrays" not in shown
    assert "reproduce" not in shown


PLAIN = """\
from typing import ClassVar

from seamline.components.monitors.log import LogMonitor


class PlainMonitor(LogMonitor):
    name: ClassVar[str] = "acme-plain"
"""

PLAIN_SUITE = """\
import pytest
from acme_plain import PlainMonitor
from seamline.components.conformance import LogMonitorConformance


class TestPlain(LogMonitorConformance):
    @pytest.fixture
    def monitor(self, _captured):
        return PlainMonitor(PlainMonitor.Config())
"""


def install_acme_plain(site: Path) -> None:
    """``acme-plain`` as an installer leaves it: its module listed in its RECORD."""
    info = site / "acme_plain-0.1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: acme-plain\nVersion: 0.1.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[seamline.monitor]\nacme-plain = acme_plain:PlainMonitor\n", encoding="utf-8"
    )
    (site / "acme_plain.py").write_text(PLAIN, encoding="utf-8")
    lines = ["acme_plain.py,,", *(f"{info.name}/{f},," for f in ("METADATA", "RECORD"))]
    (info / "RECORD").write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_a_record_of_code_that_is_not_the_installed_distribution_s_is_credited_to_none(
    tmp_path: Path, monkeypatch: Any
) -> None:
    # Tests run from a source folder ahead of an installed build (PYTHONPATH=src, pytest's
    # pythonpath) tested the source, and the record was credited to the installed build:
    # `require_conformance` then trusted installed code that failed the suite.
    install_acme_plain(tmp_path / "site")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "acme_plain.py").write_text(PLAIN, encoding="utf-8")
    (tmp_path / "test_plain.py").write_text(PLAIN_SUITE, encoding="utf-8")
    monkeypatch.delenv("SEAMLINE_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user allowlist
    args = ("--seamline-max-examples=1",)  # the whole suite: a selection records nothing
    for path, credited in (("site", "acme-plain"), (f"src{os.pathsep}site", None)):
        monkeypatch.setenv("PYTHONPATH", path)
        records = tmp_path / f"records-{credited}"
        result = pytest_in(tmp_path, *args, f"--seamline-record={records}")
        assert "conformance record for monitor:acme-plain" in result.stdout, result.stdout
        (saved,) = records.glob("monitor-acme-plain-*.json")
        record = ConformanceRecord.model_validate_json(saved.read_text(encoding="utf-8"))
        assert record.distribution == credited
        said = "it is credited to no distribution, so it cannot earn trust"
        assert (said in result.stdout) is (credited is None), result.stdout
    assert "src/acme_plain.py, which is not a file of distribution 'acme-plain'" in result.stdout


def test_the_collector_is_a_hashable_plugin_object() -> None:
    """pytest before 9.1 keeps plugin objects in a set: ``seamline check`` ended
    "unhashable type: 'Collector'" on pytest 8.0, which the suites support."""
    from seamline.contracts.testing.results import Collector

    one, other = Collector(), Collector()
    assert len({one, other}) == 2  # by identity: two empty collectors are two plugins
