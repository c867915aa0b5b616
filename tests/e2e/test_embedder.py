"""``Embedder.encode`` from Python, against sentence-transformers' golden vectors.

The golden texts embedded in-process must equal the reference's vectors: window 0 of
each text at 256 tokens is exactly what ``SentenceTransformer.encode`` returns for
it (truncation), and every window is what a run writes. The rest: texts from several
threads batched together, each caller getting its own rows; a single string; bad
input; and silence on standard output.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from seamline.contracts import SeamCall
from seamline.core.config.user import user_trust
from seamline.core.embedder import Embedder
from seamline.core.registry import Registry
from tests.e2e.golden import GOLDEN, golden_pipeline_yaml

PREFIX = "L256_S64_"

pytestmark = pytest.mark.slow


def golden_pipeline(directory: Path, attention: str = "auto") -> Path:
    path = directory / "embed.yaml"
    yaml = golden_pipeline_yaml("embed", "texts.jsonl", "out/emb.npy", attention=attention)
    path.write_text(yaml, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def texts() -> list[str]:
    lines = (GOLDEN / "texts.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line)["text"] for line in lines]


@pytest.fixture(scope="module")
def golden() -> dict[str, Any]:
    with np.load(GOLDEN / "minilm_l6_v2.npz") as data:
        return {key[len(PREFIX) :]: data[key] for key in data.files if key.startswith(PREFIX)}


class Calls:
    """Counts the model's ``apply`` calls (one per batch) the embedder makes."""

    def __init__(self) -> None:
        self.applies = 0

    name = "calls"

    def bind(self, publish: Any) -> None:
        pass

    def observe(self, event: Any) -> None:
        if isinstance(event, SeamCall) and event.operation == "apply":
            self.applies += 1

    def close(self) -> None:
        pass


@pytest.fixture(scope="module")
def calls() -> Calls:
    return Calls()


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory, calls: Calls) -> Any:
    directory = tmp_path_factory.mktemp("embedder")
    with Embedder.from_pipeline(
        golden_pipeline(directory), registry=Registry.discover(user_trust()), monitors=[calls]
    ) as built:
        yield built


def test_truncation_equals_sentence_transformers_encode(
    embedder: Embedder, texts: list[str], golden: dict[str, Any]
) -> None:
    first = golden["window"] == 0
    expected = golden["embedding"][first][np.argsort(golden["text_index"][first])]
    vectors = embedder.encode(texts)
    assert isinstance(vectors, np.ndarray)
    assert vectors.dtype == np.float32
    assert vectors.shape == expected.shape
    np.testing.assert_allclose(vectors, expected, atol=1e-5, rtol=0)


def test_windows_are_the_runs_windows_and_mean_averages_them(
    embedder: Embedder, texts: list[str], golden: dict[str, Any]
) -> None:
    windows = embedder.encode(texts, long_text="windows")
    assert isinstance(windows, list)
    for index, got in enumerate(windows):
        mine = golden["text_index"] == index
        expected = golden["embedding"][mine][np.argsort(golden["window"][mine])]
        np.testing.assert_allclose(got, expected, atol=1e-5, rtol=0)
    long = max(range(len(texts)), key=lambda i: len(windows[i]))
    assert len(windows[long]) > 1, "the golden texts should include one longer than a window"
    mean = embedder.encode([texts[long]], long_text="mean")[0]
    expected_mean = windows[long].mean(axis=0)
    np.testing.assert_allclose(mean, expected_mean / np.linalg.norm(expected_mean), atol=1e-6)


def test_a_single_string_gives_one_vector_and_normalize_scales(embedder: Embedder) -> None:
    one = embedder.encode("a single sentence")
    assert isinstance(one, np.ndarray)
    assert one.shape == (embedder.dimension,)
    assert embedder.encode([]).shape == (0, embedder.dimension)
    scaled = embedder.encode(["x y z"], normalize=True)
    assert np.allclose(np.linalg.norm(scaled, axis=-1), 1.0, atol=1e-6)


@pytest.mark.parametrize(
    ("call", "error"),
    [
        (lambda e: e.encode(["ok", 3]), "texts\\[1\\] is an int"),
        (lambda e: e.encode(["ok"], long_text="all"), "long_text must be one of"),
        (lambda e: e.encode(["ok"], batch_tokens=0), "batch_tokens must be at least 1"),
        # list() of these is a dict's keys, a set's arbitrary order, bytes' integers
        (lambda e: e.encode({"a": 1}), "texts is a dict: give a str or a sequence of str"),
        (lambda e: e.encode({"b", "a"}), "texts is a set"),
        (lambda e: e.submit({"a": 1}), "texts is a dict"),
        # the tokenizer's own words were "TextInputSequence must be str"
        (
            lambda e: e.encode(["ok", "a\ud800"]),
            "texts\\[1\\] cannot be embedded: the text is not valid Unicode: it holds a "
            "lone surrogate '\\\\ud800' at offset 1",
        ),
    ],
)
def test_bad_arguments_are_refused_with_what_to_do(
    embedder: Embedder, call: Any, error: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=error):
        call(embedder)


def test_texts_from_several_threads_are_batched_together(
    embedder: Embedder, calls: Calls, texts: list[str], golden: dict[str, Any]
) -> None:
    # The golden texts of 129 tokens or more: one length (256), so that every batch
    # here, full or partly filled, is a shape the golden tests' pass already compiled
    # (all 64 texts in callers of 8 compiled 7 more shapes, each verified: 20 s).
    first = golden["window"] == 0
    long = sorted(golden["text_index"][first][golden["num_tokens"][first] > 128])
    assert len(long) == 13, long
    e = embedder
    mine = [[texts[i] for i in long[k::8]] for k in range(8)]  # 2 texts or 1 each
    alone = e.encode([texts[i] for i in long])
    assert isinstance(alone, np.ndarray)
    calls.applies = 0
    for part in mine:  # one caller after another: a pass each
        e.encode(part)
    separate, calls.applies = calls.applies, 0
    start = threading.Barrier(8)
    results: dict[int, Any] = {}

    def caller(k: int) -> None:
        start.wait()
        results[k] = e.encode(mine[k])

    threads = [threading.Thread(target=caller, args=(k,)) for k in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    together = calls.applies
    for k in range(8):  # each caller got exactly its own rows
        np.testing.assert_allclose(results[k], alone[k::8], atol=1e-5, rtol=0)
    # Callers waiting for the engine are served by whoever holds it, in shared batches.
    assert together < separate, (together, separate)


def test_used_as_a_library_nothing_reaches_standard_output(tmp_path: Path) -> None:
    pipeline = golden_pipeline(tmp_path)
    script = (
        "from seamline.core.embedder import Embedder\n"
        f"e = Embedder.from_pipeline({str(pipeline)!r})\n"
        "v = e.encode(['hello there', 'a second text'] * 20)\n"
        "assert v.shape == (40, 384)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    assert "debug" not in done.stderr.lower()
