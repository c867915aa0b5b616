"""The pure parts of benchmarks/throughput/precision.py: how it asks seamline for a precision,
reads back what a run chose, and measures how far two sets of embeddings are apart.

The benchmark itself needs .venv-ref (torch, OpenVINO, ONNX Runtime) and minutes; these
check, on made-up vectors and summaries, the figures a wrong table would come from.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks.throughput import precision
from seamline.core.precision.gate import nearest, neighbours_kept


def _circle(*degrees: float) -> np.ndarray:
    radians = np.radians(np.asarray(degrees))
    return np.stack([np.cos(radians), np.sin(radians)], axis=1)


def test_the_flag_is_the_precision_field_or_the_models_dtype() -> None:
    assert precision.seamline_flag("precision", "auto") == "precision=auto"
    assert "require_native: false" in precision.seamline_flag("precision", "bfloat16")
    assert precision.seamline_flag("dtype", "bfloat16") == "model.with.dtype=bfloat16"


def test_the_chosen_precision_comes_from_the_decision_then_the_attention_then_the_ask() -> None:
    decided = {"precision": {"chosen": "float32", "mode": "auto"}}
    assert precision.chosen_precision(decided, "auto") == "float32"
    recorded = {"provenance": {"precision": {"chosen": "bfloat16"}}}
    assert precision.chosen_precision(recorded, "auto") == "bfloat16"
    signatures = {"attention": {"B2xTq256xTk256xN12xK12xH32:bfloat16:segments,cpu": "cpu-flash"}}
    assert precision.chosen_precision(signatures, "float32") == "bfloat16"
    assert precision.chosen_precision({}, "float32") == "float32"


def test_a_run_keeps_its_gate_records_in_the_benchmarks_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A record in the user's cache, made by an earlier build of the same version, would
    let ``auto`` skip the gate and report figures this code never measured."""
    seen: dict[str, Any] = {}

    def refuse(argv: list[str], **options: Any) -> subprocess.CompletedProcess[str]:
        seen.update(options["env"])
        return subprocess.CompletedProcess(argv, 2, "", "stopped by the test")

    monkeypatch.setattr(precision.subprocess, "run", refuse)
    with pytest.raises(precision.SideFailed):
        precision.run_seamline(
            "auto", "precision", tmp_path / "corpus", tmp_path / "out.jsonl",
            tmp_path / "cache", tmp_path / "p.yaml", [], records=tmp_path / "records",
        )  # fmt: skip
    assert seen["SEAMLINE_PRECISION_DIR"] == str(tmp_path / "records")
    assert seen["SEAMLINE_CACHE_DIR"] == str(tmp_path / "cache")


def test_nearest_never_counts_a_row_as_its_own_neighbour() -> None:
    vectors = _circle(0, 10, 30, 70)
    found = nearest(vectors, 1, chunk=3)  # chunks that do not divide the rows
    assert found[:, 0].tolist() == [1, 0, 1, 2]


def test_identical_vectors_agree_completely() -> None:
    vectors = _circle(0, 10, 30, 70, 150)
    found = precision.agreement(vectors, vectors.copy(), k=2)
    assert found["max_abs_difference"] == 0.0
    assert found["cosine_min"] == pytest.approx(1.0)
    assert found["neighbours_kept_mean"] == 1.0
    assert found["neighbours_kept_min"] == 1.0


def test_a_moved_vector_costs_cosine_and_the_neighbours_it_swaps() -> None:
    reference = _circle(0, 10, 30, 70)
    moved = _circle(0, 10, 30, 45)  # row 3 now nearest to row 2 still, row 2 to row 3 now
    found = precision.agreement(reference, moved, k=1)
    assert found["cosine_min"] == pytest.approx(np.cos(np.radians(25)))
    assert found["cosine_median"] == pytest.approx(1.0)
    # Row 2's nearest was row 1 (20 degrees), now row 3 (15): one row of four lost it.
    assert found["neighbours_kept_mean"] == pytest.approx(0.75)
    assert found["neighbours_kept_min"] == 0.0
    assert found["max_abs_difference"] == pytest.approx(np.abs(reference[3] - moved[3]).max())


def test_a_tie_is_not_a_lost_neighbour() -> None:
    # Rows 1 and 2 are the same text (the same vector): under the reference, row 0's and
    # row 3's nearest is either. Each other side lists one of them, one the other.
    reference = _circle(0, 10, 10, 80)
    for other, listed in ((_circle(0, 10, 9.999, 80), 2), (_circle(0, 9.999, 10, 80), 1)):
        assert nearest(other, 1)[0, 0] == listed
        assert neighbours_kept(reference, other, 1).tolist() == [1.0] * 4


def test_a_tie_float32_round_off_split_is_still_a_tie() -> None:
    """float32 gives one text at two places of a batch vectors ~1e-7 apart in cosine: the
    copies of a repeated sentence were not tied exactly, and bfloat16 was refused for
    listing one copy before the other (83.5 % of neighbours "kept" over 20 copies)."""
    reference = _circle(0, 10, 10 + 2e-6, 80)  # row 0's nearest: row 1, by ~6e-9
    candidate = _circle(0, 10 + 1e-3, 10, 80)  # ... row 2 under the candidate
    assert nearest(candidate, 1)[0, 0] == 2
    assert neighbours_kept(reference, candidate, 1).tolist() == [1.0] * 4
    far = _circle(0, 10, 10.5, 80)  # half a degree: a real neighbour, lost
    assert neighbours_kept(far, candidate, 1)[0] == 0.0


def test_k_is_capped_by_the_number_of_other_rows() -> None:
    vectors = _circle(0, 10, 30)
    assert precision.agreement(vectors, vectors, k=10)["neighbours"] == 2


def test_agreement_refuses_vectors_of_different_shapes() -> None:
    with pytest.raises(ValueError, match="cannot compare"):
        precision.agreement(_circle(0, 10, 30), _circle(0, 10))


def test_every_reference_side_names_a_backend_the_reference_worker_runs() -> None:
    from benchmarks.throughput import _precision_reference

    assert set(precision.REFERENCE_SIDES.values()) <= set(_precision_reference.BACKENDS)
    half = {precision.REFERENCE_SIDES[side] for side in precision.GPU_SIDES}
    assert half == set(_precision_reference.HALF_PRECISIONS)


def test_the_half_precision_torch_sides_run_only_when_named() -> None:
    """They are for a GPU (device_check.sh names them); on a CPU torch float16 is slow."""
    assert not set(precision.GPU_SIDES) & set(precision.DEFAULT_SIDES)
    assert set(precision.DEFAULT_SIDES) | set(precision.GPU_SIDES) == set(precision.SIDES)
    assert not set(precision.EXPORTED_SIDES) & set(precision.GPU_SIDES)
