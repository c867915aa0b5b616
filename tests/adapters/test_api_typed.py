"""``seamline.api`` is typed for its users: ``mypy --strict`` checks code that imports it.

It was a module of the ``seamline`` namespace package, which has no ``__init__`` and so
could carry no ``py.typed``: from a user's own folder (without this repository's
``mypy_path``), ``from seamline.api import Embedder`` was "module is installed, but
missing library stubs or py.typed marker", and everything taken from it was ``Any``.
``submit(texts).result()`` was ``Vectors | list[Vectors]`` whatever the call, and
``Pending`` was not exported: its ``.shape`` was a mypy error where ``encode``'s was not.

What the docs promise, the types accept: a monitor of the application's own class (a
``name``, ``bind``, ``observe``, ``close``: python.md) was "List item 0 has incompatible
type "CountingMonitor"; expected "Monitor[Any]"", though ``run`` accepts it; the
errors the docs name were not all importable from ``seamline.api`` (``SeamlineError``,
``QueryRefused``, ``FilterRefused``, ``ResumeRefused``); ``ConfigError.problems`` was
"has no attribute" (the subclass a pipeline raises had it); ``encode`` of a generator,
which runs, was "No overload variant", and ``LongText`` was not exported.

``Embedder.encode``'s return type follows its call: ``encode("one text")`` is a ``[dim]``
array and ``encode(["a", "b"])`` a ``[2, dim]`` one; only ``long_text="windows"`` gives a
list. It was typed ``ndarray | list[ndarray]`` whatever the call, so every user's
``encode(texts).shape`` was a mypy error (seamline's own server and search carried a
``type: ignore`` for it).

Both users' files are checked by one ``mypy --strict`` run (most of its time is reading
seamline's, NumPy's and JAX's types, the same for both); each test reads its own file's lines.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

USER_CODE = """\
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from seamline.api import Embedder, ModelChanged, Pending, Pipeline, UserError, Vectors, open_index
from seamline.api import ConfigError, FilterRefused, LongText, QueryRefused, ResumeRefused
from seamline.api import SeamlineError
from seamline.contracts import Event, Monitor


def vectors(texts: list[str]) -> np.ndarray:
    with Embedder.from_pipeline("p.yaml") as embedder:
        found = embedder.encode(texts)
        assert not isinstance(found, list)
        return found


def submitted(embedder: Embedder, texts: list[str]) -> tuple[int, ...]:
    pending: Pending[Vectors] = embedder.submit(texts)
    windows = embedder.submit(texts, long_text="windows").result()
    return embedder.submit(texts).result().shape + windows[0].shape + pending.result().shape


def on_done(pending: Pending) -> None:
    print(pending.result().shape)


async def awaited(embedder: Embedder) -> int:
    return len((await embedder.submit("one text")).shape)


def documents(query: str) -> list[str]:
    try:
        with open_index("out/emb.jsonl") as index:
            return [hit.doc_id for hit in index.search(query, k=3)]
    except (ModelChanged, UserError):
        return []


def misspelt(query: str) -> list[str]:
    with open_index("out/emb.jsonl") as index:
        return [hit.id for hit in index.search(query, k=3)]


class CountingMonitor:  # python.md: any object with a name, bind, observe and close
    name = "counting"

    def __init__(self) -> None:
        self.seen = 0

    def bind(self, publish: Callable[[Event], None]) -> None:
        pass

    def observe(self, event: Event) -> None:
        self.seen += 1

    def close(self) -> None:
        pass


def monitored(first_party: Monitor[Any]) -> int:
    counting = CountingMonitor()
    Pipeline.from_yaml("p.yaml").run([counting, first_party])
    Embedder.from_pipeline("p.yaml", monitors=[counting]).close()
    Embedder(model={"use": "bert-encoder"}, monitors=[counting, first_party]).close()
    return counting.seen


