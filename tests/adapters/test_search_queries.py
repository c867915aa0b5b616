"""``seamline search --queries FILE``: many queries, one a line, with one model.

Each query of the file is answered as ``seamline search INDEX QUERY`` answers it (the
same table, the same JSON document, one a line), the index's model is built once, and
a file that is not a list of queries is refused before any model is built, naming the
line and the fix.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from typer.testing import CliRunner, Result

from seamline.adapters import search as search_package
from seamline.adapters.cli import main as cli
from seamline.adapters.cli import query_lines
from seamline.contracts.readback import LineReader
from seamline.core.registry import Registry
from tests.adapters.test_search import TEXTS, registry, restored_logging, write_index
from tests.fake_frames import DataFrame

pytestmark = pytest.mark.usefixtures("restored_logging")
__all__ = ["restored_logging"]  # the fixture, used by every test here


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("index")
    path = out / "emb.jsonl"
    write_index(out, f"{{use: jsonl, with: {{path: '{path}'}}}}")
    return path


@pytest.fixture
def builds(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many query models the command built (one entry each)."""
    made: list[int] = []
    real = search_package.QueryEncoder

    class Counted(real):  # type: ignore[misc, valid-type]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            made.append(1)
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(search_package, "QueryEncoder", Counted)
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    return made


def search(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli.app, ["search", *args], input=stdin)


def test_each_query_is_answered_as_alone_with_one_model(
    index: Path, tmp_path: Path, builds: list[int]
) -> None:
    queries = tmp_path / "queries.txt"
    queries.write_text("\n".join(TEXTS) + "\n", encoding="utf-8")
    many = search(str(index), "--queries", str(queries), "-k", "2", "--format", "json")
    assert many.exit_code == 0, many.output
    assert builds == [1]
    lines = many.stdout.splitlines()
    assert len(lines) == len(TEXTS)
    for line, text in zip(lines, TEXTS, strict=True):
        alone = search(str(index), text, "-k", "2", "--format", "json")
        assert alone.exit_code == 0, alone.output
        assert json.loads(line) == json.loads(alone.stdout)
        assert json.loads(line)["query"] == text


def test_the_output_is_read_once_for_all_the_queries(
    index: Path, builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    reads: list[int] = []
    real = LineReader.chunks

    def counted(self: LineReader, dimension: int | None) -> Any:
        reads.append(1)
        return real(self, dimension)

    monkeypatch.setattr(LineReader, "chunks", counted)
    piped = "\n".join(TEXTS * 4).encode()  # each line read and parsed once, not 12 times
    shown = search(str(index), "--queries", "-", "-k", "1", "--format", "json", stdin=piped)
    assert shown.exit_code == 0, shown.output
    assert len(shown.stdout.splitlines()) == 12
    assert reads == [1]


def test_standard_input_crlf_and_a_byte_order_mark(index: Path, builds: list[int]) -> None:
    piped = ("\ufeff" + "\r\n".join(TEXTS[:2])).encode()  # no newline after the last line
    shown = search(str(index), "--queries", "-", "-k", "1", "--format", "json", stdin=piped)
    assert shown.exit_code == 0, shown.output
    answered = [json.loads(line) for line in shown.stdout.splitlines()]
    assert [doc["query"] for doc in answered] == TEXTS[:2]
    assert [doc["hits"][0]["id"] for doc in answered] == ["d0", "d1"]


def test_text_output_is_a_table_a_query(index: Path, builds: list[int]) -> None:
    shown = search(str(index), "--queries", "-", "-k", "1", stdin="\n".join(TEXTS).encode())
    assert shown.exit_code == 0, shown.output
    assert [shown.stdout.count(f"nearest to {text!r}") for text in TEXTS] == [1, 1, 1]


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b"alpha\n\nbeta\n", "<stdin>:2: the query is empty"),
        (b"alpha\n  \n", "<stdin>:2: the query is only whitespace"),
        (b"alpha\nbet\xe9\n", "<stdin>:2: not UTF-8 text (byte 10 is 0xe9)"),
        # With a byte-order mark the codec counted after it: "line 2, byte 9 is 0x77".
        (b"\xef\xbb\xbfone\ntwo\n\xffthree\n", "<stdin>:3: not UTF-8 text (byte 12 is 0xff)"),
        (b"alpha\n\xe2\x80\x8b\n", "<stdin>:2: the query is only invisible characters"),
        (b"", "<stdin> holds no query"),
        (b"\n", "<stdin>:1: the query is empty"),
    ],
)
def test_a_bad_line_is_refused_by_its_place_before_any_model(
    index: Path, builds: list[int], content: bytes, said: str
) -> None:
    shown = search(str(index), "--queries", "-", stdin=content)
    assert shown.exit_code == 2, shown.output
    assert said in shown.output
    assert "Traceback" not in shown.output
    assert len(shown.output.strip().splitlines()) == 1, shown.output
    assert builds == []


