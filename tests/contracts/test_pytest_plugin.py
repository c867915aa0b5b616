"""The pytest plugin, as a third party meets it: loaded by its pytest11 entry point, idle
unless asked, and writing conformance records with --seamline-record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

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
    result = pytest_in(tmp_path, "-k", "plain or config", f"--seamline-record={records}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "passing conformance record for attention:native" in result.stdout
    (path,) = records.glob("attention-native-*.json")
    record = ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    assert record.passed
    assert record.distribution == "seamline-components"
    checks = {r.check for r in record.results}
    assert "feature_case[plain-f32]" in checks
    assert "config_rejects_unknown_fields" in checks
