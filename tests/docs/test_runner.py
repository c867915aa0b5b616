"""The docs runner itself: a page's block fails when the output it shows changes.

The console blocks are collected from the pages by ``conftest.py``; these tests check the
two parts that decide pass or fail (how a block is read, and what "the same shape"
means) on fixed texts, so that a runner which passed everything would be caught here.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.docs.collect import _run_step
from tests.docs.console import Step, parse_console
from tests.docs.shape import mismatch
from tests.docs.workdir import ROOT

SEARCH_TABLE = """\
                 nearest to 'how do I catch an exception?'
┏━━━━━━━┳━━━━━━━━━━━━━━━━━━━━┳━━━━━━━━┳━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┓
┃ score ┃ document           ┃ window ┃ text                         ┃
┡━━━━━━━╇━━━━━━━━━━━━━━━━━━━━╇━━━━━━━━╇━━━━━━━━━━━━━━━━━━━━━━━━━━━━━━┩
│ 0.580 │ pydoc-raise.txt    │ 4      │ "raise" statement re- raises │
│       │                    │        │ the exception                │
│ 0.528 │ pydoc-compound.txt │ 7      │ on exceptions can be found   │
└───────┴────────────────────┴────────┴──────────────────────────────┘
         vector index embedding_idx (IvfPq: 903 rows indexed, refine_factor 10)"""


def test_prompted_steps_with_output_and_continuations() -> None:
    block = parse_console(
        "$ seamline run a.yaml \\\n    --set x=1\ndone a: 2 documents\n"
        "$ seamline search out/a 'q'\n"
    )
    assert block.steps == (
        Step("seamline run a.yaml  --set x=1", ("done a: 2 documents",)),
        Step("seamline search out/a 'q'", None),
    )


def test_a_block_without_prompts_is_commands_only() -> None:
    block = parse_console("make run   # sets up\n\nseamline search out/x 'q'\n")
    assert [step.command for step in block.steps] == [
        "make run   # sets up",
        "seamline search out/x 'q'",
    ]
    assert all(step.shown is None for step in block.steps)


def test_a_block_marked_not_run_says_why() -> None:
    block = parse_console("# not run by the docs tests: needs a cluster\nseamline run x.yaml\n")
    assert block.steps == ()
    assert block.not_run_because == "by the docs tests: needs a cluster"


def test_output_before_any_command_is_an_error_in_the_page() -> None:
    with pytest.raises(ValueError, match="output before any"):
        parse_console("done\n$ seamline run x.yaml\n")


def test_numbers_times_and_digests_do_not_count() -> None:
    shown = ["done notes: 2 documents, 2 outputs in 4.6s (0.4 docs/s)", "  sha256 3f1c… (file)"]
    printed = "done notes: 30 documents, 31 outputs in 12.25s (2.5 docs/s)\n  sha256 9a0e… (file)\n"
    assert mismatch(shown, printed) is None


def test_a_place_in_a_file_counts() -> None:
    """A message placed on another line is a mismatch (models.md showed 7:5 for 5:8)."""
    shown = ["error: family.yaml:7:5: model 'bert-encoder' (given --set x=1): 12 bytes"]
    same_place = "error: family.yaml:7:5: model 'bert-encoder' (given --set x=2): 3 bytes"
    assert mismatch(shown, same_place) is None, "other numbers still do not count"
    assert mismatch(
        shown, "error: family.yaml:5:8: model 'bert-encoder' (given --set x=1): 12 bytes"
    )


@pytest.mark.parametrize(
    "printed",
    [
        "done notes: 2 documents, 2 windows in 4.6s (0.4 docs/s)\n",  # a word changed
        "done notes: 2 documents\n",  # a part of the line gone
        "done notes: 2 documents, 2 outputs in 4.6s (0.4 docs/s)\n  extra line\n",  # a line more
        "",  # nothing printed
    ],
)
def test_a_changed_word_or_line_is_a_mismatch(printed: str) -> None:
    assert mismatch(["done notes: 2 documents, 2 outputs in 4.6s (0.4 docs/s)"], printed)


def test_a_table_may_hold_other_rows_but_not_other_columns() -> None:
    shown = SEARCH_TABLE.split("\n")
    other_rows = re.sub(r"│ 0\.528.*\n", "", SEARCH_TABLE) + "\n"
    assert mismatch(shown, other_rows) is None
    renamed = SEARCH_TABLE.replace("┃ window ┃", "┃ part   ┃")
    assert mismatch(shown, renamed)
    narrower = SEARCH_TABLE.replace("┃ score ┃", "┃")
    assert mismatch(shown, narrower)
    no_index = SEARCH_TABLE.replace(
        "vector index embedding_idx (IvfPq: 903 rows indexed, refine_factor 10)",
        "exact: every one of 12 rows",
    )
    assert mismatch(shown, no_index)


def test_ellipsis_lines_and_log_lines() -> None:
    shown = ["$ first", "...", "done"]
    assert mismatch(shown, "$ first\nanything\nat all\ndone\n") is None
    assert mismatch(shown, "$ first\ndone\n") is None
    assert mismatch(shown, "$ first\ndone\nafter\n")
    log = '{"event": "run started", "level": "info"}'
    assert mismatch(["done"], f"{log}\ndone\n") is None
    assert mismatch([log, "done"], "done\n")


def test_every_shell_block_of_the_docs_is_one_the_runner_reads() -> None:
    """A ``bash``/``sh`` block would escape the docs tests: the pages use ``console``."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    escaped = [
        f"{page.relative_to(ROOT)}:{number}"
        for page in pages
        for number, line in enumerate(page.read_text(encoding="utf-8").split("\n"), 1)
        if re.fullmatch(r"\s*```(bash|sh|shell|zsh|shell-session)\s*", line)
    ]
    assert not escaped, f"use ```console for commands, so that the docs tests run them: {escaped}"


