"""``seamline.api`` called with the wrong thing: the message names the argument as Python
spells it and says what to pass. The toy model keeps these fast."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

import seamline.adapters.search as search_module
from seamline.adapters.search import QueryEncoder
from seamline.api import Embedder, Pipeline, Searcher, UserError, open_index
from seamline.components.monitors.log import LogMonitor
from tests.adapters.test_search import registry, write_index
from tests.core.toy import toy_registry


@pytest.fixture
def pipeline_file(tmp_path: Path) -> Path:
    path = tmp_path / "p.yaml"
    path.write_text(
        "pipeline: p\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "sink: {use: jsonl, with: {path: out/emb.jsonl}}\n",
        encoding="utf-8",
    )
    return path


@pytest.mark.parametrize(
    "call",
    [
        lambda path: Pipeline.from_yaml(path, "run.batch_tokens=256", registry=toy_registry()),
        lambda path: Pipeline.from_dict({}, "run.batch_tokens=256", registry=toy_registry()),
        lambda path: Embedder.from_pipeline(path, "run.batch_tokens=256", registry=toy_registry()),
    ],
)
def test_overrides_given_as_one_str_are_refused_saying_to_pass_a_list(
    pipeline_file: Path, call: Any
) -> None:
    # Each character was taken for an override: "--set r: an override must look like ...".
    with pytest.raises(
        TypeError, match=r"overrides must be a list .* pass \['run\.batch_tokens=256'\]"
    ):
        call(pipeline_file)


def test_an_override_that_is_not_a_str_is_named_by_its_index(pipeline_file: Path) -> None:
    with pytest.raises(TypeError, match=r"overrides\[1\] is an int, not a str"):
        Pipeline.from_yaml(pipeline_file, ["run.batch_size=4", 256], registry=toy_registry())


@pytest.mark.parametrize(
    ("path", "says"),
    [(b"p.yaml", "not bytes: decode it first"), (None, "not NoneType"), (3, "int")],
)
@pytest.mark.parametrize("build", [Pipeline.from_yaml, Embedder.from_pipeline])
def test_a_pipeline_file_named_by_what_is_not_a_path_is_a_type_error(
    pipeline_file: Path, monkeypatch: pytest.MonkeyPatch, build: Any, path: Any, says: str
) -> None:
    # It said "pipeline file b'p.yaml' does not exist", of a file that was there.
    monkeypatch.chdir(pipeline_file.parent)
    for registry_given in (toy_registry(), None):
        with pytest.raises(TypeError, match=f"pipeline file is named by a str or a path .*{says}"):
            build(path, registry=registry_given)


@pytest.mark.parametrize(("path", "kind"), [(None, "NoneType"), (5, "int")])
def test_open_index_of_something_that_is_not_a_path_says_what_it_takes(
    path: Any, kind: str
) -> None:
    with pytest.raises(TypeError, match=f"open_index takes the path of an output .*, not {kind}$"):
        open_index(path)


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("api-index") / "emb.jsonl"
    write_index(out.parent, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    return out


@pytest.mark.parametrize("k", [0, -3, 10_001, True])
def test_a_bad_k_from_python_is_named_k_not_the_commands_flag(index: Path, k: Any) -> None:
    with open_index(index, registry=registry()) as searcher:
        with pytest.raises(UserError, match=r"^k \(how many results\) is from 1 to 10,000"):
            searcher.search("alpha", k=k)
        with pytest.raises(UserError, match=r"^k \(how many results\)"):
            searcher.find("alpha", k=k)


def test_a_k_of_numpy_is_a_whole_number_and_a_where_not_a_str_is_named(index: Path) -> None:
    import numpy as np

    with open_index(index, registry=registry()) as searcher:
        # np.int64(3) was refused as "not np.int64(3)", a whole number from 1 to 10,000
        hits = searcher.search("alpha", k=np.int64(3))
        assert [h.doc_id for h in hits] == [h.doc_id for h in searcher.search("alpha", k=3)]
        with pytest.raises(UserError, match=r"^k \(how many results\)"):
            searcher.search("alpha", k=np.bool_(True))
        # a LanceDB table's reader answered with a raw pydantic dump
        with pytest.raises(
            TypeError, match=r"^where must be a SQL filter \(a str\) or None, not int"
        ):
            searcher.find("alpha", where=5)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match=r"^width must be a whole number of characters"):
            hits[0].snippet("x")  # type: ignore[arg-type]


class Watcher:
    """What run()'s TypeError said a monitor is: an object with observe and close."""

    def observe(self, event: object) -> None:
        pass

    def close(self) -> None:
        pass


