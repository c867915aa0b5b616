"""The arithmetic behind whole_run.py's headline figures: what it counts and leaves out.

The benchmark itself needs torch (in .venv-golden) and minutes; these check, on
made-up logs, the two calculations a wrong figure would come from.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.common.model_under_test import model_under_test
from benchmarks.common.paths import before_environment, check_before
from benchmarks.overhead import cli_start, first_run
from benchmarks.throughput import whole_run
from seamline.core import GateFigures

ROOT = Path(__file__).parents[2]
MPNET_GOLDEN = ROOT / "tests" / "golden" / "mpnet_tiny"


def _batch(length: int, tokens: int, seconds: float) -> dict[str, object]:
    return {"event": "batch done", "length": length, "tokens": tokens, "seconds": seconds}


def test_steady_state_leaves_out_the_first_batch_of_each_length() -> None:
    finished = {"event": "run finished", "seconds": 9.0, "tokens": 1, "batches": 5}
    events = [
        _batch(256, 500, 4.0),  # first of 256: compiles, left out
        _batch(64, 500, 3.0),  # first of 64: left out
        _batch(256, 400, 0.1),
        _batch(64, 300, 0.1),
        _batch(256, 300, 0.2),
        {"event": "compiled"},
        {**finished, "compilations": 2},
    ]
    steady = whole_run.steady_state(events)
    assert steady["steady_tokens_per_s"] == pytest.approx(1000 / 0.4)
    assert steady["run_seconds"] == 9.0
    assert steady["compilations"] == 2


def test_useful_flops_count_real_tokens_and_pairs_within_a_window() -> None:
    minilm = model_under_test(ROOT / "examples" / "pipelines" / "embed-docs.yaml")
    dense = 6 * 2 * (4 * 384 * 384 + 2 * 384 * 1536)
    pair = 6 * 4 * 384
    assert minilm.useful_flops([3, 1]) == dense * 4 + pair * (9 + 1)


def test_the_model_under_test_is_the_pipelines_with_its_overrides() -> None:
    # The reference must load the checkpoint the run embeds with, at the run's length.
    minilm = model_under_test(
        ROOT / "examples" / "pipelines" / "embed-docs.yaml", ["model.with.max_length=128"]
    )
    assert minilm.component == "bert-encoder"
    assert (minilm.layers, minilm.hidden, minilm.feed_forward) == (6, 384, 1536)
    assert minilm.max_length == 128
    assert (minilm.checkpoint / "modules.json").is_file()
    assert minilm.tokenizer.name == "tokenizer.json"
    tiny = model_under_test(
        ROOT / "examples" / "pipelines" / "embed-docs-mpnet.yaml",
        [
            f"model.with.weights={MPNET_GOLDEN}",
            "model.with.sha256=null",
            "model.with.max_length=64",
        ],
    )
    assert tiny.component == "mpnet-encoder"
    assert tiny.checkpoint == MPNET_GOLDEN.resolve()
    arch = json.loads((MPNET_GOLDEN / "config.json").read_text(encoding="utf-8"))
    assert (tiny.layers, tiny.hidden, tiny.feed_forward) == (
        arch["num_hidden_layers"],
        arch["hidden_size"],
        arch["intermediate_size"],
    )


def test_a_pipeline_it_cannot_read_is_refused_before_anything_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Checked before the reference venv, so CI (which has none) sees this refusal.
    assert whole_run.main(["--pipeline", str(tmp_path / "missing.yaml")]) == 2
    assert "missing.yaml" in capsys.readouterr().err
    bad = tmp_path / "bad.yaml"
    source = (ROOT / "examples" / "pipelines" / "embed-docs.yaml").read_text(encoding="utf-8")
    bad.write_text(source.replace("max_length: 256", "max_length: 9999"), encoding="utf-8")
    assert whole_run.main(["--pipeline", str(bad)]) == 2
    assert "max_length 9999" in capsys.readouterr().err


def test_the_output_is_read_back_from_the_sink_the_pipeline_names(tmp_path: Path) -> None:
    # A run's rows, as the lancedb and parquet sinks lay them out, come back in the
    # shape the comparison takes, whichever of the two wrote them.
    import lancedb
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = pa.table(
        {
            "id": ["a.txt", "a.txt", "b.txt"],
            "window_index": pa.array([0, 1, 0], pa.int32()),
            "span_start": [0, 10, 0],
            "embedding": pa.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]], pa.list_(pa.float32(), 2)),
        }
    )
    pq.write_table(rows, tmp_path / "out.parquet")
    lancedb.connect(str(tmp_path)).create_table("out", rows)
    expected = [
        {"id": "a.txt", "window": 0, "embedding": [1.0, 0.0]},
        {"id": "a.txt", "window": 1, "embedding": [0.0, 1.0]},
        {"id": "b.txt", "window": 0, "embedding": [0.5, 0.5]},
    ]
    assert whole_run.records(tmp_path / "out.parquet") == expected
    assert whole_run.records(tmp_path / "out.lance") == expected
    root = Path(__file__).parents[2] / "examples" / "pipelines"
    assert whole_run.output_suffix(root / "embed-docs.yaml") == ".lance"
    assert whole_run.output_suffix(root / "embed-docs-jsonl.yaml") == ".jsonl"


def test_the_before_side_imports_seamline_from_the_folder_it_names(tmp_path: Path) -> None:
    # A stand-in for an earlier checkout's src trees in one folder: its seamline.core must
    # win over this checkout's editable install, or "before" would time today's code twice.
    for name in ("contracts", "core", "components", "adapters"):
        package = tmp_path / "seamline" / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text("BEFORE = True\n", encoding="utf-8")
    assert check_before(str(tmp_path)) is None
    env = before_environment(dict(os.environ), str(tmp_path))
    program = "import seamline.core as c; print(c.__file__, getattr(c, 'BEFORE', False))"
    said = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, check=True
    ).stdout.split()
    assert said == [str(tmp_path / "seamline" / "core" / "__init__.py"), "True"]


def test_one_src_tree_of_a_checkout_is_refused_before_any_run(tmp_path: Path) -> None:
    # precision.md said `--before /tmp/before/core/src`: that checkout's core under today's
    # adapters, which cannot import it; every "before" run failed, after the others ran.
    (tmp_path / "core" / "src" / "seamline" / "core").mkdir(parents=True)
    problem = check_before(str(tmp_path / "core" / "src")) or ""
    assert "seamline.contracts, seamline.components, seamline.adapters not in it" in problem
    assert "docs/cli.md" in problem
    for main in (whole_run.main, first_run.main, cli_start.main):
        with pytest.raises(SystemExit) as stop:
            main(["--before", str(tmp_path / "core" / "src")])
        assert stop.value.code == 2


def test_a_before_folder_without_seamline_is_a_usage_error(tmp_path: Path) -> None:
    assert "no seamline/" in (check_before(str(tmp_path)) or "")
    with pytest.raises(SystemExit) as stop:
        whole_run.main(["--before", str(tmp_path)])
    assert stop.value.code == 2


def test_the_precision_compared_is_the_one_the_run_logged() -> None:
    chose = {"event": "precision chosen", "precision": "bfloat16 (checked against float32: x)"}
    assert whole_run.chosen_precision([{"event": "batch done"}, chose]) == "bfloat16"
    assert whole_run.chosen_precision([{"event": "batch done"}]) == "float32"


def _figures(max_abs: float, min_cosine: float, neighbours: float | None) -> GateFigures:
    return GateFigures(
        windows=20, min_cosine=min_cosine, median_cosine=min_cosine, max_abs=max_abs,
        top_k=2, neighbours=neighbours, worst_neighbours=neighbours,
    )  # fmt: skip


def test_float32_is_held_to_parity_and_a_lower_precision_to_its_gate() -> None:
    # bfloat16 vectors 1.9e-3 from sentence-transformers' float32 keep the bfloat16
    # promise (the gate's min cosine) but would break float32's (1e-5).
    bf16_like = _figures(1.9e-3, 0.99998, 0.99)
    assert whole_run.disagreement("bfloat16", bf16_like) is None
    assert "differ by 0.0019" in (whole_run.disagreement("float32", bf16_like) or "")
    assert whole_run.disagreement("float32", _figures(4e-6, 1.0, 1.0)) is None
    assert whole_run.disagreement("float32", _figures(float("nan"), 1.0, 1.0))
    far = whole_run.disagreement("bfloat16", _figures(2e-2, 0.9991, 0.99))
    assert "min cosine 0.999100" in (far or "")
    lost = whole_run.disagreement("bfloat16", _figures(1e-3, 0.99999, 0.5))
    assert "neighbours" in (lost or "")


def test_only_windows_with_the_same_tokens_are_compared(tmp_path: Path) -> None:
    import numpy as np

    order = [{"id": "a", "window": 0}, {"id": "a", "window": 1}, {"id": "b", "window": 0}]
    theirs = np.asarray([[1.0, 0.0], [0.0, 1.0], [0.6, 0.8]], np.float32)
    np.save(tmp_path / "ref.npy", theirs)
    ours = [
        {"id": "b", "window": 0, "embedding": [0.8, 0.6]},  # re-tokenized: not comparable
        {"id": "a", "window": 0, "embedding": [1.0, 0.0]},
        {"id": "a", "window": 1, "embedding": [0.0, 1.0]},
    ]
    figures = whole_run.compare(order, [True, True, False], ours, tmp_path / "ref.npy")
    assert (figures.windows, figures.max_abs, figures.min_cosine) == (2, 0.0, 1.0)
    everything = whole_run.compare(order, [True, True, True], ours, tmp_path / "ref.npy")
    assert everything.max_abs == pytest.approx(0.2)
