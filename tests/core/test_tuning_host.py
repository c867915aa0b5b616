"""The tuning cache's key holds the machine: timings taken on one host are not used on another.

A tuning folder shared between machines (an NFS home, a baked image, a CI cache) ranked
the kernels of one node by the times of another, and the run said "from the tuning
cache": the key held ``device_kind: cpu`` and the kernels' settings as written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seamline.core.attention import host as host_module
from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.tuning import TUNING_VARIABLE
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import SPEEDS, TWO_CANDIDATES, stop_the_clock

PIPELINE = TWO_CANDIDATES.format(name="hosts")
AVX512 = {"cpu": "Xeon A", "cpus": 2, "features": "avx2,fma,avx512f"}
AVX2 = {"cpu": "Xeon A", "cpus": 2, "features": "avx2,fma"}
MANY = {"cpu": "Xeon A", "cpus": 64, "features": "avx2,fma,avx512f"}


@pytest.fixture
def timed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    monkeypatch.setenv(TUNING_VARIABLE, str(tmp_path / "tuning"))
    return stop_the_clock(monkeypatch, SPEEDS)


def run_on(monkeypatch: pytest.MonkeyPatch, host: dict[str, Any]) -> None:
    same = lambda platform, devices: dict(host)  # noqa: E731
    monkeypatch.setattr(tuning_module, "host_identity", same, raising=False)
    registry = toy_registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", registry), registry).run()


@pytest.mark.parametrize("other", [AVX2, MANY], ids=["fewer-features", "more-cpus"])
def test_timings_taken_on_one_host_are_not_used_on_another(
    timed: list[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, other: dict[str, Any]
) -> None:
    run_on(monkeypatch, AVX512)
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]
    timed.clear()
    run_on(monkeypatch, AVX512)
    assert timed == []  # the same host reads its entries
    run_on(monkeypatch, other)
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]
    entries = [json.loads(p.read_text()) for p in (tmp_path / "tuning").glob("attention-*.json")]
    assert len(entries) == 4  # the first host's entries are kept beside the other's
    assert sorted(str(e["about"]["host"]) for e in entries) == sorted(
        [str(AVX512)] * 2 + [str(other)] * 2
    )


def test_the_cpu_host_is_its_model_usable_cpus_and_simd_features(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    fields = {"model name": "Intel(R) Xeon(R) Platinum 8480+"}
    first = lambda names: next((fields[n] for n in names if n in fields), None)  # noqa: E731
    monkeypatch.setattr(host_module, "first_cpuinfo_field", first)
    monkeypatch.setattr(
        host_module, "read_cpu_features", lambda: frozenset({"fpu", "avx2", "fma", "amx_bf16"})
    )
    monkeypatch.setattr(host_module.os, "sched_getaffinity", lambda pid: {0, 3, 5})
    host_module._cpu.cache_clear()
    try:
        assert host_module.host_identity("cpu", 1) == {
            "cpu": "Intel(R) Xeon(R) Platinum 8480+",
            "cpus": 3,
            "features": "avx2,fma,amx_bf16",
        }
        assert host_module.host_identity("gpu", 8) == {"devices": 8}
    finally:
        host_module._cpu.cache_clear()


def test_this_host_is_in_what_the_entry_says_it_was_made_of(
    timed: list[str], tmp_path: Path
) -> None:
    registry = toy_registry()
    Orchestrator(parse_pipeline(PIPELINE, "p.yaml", registry), registry).run()
    entry = json.loads(next((tmp_path / "tuning").glob("attention-*.json")).read_text())
    host = entry["about"]["host"]
    assert host["cpus"] == host_module.usable_cpus() >= 1
    assert host["cpu"]
    assert host["features"]
