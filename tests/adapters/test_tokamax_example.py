"""The third-party path with a real kernel library: examples/seamline-tokamax, installed by
`make setup`, is discovered by its entry point, listed, checked, and serves a pipeline."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.core.config import parse_pipeline
from seamline.core.config.user import user_trust
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import MemorySink, toy_registry

pytest.importorskip("seamline_tokamax", reason="examples/seamline-tokamax is not installed")

TEXTS = ["one two three", "four five", "six seven eight nine ten eleven", "twelve"]


def test_discovered_with_its_distribution() -> None:
    info = Registry.discover(user_trust()).get("attention", "tokamax")
    assert info.usable
    assert (info.distribution, info.version) == ("seamline-tokamax", "0.1.0")


def test_listed_by_seamline_components() -> None:
    result = CliRunner().invoke(app, ["components", "--kind", "attention"], env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    row = next(line for line in result.output.splitlines() if " tokamax " in line)
    assert "seamline-tokamax" in row
    assert "ok" in row


def run(attention: str) -> dict[str, np.ndarray]:
    discovered = Registry.discover(user_trust()).get("attention", "tokamax")
    registry = Registry(
        [
            *toy_registry().entries(),
            ComponentInfo(
                "attention",
                "tokamax",
                discovered.target,
                discovered.distribution,
                discovered.version,
                "ok",
                "",
                discovered.cls,
                discovered.contract_version,
            ),
        ]
    )
    text = (
        "pipeline: tokamax-toy\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        "model: {use: toy}\n"
        f"attention: {{use: {attention}}}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [4, 8]}\n"
    )
    MemorySink.reset()
    Orchestrator(parse_pipeline(text, "t.yaml", registry), registry).run()
    return {r.doc_id: np.asarray(r.vector) for r in MemorySink.records}


def test_a_pipeline_uses_it_and_agrees_with_native() -> None:
    with_tokamax = run("tokamax")
    with_native = run("native")
    assert with_tokamax.keys() == with_native.keys()
    assert len(with_tokamax) == len(TEXTS)
    for doc_id, vector in with_tokamax.items():
        np.testing.assert_allclose(vector, with_native[doc_id], atol=1e-5)
