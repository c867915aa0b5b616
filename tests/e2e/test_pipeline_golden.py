"""The whole pipeline, end to end, against the reference's golden embeddings.

The golden texts go through the real loader, bucketing, padding, batching, the
planner's attention, the compiled model and the npy sink; every window's vector
must equal sentence-transformers' to 1e-5. This is the claim `make run` relies on.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from seamline.core.config.user import user_trust
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.e2e.golden import GOLDEN, golden_pipeline_yaml

pytestmark = pytest.mark.slow


RUNS = {
    # The default: short windows packed into shared rows, batches of about 512 tokens;
    # `auto` serves them with the compiled CPU kernel (cpu-flash).
    "packed": ("{batch_tokens: 512}", "auto"),
    # One window per row, padded: what a model that cannot pack gets.
    "padded": ("{batch_size: 8, packing: false}", "auto"),
    # The reference attention, so that it too is held to sentence-transformers end to end.
    "packed-native": ("{batch_tokens: 512}", "native"),
}
#: What each run's attention resolves to on a CPU.
CHOSEN = {"auto": "cpu-flash", "native": "native"}


@pytest.fixture(scope="module", params=sorted(RUNS))
def run_outputs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, object]:
    out = tmp_path_factory.mktemp("golden-run")
    run, attention = RUNS[request.param]
    pipeline = out / "golden.yaml"
    texts, npy = str(GOLDEN / "texts.jsonl"), str(out / "emb.npy")
    yaml = golden_pipeline_yaml(f"golden-{request.param}", texts, npy, attention=attention, run=run)
    pipeline.write_text(yaml, encoding="utf-8")
    summary = Pipeline.from_yaml(pipeline, registry=Registry.discover(user_trust())).run()
    return out, summary


def test_every_window_matches_the_reference(run_outputs: tuple[Path, object]) -> None:
    out, _ = run_outputs
    golden = np.load(GOLDEN / "minilm_l6_v2.npz")
    ids = [
        json.loads(line)["id"]
        for line in (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").split("\n")
        if line.strip()
    ]
    expected = {
        (ids[t], int(w)): (tuple(int(x) for x in span), vector)
        for t, w, span, vector in zip(
            golden["L256_S64_text_index"],
            golden["L256_S64_window"],
            golden["L256_S64_span"],
            golden["L256_S64_embedding"],
            strict=True,
        )
    }
    matrix = np.load(out / "emb.npy")
    index = [json.loads(line) for line in (out / "emb.index.jsonl").read_text().splitlines()]
    assert len(index) == len(expected) == matrix.shape[0]
    worst = 0.0
    for row in index:
        span, vector = expected[(row["id"], row["window"])]
        assert tuple(row["span"]) == span
        worst = max(worst, float(np.max(np.abs(matrix[row["row"]] - vector))))
    assert worst <= 1e-5, f"max abs difference {worst:.2e}"


def test_summary_counts_and_bounded_compilations(run_outputs: tuple[Path, object]) -> None:
    out, summary = run_outputs
    assert summary.counts.documents == 64  # type: ignore[attr-defined]
    assert summary.counts.failed_documents == 0  # type: ignore[attr-defined]
    assert summary.counts.examples == 100  # type: ignore[attr-defined]
    # One compilation per length bucket at most: 16, 32, 64, 128, 256.
    assert 1 <= summary.compilations <= 5  # type: ignore[attr-defined]
    name = summary.pipeline.removeprefix("golden-")  # type: ignore[attr-defined]
    assert set(summary.attention.values()) == {CHOSEN[RUNS[name][1]]}  # type: ignore[attr-defined]
    tokens, positions = summary.counts.tokens, summary.counts.positions  # type: ignore[attr-defined]
    if name.startswith("packed"):
        assert positions <= 1.1 * tokens, (tokens, positions)  # measured 1.05
    else:
        assert positions >= 1.15 * tokens, (tokens, positions)  # measured 1.22
    manifest = json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))
    assert manifest["model"]["use"] == "bert-encoder"
    assert manifest["model"]["with"]["stride"] == 64