def test_too_many_queries_or_bytes_are_refused(
    index: Path, builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(query_lines, "MAX_QUERIES", 2)
    lines = search(str(index), "--queries", "-", stdin=b"a\nb\nc\n")
    assert lines.exit_code == 2
    assert "holds 3 lines, more than 2 queries" in lines.output
    monkeypatch.setattr(query_lines, "MAX_BYTES", 8)
    big = search(str(index), "--queries", "-", stdin=b"alpha\nbeta\n")
    assert big.exit_code == 2
    assert "holds more than" in big.output
    assert builds == []


def test_a_missing_file_a_folder_and_the_two_sources(
    index: Path, tmp_path: Path, builds: list[int]
) -> None:
    missing = search(str(index), "--queries", str(tmp_path / "nope.txt"))
    assert missing.exit_code == 2
    assert "nope.txt does not exist" in missing.output
    folder = search(str(index), "--queries", str(tmp_path))
    assert folder.exit_code == 2
    assert "is a directory, not a file of queries" in folder.output
    both = search(str(index), "alpha", "--queries", "-", stdin=b"beta\n")
    assert both.exit_code == 2
    assert "give QUERY or --queries FILE, not both" in both.output
    neither = search(str(index))
    assert neither.exit_code == 2
    assert "give the text to search for (QUERY), or --queries FILE" in neither.output
    assert builds == []


def test_a_closed_stdin_is_refused_in_one_line(tmp_path: Path) -> None:
    # `seamline search ... --queries - <&-`: "'NoneType' object has no attribute 'buffer'".
    from seamline.adapters.cli.query_lines import read_queries
    from seamline.contracts import UserError

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(sys, "stdin", None)
        with pytest.raises(UserError, match=r"^--queries -: standard input is closed; pipe"):
            read_queries("-")


def test_an_interrupted_search_says_only_that(
    index: Path, builds: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said "nothing was published", which a command that publishes nothing never does.
    def stopped(*args: object, **kwargs: object) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr(search_package.Searcher, "find_each", stopped)
    shown = search(str(index), "alpha")
    assert shown.exit_code == 130, shown.output
    assert shown.stderr.strip() == "interrupted"


@pytest.mark.parametrize(
    ("queries", "message"),
    [
        # "alpha" was five queries, "a", "l", ...; "what is alpha?" refused its " ".
        ("alpha", r"not one str: give \[query\], or use find\(query\)"),
        ({"alpha"}, r"^queries is a set: give a sequence of str"),
        ({"alpha": 1}, r"^queries is a dict: give a sequence of str"),
        (5, r"^queries is an int: give a sequence of str"),
        # a DataFrame was searched as its column names: one answer, for "question"
        (
            DataFrame({"question": ["alpha", "beta", "gamma"]}),
            r"^queries is a pandas DataFrame \(2 dimensions\): pass one column, df\['question'\]",
        ),
        (np.array([["alpha", "beta"]]), r"^queries is a NumPy array \(2 dimensions\): give a"),
    ],
)
def test_find_each_refuses_what_is_not_an_ordered_list_of_queries(
    index: Path, builds: list[int], queries: object, message: str
) -> None:
    # A set or a dict failed on slicing ("unhashable type: 'slice'"), unexplained.
    searcher = search_package.Searcher(registry(), index)
    with searcher, pytest.raises(TypeError, match=message):
        searcher.find_each(queries, k=1)  # type: ignore[arg-type]
    assert builds == []  # refused before the model was built


def test_find_each_takes_a_generator_of_queries(index: Path, builds: list[int]) -> None:
    # "object of type 'generator' has no len()".
    with search_package.Searcher(registry(), index) as searcher:
        found = list(searcher.find_each((text for text in TEXTS[:2]), k=1))
        assert [answer.hits for answer in found] == [searcher.find(t, k=1).hits for t in TEXTS[:2]]


def test_find_each_names_the_query_it_refuses(index: Path, builds: list[int]) -> None:
    # Among thousands of queries, "the query is empty" did not say which.
    with search_package.Searcher(registry(), index) as searcher:
        with pytest.raises(search_package.QueryRefused, match=r"^queries\[1\]: the query is empty"):
            searcher.find_each(["alpha", "", "beta"], k=1)
        with pytest.raises(
            search_package.QueryRefused, match=r"^queries\[2\]: the query must be a str, not int"
        ):
            searcher.find_each(["alpha", "beta", 3], k=1)  # type: ignore[list-item]
        with pytest.raises(
            search_package.QueryRefused, match=r"^queries\[1\]: the query is missing \(NaN\): "
        ):  # "the query must be a str, not float": a gap in a Series read as a number
            searcher.find_each(["alpha", float("nan")], k=1)  # type: ignore[list-item]
        with pytest.raises(search_package.QueryRefused, match=r"^the query is empty"):
            searcher.find_each([""], k=1)  # one query: no position to give
    assert builds == []