def test_the_docs_tests_collect_the_pages_and_not_their_namesakes() -> None:
    """``pytest benchmarks/README.md`` ran that page's benchmarks (and rewrote tracked
    results and goldens); an example package's README would install its plugin into the
    venv. Only README.md and CONTRIBUTING.md at the top and docs/*.md are docs tests."""
    from tests.docs.collect import documentation_tests

    console, python = documentation_tests(ROOT)
    markdown = sorted(ROOT.glob("**/*.md"))
    expected = {ROOT / "README.md", ROOT / "CONTRIBUTING.md", *(ROOT / "docs").glob("*.md")}
    assert {page for page in markdown if console.should_parse(page)} == expected
    assert {page for page in markdown if python.should_parse(page)} == {
        ROOT / "README.md",
        ROOT / "docs" / "python.md",
    }
    assert not console.should_parse(ROOT / "benchmarks" / "README.md")


@pytest.mark.parametrize(
    ("relative", "collected"),
    [
        ("README.md", True),
        ("CONTRIBUTING.md", True),
        ("docs/cli.md", True),
        ("benchmarks/README.md", False),
        ("examples/plugins/seamline-example-csv/README.md", False),
        ("docs/drafts/cli.md", False),
        ("cli.md", False),
    ],
)
def test_a_page_pattern_matches_whole_paths(relative: str, collected: bool) -> None:
    from pathlib import PurePosixPath

    from tests.docs.collect import CONSOLE_PAGES
    from tests.docs.pages import is_page

    assert is_page(PurePosixPath(relative), CONSOLE_PAGES) is collected


def test_a_failed_command_whose_page_discards_stderr_shows_it(tmp_path: Path) -> None:
    """A failed ``... 2>/dev/null`` showed only "exit code 2, the page implies 0:" and an
    empty output: its error was on the stderr the page throws away."""
    step = Step("ls no-such-file 2>/dev/null", None)
    failure = _run_step(step, tmp_path, ROOT / "docs" / "cli.md")
    assert failure is not None
    assert "exit code 2, the page implies 0" in failure
    assert "discards the command's stderr (2>/dev/null)" in failure
    assert "No such file or directory" in failure  # what ls said on stderr
    assert str(tmp_path) in failure
    assert failure.endswith("earlier commands: ls no-such-file")


def test_a_shape_mismatch_names_the_update_variable(tmp_path: Path) -> None:
    failure = _run_step(Step("echo printed", ("shown",)), tmp_path, ROOT / "docs" / "cli.md")
    assert failure is not None
    assert "SEAMLINE_DOCS_UPDATE=1 .venv/bin/python -m pytest docs/cli.md" in failure
