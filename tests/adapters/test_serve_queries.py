"""``/v1/embeddings`` with ``input_type``: one server embeds search queries and documents.

A retrieval model such as e5 is trained with ``"query: "`` before a query and
``"passage: "`` before a document. The server runs such a model (the family checkpoint
``tests/golden/family/e5-mean``, whose goldens ``tests/components/test_bert_family.py``
checks the in-process embedder against), and each answer must be what ``Embedder``
gives for the same texts on the side the request named, within 1e-6.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.core.config.user import user_trust
from seamline.core.embedder import Embedder
from seamline.core.registry import Registry
from tests.adapters.serving import Server, error_of, pipeline_text, serving

E5 = Path(__file__).resolve().parents[1] / "golden" / "family" / "e5-mean"
MODEL = {
    "use": "bert-encoder",
    "with": {"weights": str(E5), "prefix": {"document": "passage: ", "query": "query: "}},
}
TEXTS = ["how do seams make kernels swappable?", "A run that stops can be resumed."]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("serve-queries")
    model = json.dumps(MODEL)  # JSON is YAML: the same mapping in the pipeline file
    (folder / "pipeline.yaml").write_text(pipeline_text(model=model), encoding="utf-8")
    with serving(folder, Path("pipeline.yaml")) as running:
        running.wait_ready()
        yield running


def side(queries: bool) -> np.ndarray:
    with Embedder(MODEL, "native", registry=Registry.discover(user_trust())) as embedder:
        vectors = embedder.encode(TEXTS, queries=queries)
    assert isinstance(vectors, np.ndarray)
    return vectors


def vectors_of(server: Server, **fields: Any) -> np.ndarray:
    with server.client() as client:
        response = client.post("/v1/embeddings", json={"input": TEXTS, **fields})
    assert response.status_code == 200, response.text
    return np.asarray([item["embedding"] for item in response.json()["data"]])


def test_input_type_chooses_the_side_and_documents_are_the_default(server: Server) -> None:
    queries, documents = side(True), side(False)
    assert float(np.max(np.abs(queries - documents))) > 1e-2  # the prefixes differ
    np.testing.assert_allclose(vectors_of(server, input_type="query"), queries, atol=1e-6)
    np.testing.assert_allclose(vectors_of(server, input_type="document"), documents, atol=1e-6)
    np.testing.assert_allclose(vectors_of(server), documents, atol=1e-6)
    np.testing.assert_allclose(vectors_of(server, input_type=None), documents, atol=1e-6)


@pytest.mark.parametrize("value", ["passage", "QUERY", 1, ["query"]])
def test_another_input_type_is_refused_naming_the_field(server: Server, value: Any) -> None:
    with server.client() as client:
        response = client.post("/v1/embeddings", json={"input": TEXTS, "input_type": value})
    assert response.status_code == 400, response.text
    error = error_of(response)
    assert (error["code"], error["param"]) == ("invalid_value", "input_type")
    assert '"document" (the default) or "query"' in error["message"]
