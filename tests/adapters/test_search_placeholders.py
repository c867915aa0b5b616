"""A ``where`` LanceDB's planner has no code for is refused, not a panic (issue F1 of s30).

A placeholder (``id = ?``, ``$1``, ``:a``) made LanceDB panic: ``seamline search
--where`` printed a traceback ending ``RustPanic: rust future panicked: unknown error``
and exited 1, and ``/v1/search`` answered 500 ``internal_error``, where a filter is
promised to be applied whole or refused (exit 2; 400 ``invalid_search``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from seamline.adapters.search import find
from seamline.adapters.serve.index import IndexSearch
from seamline.components.sinks._lance_filter import one_expression
from seamline.contracts.readback import FilterRefused
from seamline.core.registry import Registry
from tests.adapters.serving import SEAMLINE, TEXTS, environment, pipeline_text
from tests.adapters.test_search import TEXTS as TOY_TEXTS
from tests.adapters.test_search import columnar_registry, written  # noqa: F401 - a fixture
from tests.adapters.test_serve_index import LANCE, refusal, run, use_lancedb

BINDS = ", and a search binds no values to a filter"
UNREAD = ", which LanceDB cannot read"
PLACEHOLDERS = [
    ("id = ?", "a placeholder at character 6 (?)" + BINDS),
    ("$1", "a placeholder at character 1 ($1)" + BINDS),
    (":a", "a placeholder at character 1 (:a)" + BINDS),
    ("id = :a", "a placeholder at character 6 (:a)" + BINDS),
    ("id=:1 OR id IN (?2, 'd1')", "a placeholder at character 4 (:1)" + BINDS),
    ("text = 'it''s' AND id = $name", "a placeholder at character 25 ($name)" + BINDS),
    ("id = $$d1$$", "a $-quoted string at character 6 ($$...)" + UNREAD),
    ("id = $tag$d1$tag$", "a $-quoted string at character 6 ($tag$...)" + UNREAD),
]
PANICS = ["id = N'd1'", "id = B'01'", "id = R'd1'"]
"""String forms LanceDB's planner has no code for either: not refused beforehand, but
its panic is turned into the refusal."""


@pytest.mark.parametrize(("where", "said"), PLACEHOLDERS)
def test_a_placeholder_is_refused_before_lancedb_sees_it(
    written: dict[str, Path],  # noqa: F811 - the fixture
    where: str,
    said: str,
) -> None:
    with pytest.raises(FilterRefused) as refused:
        find(columnar_registry(), written["lancedb"], TOY_TEXTS[1], where=where)
    assert str(refused.value) == (
        f"where {where!r} is not a filter LanceDB can apply: it has {said}. Write the value "
        "itself, a string in single quotes (id = 'd1')"
    )


@pytest.mark.parametrize("where", PANICS)
def test_a_filter_lancedb_panics_on_is_refused_as_the_filters_fault(
    written: dict[str, Path],  # noqa: F811 - the fixture
    where: str,
) -> None:
    with pytest.raises(FilterRefused, match=r"LanceDB could not run this filter \(it failed in"):
        find(columnar_registry(), written["lancedb"], TOY_TEXTS[1], where=where)


@pytest.mark.parametrize(
    "where",
    [
        "id = '?' OR id = ':a' OR id = '$1'",  # in strings
        "id = 'x' -- ? $1 :a",  # in a comment
        "id$ = 'x' OR a$b$ = 1",  # a $ inside a name: one name ("id$")
        "CAST(span_start AS STRING) = 'x'::VARCHAR",  # :: is a cast
        "array_length(string_to_array(text, ' ')[1:2]) = 1",  # a slice
    ],
)
def test_what_only_looks_like_a_placeholder_is_no_placeholder(where: str) -> None:
    assert one_expression(where) == f"({where}\n)"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tiny_registry: Registry) -> Path:
    """A working folder with ``out/emb.lance``, the served texts in a LanceDB table."""
    (tmp_path / "p.yaml").write_text(pipeline_text(), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    use_lancedb(tmp_path)
    assert LANCE.strip() in (tmp_path / "p.yaml").read_text(encoding="utf-8")
    run(tiny_registry)
    return tmp_path


def searched(folder: Path, where: str) -> subprocess.CompletedProcess[str]:
    """``seamline search out/emb.lance ... --where WHERE``, run from ``folder`` as a user would."""
    return subprocess.run(
        [str(SEAMLINE), "search", "out/emb.lance", TEXTS[0], "--where", where],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_command_exits_2_without_a_traceback(folder: Path) -> None:
    # One command (a search starts in seconds): the panic's refusal is the same FilterRefused,
    # which the command answers as it answers every other (exit 2, one line).
    where = "id = ?"
    done = searched(folder, where)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.startswith(f"error: where {where!r} is not a filter"), done.stderr
    assert "it has a placeholder at character 6 (?)" in done.stderr


@pytest.mark.parametrize("where", [where for where, _ in PLACEHOLDERS[:4]] + PANICS[:1])
def test_the_server_answers_400_not_500(folder: Path, tiny_registry: Registry, where: str) -> None:
    index = IndexSearch(tiny_registry, folder / "out" / "emb.lance")
    try:
        error = refusal(index, TEXTS[0], where=where)
        assert (error.status, error.code, error.param) == (400, "invalid_search", "where")
        assert str(folder) not in error.message
    finally:
        index.close()


def test_a_panic_on_a_table_broken_without_the_filter_too_is_the_tables_error(
    folder: Path,
) -> None:
    # The panic was re-raised: a RustPanic traceback and exit 1, where the same search
    # without the filter says the table cannot be searched (exit 2).
    data = sorted(folder.glob("out/**/data/*.lance"))
    assert data, sorted(str(p.relative_to(folder)) for p in folder.glob("out/**/*"))
    for file in data:
        file.unlink()
    done = searched(folder, PANICS[0])
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    assert "error: out/emb.lance: LanceDB could not search it (" in done.stderr, done.stderr
