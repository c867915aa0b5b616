"""first_run.py times real first runs and reads their logs right.

Its figures are what a user's first run of a pipeline costs in each precision
(docs/performance.md); a count of compilations read from the wrong log line, or a
cache that was not empty, would report a first run that never happened.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from benchmarks.overhead import first_run

LOG = [
    '{"event": "Compiling jit(seamline_step) with global shapes", "level": "warning"}',
    '{"event": "Finished XLA compilation of jit(seamline_step) in 0.5 sec"}',
    '{"event": "Finished XLA compilation of jit(verification) in 0.25 sec"}',
    "a line that is not JSON",
    '{"event": "Finished XLA compilation of jit(seamline_step) in 0.75 sec"}',
    '{"event": "precision chosen", "precision": "bfloat16 (checked against float32)"}',
]


def test_the_log_gives_compilations_per_program_and_the_choice() -> None:
    found = first_run.parse_log(LOG)
    assert found["compilations"] == 3
    assert found["compile_seconds"] == pytest.approx(1.5)
    assert found["programs"] == {
        "jit(seamline_step)": {"count": 2, "seconds": 1.25},
        "jit(verification)": {"count": 1, "seconds": 0.25},
    }
    assert found["precision"] == "bfloat16 (checked against float32)"
    assert first_run.parse_log(LOG[:3])["precision"] == "float32"  # no negotiation ran


def test_each_precision_is_timed_from_an_empty_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for index in range(2):
        (corpus / f"doc{index}.txt").write_text(f"Document {index}: a few words.", "utf-8")

    def two_documents(docs: int | None, workdir: Path) -> tuple[Path, int]:
        copy = workdir / "corpus"
        shutil.copytree(corpus, copy)
        return copy, 2

    monkeypatch.setattr(first_run, "first_of_bench_corpus", two_documents)
    argv = ["--docs", "2", "--repeats", "2", "--precisions", "float32,auto"]
    assert first_run.main([*argv, "--out", str(tmp_path)]) == 0
    report = json.loads((tmp_path / "first_run.json").read_text(encoding="utf-8"))
    float32, auto = report["sides"]["float32"], report["sides"]["auto"]
    # The second repeat compiles as much as the first: nothing was found in a cache.
    for side in (float32, auto):
        counts = [run["compilations"] for run in side["runs"]]
        assert counts[0] >= 2
        assert counts[0] == counts[1]
        assert side["compile_seconds"] > 0
    assert float32["chosen"] == ["float32"]
    assert auto["chosen"] in (["float32"], ["bfloat16"])  # bfloat16 where it is native
    if auto["chosen"] == ["bfloat16"]:  # the gate compiled float32 and bfloat16 steps
        assert auto["compilations"] > float32["compilations"]
    assert float32["vs_float32"] == 1.0


def test_a_before_folder_without_seamline_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        first_run.main(["--before", str(tmp_path)])
    assert exit_info.value.code == 2
