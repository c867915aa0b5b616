"""select: measure — the fastest serving candidate per shape, measured once, then cached."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pytest

from seamline.contracts import AttentionChosen, ConfigError, Fallback
from seamline.core.attention import measure as measure_module
from seamline.core.attention import tuning as tuning_module
from seamline.core.attention.plan import explain, tune
from seamline.core.attention.tuning import TUNING_VARIABLE, TuningCache
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.stops import stops_kept
from tests.core.test_stops import drop_a_stop
from tests.core.toy import MemorySink, RecordingMonitor, toy_registry
from tests.core.tuning_clock import stop_the_clock

TEXTS = [" ".join(["w"] * n) for n in range(1, 9)]  # buckets 4 and 8

# What each toy candidate "takes", in seconds, when the clock is replaced.
SPEEDS = {"native": 3e-3, "long-only": 1e-3, "off-by-ten": 5e-4, "uncompilable": 2e-3}


@pytest.fixture(autouse=True)
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    MemorySink.reset()
    RecordingMonitor.events.clear()
    directory = tmp_path / "tuning"
    monkeypatch.setenv(TUNING_VARIABLE, str(directory))
    return directory


@pytest.fixture
def timed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Replace the clock: each candidate takes SPEEDS[name]; returns who was timed."""
    return stop_the_clock(monkeypatch, SPEEDS, calls=5)


def pipeline(attention: str) -> str:
    return (
        "pipeline: measured\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {attention}\n"
        "monitors: [{use: recording}]\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )


def run(attention: str) -> dict[str, AttentionChosen]:
    registry = toy_registry()
    Orchestrator(parse_pipeline(pipeline(attention), "m.yaml", registry), registry).run()
    chosen = [e for e in RecordingMonitor.events if isinstance(e, AttentionChosen)]
    return {e.signature.split("x")[1]: e for e in chosen}


def test_the_fastest_serving_candidate_wins_whatever_the_list_order(timed: list[str]) -> None:
    chosen = run("{use: [native, long-only, never], select: measure, verify: false}")
    assert {k: e.chosen for k, e in chosen.items()} == {"Tq4": "long-only", "Tq8": "long-only"}
    assert "fastest measured: 1 ms (vs native 3 ms), measured now" in chosen["Tq4"].reason
    # 'never' refuses every shape: it is never timed, and the decision says why.
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]
    assert chosen["Tq4"].rejected["never"] == ("refuses head_dim 8",)


def test_a_second_run_reads_the_cache_and_times_nothing(timed: list[str], cache: Path) -> None:
    run("{use: auto, select: measure, verify: false}")
    files = sorted(cache.glob("attention-*.json"))
    assert len(files) == 2  # one per shape signature
    entry = json.loads(files[0].read_text(encoding="utf-8"))
    assert entry["about"]["jax"]
    assert entry["about"]["candidates"]
    timed.clear()
    RecordingMonitor.events.clear()
    chosen = run("{use: auto, select: measure, verify: false}")
    assert timed == []
    assert all("from the tuning cache" in e.reason for e in chosen.values())
    assert {e.chosen for e in chosen.values()} == {"off-by-ten"}


def test_a_cache_entry_is_never_written_through_a_link_planted_at_a_temporary_name(
    timed: list[str], cache: Path
) -> None:
    """The cache folder may be shared: a link at the old fixed ``.attention-KEY.json.tmp``
    had an entry written over the file it named."""
    run("{use: auto, select: measure, verify: false}")
    victim = cache.parent / "victim.txt"
    victim.write_text("must not change", encoding="utf-8")
    for entry in cache.glob("attention-*.json"):
        entry.unlink()
        (cache / f".{entry.name}.tmp").symlink_to(victim)
    run("{use: auto, select: measure, verify: false}")
    assert victim.read_text(encoding="utf-8") == "must not change"
    entries = sorted(cache.glob("attention-*.json"))
    assert len(entries) == 2
    assert not any(entry.is_symlink() for entry in entries)


def test_what_the_key_depends_on_measures_again(
    timed: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    run("{use: [native, long-only], select: measure, verify: false}")
    timed.clear()
    # Another jaxlib: every timing is stale.
    real = tuning_module.installed_version
    monkeypatch.setattr(
        tuning_module, "installed_version", lambda d: "9.9" if d == "jaxlib" else real(d)
    )
    run("{use: [native, long-only], select: measure, verify: false}")
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]
    timed.clear()
    # Another candidate in the set that serves: measured again too.
    run("{use: [native, long-only, uncompilable], select: measure, verify: false}")
    assert "uncompilable" in timed


def test_a_fast_candidate_that_fails_verification_gives_way_to_the_next_fastest(
    timed: list[str],
) -> None:
    chosen = run("{use: [native, off-by-ten], select: measure}")
    assert {e.chosen for e in chosen.values()} == {"native"}
    fallbacks = [e for e in RecordingMonitor.events if isinstance(e, Fallback)]
    assert {(f.failed, f.replacement) for f in fallbacks} == {("off-by-ten", "native")}
    assert "among those not demoted" in chosen["Tq4"].reason


def test_a_damaged_cache_file_is_measured_over(timed: list[str], cache: Path) -> None:
    run("{use: [native, long-only], select: measure, verify: false}")
    for path in cache.glob("attention-*.json"):
        path.write_text("{not json", encoding="utf-8")
    timed.clear()
    run("{use: [native, long-only], select: measure, verify: false}")
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]