class Named(Watcher):
    name = "named"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # resume="no" resumed: "no" is true to Python
        (lambda p: p.run(resume="no"), "resume must be True or False, not str"),
        (lambda p: p.run(restart=1), "restart must be True or False, not int"),
        # AttributeError: 'str' object has no attribute 'name'
        (lambda p: p.run("x"), "extra_monitors must be a list of monitors .*not str"),
        # TypeError: 'bool' object is not iterable (resume meant)
        (lambda p: p.run(True), r"extra_monitors must be .*not bool; .*run\(resume=True\)"),
        (
            lambda p: p.run([object()]),
            r"extra_monitors\[0\] is an object without a name \(a str\), bind\(\), observe\(\), "
            r"close\(\): a monitor has",
        ),
        # What run()'s own message asked for, observe and close, failed the run as a
        # ShardFailed advising --resume: "'Watcher' object has no attribute 'name'".
        (
            lambda p: p.run([Watcher()]),
            r"extra_monitors\[0\] is a Watcher without a name \(a str\), bind\(\): a monitor "
            r"has a name \(a str\), bind\(publish\), observe\(event\) and close\(\)",
        ),
        (lambda p: p.run([Named()]), r"extra_monitors\[0\] is a Named without bind\(\): "),
        # The class, not an instance: its unbound bind() failed on every call, and the
        # run went on with a monitor that observed nothing.
        (
            lambda p: p.run([LogMonitor]),
            r"extra_monitors\[0\] is the class LogMonitor, not a monitor: pass an instance "
            r"\(LogMonitor\(\.\.\.\)\)",
        ),
    ],
)
def test_pipeline_run_refuses_arguments_it_would_misread(
    tmp_path: Path, call: Any, message: str
) -> None:
    pipeline = Pipeline.from_dict(
        {
            "pipeline": "p",
            "loader": {"use": "list", "with": {"texts": ["a"]}},
            "model": {"use": "toy"},
            "sink": {"use": "memory"},
        },
        registry=toy_registry(),
    )
    with pytest.raises(TypeError, match=message):
        call(pipeline)
    assert pipeline.run(resume=False).output.documents == 1, "the same pipeline runs"


def test_threads_sharing_a_fresh_index_build_one_query_model(
    index: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Four threads' first searches built four models; three were dropped without close().
    built: list[QueryEncoder] = []

    class Counted(QueryEncoder):
        def __init__(self, *args: Any) -> None:
            time.sleep(0.2)  # a real model takes seconds: the others' searches arrive meanwhile
            super().__init__(*args)
            built.append(self)

    monkeypatch.setattr(search_module, "QueryEncoder", Counted)
    start = threading.Barrier(4)
    found: list[str] = []

    def searches(searcher: Searcher) -> None:
        start.wait()
        found.append(searcher.search("alpha beta gamma", k=1)[0].doc_id)

    with open_index(index, registry=registry()) as searcher:
        threads = [threading.Thread(target=searches, args=(searcher,)) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert found == ["d0"] * 4
    assert len(built) == 1, f"{len(built)} query models built"


def test_a_pipeline_run_from_another_folder_than_it_was_built_in_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its sink's relative paths were made absolute where it was validated, its loader's are
    read where it runs: it read one folder's input and wrote beside the other."""
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path)
    pipeline = Pipeline.from_dict(
        {
            "pipeline": "p",
            "loader": {"use": "list", "with": {"texts": ["a"]}},
            "model": {"use": "toy"},
            "sink": {"use": "jsonl", "with": {"path": "out/emb.jsonl"}},
        },
        registry=registry(),
    )
    monkeypatch.chdir(tmp_path / "elsewhere")
    with pytest.raises(UserError, match=r"validated in .* and is run in .*elsewhere'") as refused:
        pipeline.run()
    assert "Build the pipeline where it runs" in str(refused.value)
    assert not (tmp_path / "out").exists(), "refused before any work"
    monkeypatch.chdir(tmp_path)
    assert pipeline.run().output.documents == 1
    assert (tmp_path / "out" / "emb.jsonl").is_file()


def test_a_text_that_cannot_be_embedded_is_a_user_error_of_the_api() -> None:
    # A text that is not valid Unicode raised seamline.core.embedder.Unembeddable, a bare
    # ValueError that python.md's `except UserError` (the caller's mistakes) let through.
    from seamline.api import Unembeddable

    embedder = Embedder(model={"use": "toy"}, attention="native", registry=toy_registry())
    with embedder, pytest.raises(UserError, match=r"^texts\[1\] cannot be embedded: ") as bad:
        embedder.encode(["fine", "boom"])  # the toy model cannot prepare "boom"
    assert isinstance(bad.value, Unembeddable)
    assert isinstance(bad.value, ValueError)  # as it always was
    assert bad.value.index == 1