def refused(queries: list[str]) -> tuple[int | None, str]:
    try:
        with open_index("out/emb.jsonl") as index:
            list(index.find_each(queries, where="metadata.bytes < 10"))
            Pipeline.from_yaml("p.yaml").run(resume=True)
    except QueryRefused as error:
        return error.index, error.reason
    except (FilterRefused, ResumeRefused):
        return None, "refused"
    except SeamlineError as error:
        return None, str(error)
    return None, ""


def every_problem(path: str) -> list[str]:
    try:
        Pipeline.from_yaml(path)
    except ConfigError as error:
        return [f"{problem.location}: {problem.detail}" for problem in error.problems]
    return []


def streamed(embedder: Embedder, lines: list[str], mode: LongText) -> Vectors:
    embedder.encode(line.strip() for line in lines)  # a generator, read at once
    embedder.submit(map(str.lower, lines)).result()
    both: Vectors | list[Vectors] = embedder.encode(lines, long_text=mode)
    assert not isinstance(both, list)
    embedder.encode({"a", "b"})  # refused at run time too: a set's order is nobody's
    return both
"""


ENCODING_CODE = """\
from __future__ import annotations

from seamline.api import Embedder


def use(embedder: Embedder, texts: list[str]) -> int:
    reveal_type(embedder.encode("one text"))
    reveal_type(embedder.encode(texts))
    reveal_type(embedder.encode(("a", "b"), normalize=True, queries=True))
    reveal_type(embedder.encode(texts, long_text="mean"))
    reveal_type(embedder.encode(texts, long_text="windows"))
    return int(embedder.encode(texts).shape[-1]) + len(embedder.encode("x").tolist())
"""

ARRAY = "numpy.ndarray["
LIST = "list[numpy.ndarray["


@pytest.fixture(scope="module")
def checked(tmp_path_factory: pytest.TempPathFactory) -> subprocess.CompletedProcess[str]:
    """``mypy --strict`` of user.py and encode_user.py, one run for both tests."""
    folder = tmp_path_factory.mktemp("typed")
    (folder / "user.py").write_text(USER_CODE, encoding="utf-8")
    (folder / "encode_user.py").write_text(ENCODING_CODE, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py", "encode_user.py"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


FILES = ("user.py", "encode_user.py")


def lines_of(done: subprocess.CompletedProcess[str], file: str) -> list[str]:
    """mypy's lines but the other file's: what a run on FILE alone would print."""
    others = tuple(f"{other}:" for other in FILES if other != file)
    return [line for line in done.stdout.splitlines() if not line.startswith(others)]


def test_mypy_strict_checks_code_using_the_public_api(
    checked: subprocess.CompletedProcess[str],
) -> None:
    done = checked
    errors = [line for line in lines_of(done, "user.py") if ": error:" in line]
    # Only the user's own mistake: the API's types were checked, not taken as Any.
    # A set is refused by the types as it is at run time (the rows come in the texts' order).
    set_refused = (
        'user.py:99: error: No overload variant of "encode" of "Embedder" matches argument '
        'type "set[str]"  [call-overload]'
    )
    assert errors == [
        'user.py:45: error: "Hit" has no attribute "id"  [attr-defined]',
        set_refused,
    ], done.stdout


def test_each_call_of_encode_has_the_type_of_what_it_returns(
    checked: subprocess.CompletedProcess[str],
) -> None:
    done = checked
    revealed = [
        line.partition('Revealed type is "')[2].rstrip('"')
        for line in lines_of(done, "encode_user.py")
        if "Revealed type is" in line
    ]
    assert len(revealed) == 5, done.stdout
    assert all(kind.startswith(ARRAY) for kind in revealed[:4]), done.stdout
    assert revealed[4].startswith(LIST), done.stdout
    assert not any(" | " in kind or "Union" in kind for kind in revealed), done.stdout
    errors = [line for line in lines_of(done, "encode_user.py") if ": error:" in line]
    assert errors == [], done.stdout