@pytest.mark.parametrize(
    "damage",
    [
        {"median": "0.001"},  # a string where a number goes: it failed later, when ranked
        {"median": -1.0},
        {"calls": True},
        {"extra": 1},
    ],
    ids=["string", "negative", "boolean", "unknown-field"],
)
def test_an_entry_that_does_not_check_out_is_measured_over(
    timed: list[str], cache: Path, damage: dict[str, object]
) -> None:
    run("{use: [native, long-only], select: measure, verify: false}")
    for path in cache.glob("attention-*.json"):
        data = json.loads(path.read_text(encoding="utf-8"))
        for timing in data["timings"].values():
            timing.update(damage)
        path.write_text(json.dumps(data), encoding="utf-8")
    timed.clear()
    run("{use: [native, long-only], select: measure, verify: false}")
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]


def test_a_cache_entry_that_is_a_fifo_is_measured_over_without_waiting(
    timed: list[str], cache: Path
) -> None:
    run("{use: [native, long-only], select: measure, verify: false}")
    paths = list(cache.glob("attention-*.json"))
    for path in paths:
        path.unlink()
        os.mkfifo(path)
    timed.clear()
    done = threading.Thread(
        target=run, args=("{use: [native, long-only], select: measure, verify: false}",)
    )
    done.start()
    done.join(timeout=60)
    if done.is_alive():  # release it: a writer that opens and closes ends the wait
        for path in paths:
            with open(path, "wb"):
                pass
        done.join()
        pytest.fail("the run waited on a FIFO in the tuning cache")
    assert sorted(timed) == ["long-only", "long-only", "native", "native"]


def test_explain_reads_the_cache_but_never_measures(timed: list[str]) -> None:
    registry = toy_registry()
    resolved = parse_pipeline(
        pipeline("{use: [native, long-only], select: measure}"), "m.yaml", registry
    )
    before = explain(resolved, registry)
    assert timed == []
    assert all(b.measured is None for b in before.buckets)
    assert [b.chosen for b in before.buckets] == ["native", "native", "native"]
    assert "nothing measured for this shape" in before.buckets[0].reason
    results = tune(resolved, registry, TuningCache())
    assert len(timed) == 6  # 2 candidates x 3 buckets (4, 8 and max_length 16)
    assert all(not r.cached and r.entry is not None for r in results)
    after = explain(resolved, registry)
    assert [b.chosen for b in after.buckets] == ["long-only"] * 3
    assert all(b.measured is not None and b.measured.cached for b in after.buckets)
    timed.clear()
    again = tune(resolved, registry, TuningCache())
    assert timed == []
    assert all(r.cached for r in again)
    tune(resolved, registry, TuningCache(), again=True)
    assert len(timed) == 6


def test_tune_again_stopped_by_ctrl_c_keeps_the_times_it_had(
    timed: list[str], cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # --again deleted every entry before measuring it: Ctrl-C lost them, and the next
    # `select: measure` run measured again.
    registry = toy_registry()
    resolved = parse_pipeline(
        pipeline("{use: [native, long-only], select: measure}"), "m.yaml", registry
    )
    tune(resolved, registry, TuningCache())
    before = {p.name: p.read_bytes() for p in cache.glob("attention-*.json")}
    assert len(before) == 3

    def interrupted(attention: object, specs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(tuning_module, "time_candidate", interrupted)
    with pytest.raises(KeyboardInterrupt):
        tune(resolved, registry, TuningCache(), again=True)
    assert {p.name: p.read_bytes() for p in cache.glob("attention-*.json")} == before
    assert all(
        b.measured is not None and b.measured.cached for b in explain(resolved, registry).buckets
    )


def test_a_ctrl_c_python_dropped_stops_tune_before_the_next_bucket(
    timed: list[str], cache: Path
) -> None:
    # A Ctrl-C landing in a callback whose exceptions Python ignores (JAX's GC callback,
    # during its import) was dropped: the tune measured every bucket and exited 0.
    registry = toy_registry()
    resolved = parse_pipeline(
        pipeline("{use: [native, long-only], select: measure}"), "m.yaml", registry
    )
    with stops_kept():
        drop_a_stop()
        with pytest.raises(KeyboardInterrupt):
            tune(resolved, registry, TuningCache())
    assert timed == []
    assert list(cache.glob("attention-*.json")) == []


def test_measure_needs_something_to_choose_between() -> None:
    registry = toy_registry()
    with pytest.raises(ConfigError, match=r"m\.yaml:4:\d+: attention\.select is 'measure'"):
        parse_pipeline(pipeline("{use: native, select: measure}"), "m.yaml", registry)


def test_real_measurement_times_every_serving_candidate(cache: Path) -> None:
    # The real clock: only the structure is checked (speed belongs to benchmarks/).
    chosen = run("{use: [native, long-only, never], select: measure, verify: false}")
    assert {e.chosen for e in chosen.values()} <= {"native", "long-only"}
    for path in cache.glob("attention-*.json"):
        timings = json.loads(path.read_text(encoding="utf-8"))["timings"]
        assert set(timings) == {"native", "long-only"}
        for timing in timings.values():
            assert 0 < timing["fastest"] <= timing["median"] <= timing["slowest"]
            assert timing["calls"] >= 2
    assert measure_module.REPEATS >= 2
