"""On a narrow terminal every value is shown whole, folded onto more lines, never cut.

rich cut what did not fit: at 50 columns the stacked components table was wider than
the terminal and lost its right edge on every line (the reason, the paths); at 80
columns ``trace summarize`` showed a share as ``100.…`` and a header as ``cou…``; at 40
columns ``tune`` and ``check`` showed ``nati…`` and a detail column of no width.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.adapters.cli.render.console import text
from seamline.adapters.cli.render.fit import Column, fitted
from seamline.core.registry import ComponentInfo, Registry

WIDTHS = (40, 50, 72, 80)

REASON = (
    "distribution 'acme-kernels' is not trusted: the allowlist at trusty.yaml:5:24 "
    "(trust.distributions) names only seamline-components; add 'acme-kernels' there"
)
FILE = "/opt/venvs/project/lib/python3.11/site-packages/acme_kernels/attention.py"


def squeezed(shown: str) -> str:
    """The output as one string without spaces: its lines outside a table joined, then
    each table column's cells read down the column. A value folded over several lines
    (or within its cell) reads whole in it; a value cut does not."""
    lines = shown.splitlines()
    rows = [re.split(r"[│┃]", line)[1:-1] for line in lines if line[:1] in "│┃"]
    columns = ["".join(row[i] for row in rows if len(row) > i) for i in range(9)]
    outside = [line for line in lines if line[:1] not in "│┃"]
    return re.sub(r"\s", "", "".join([*outside, *columns]))


def assert_whole(shown: str, width: int, values: list[str]) -> None:
    assert "…" not in shown, shown
    assert max(map(len, shown.splitlines())) <= width, shown
    for value in values:
        assert re.sub(r"\s", "", value) in squeezed(shown), f"{value!r} not whole in:\n{shown}"


@pytest.mark.parametrize("width", WIDTHS)
def test_the_components_table_shows_every_value_whole(
    width: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    infos = [
        ComponentInfo("attention", "blockwise", "x:y", "seamline-components", "0.1.0", "ok",
                      "", None, "1.2", FILE),
        ComponentInfo("attention", "acme-flash", "x:y", "acme-kernels", "1.2.0", "untrusted",
                      REASON, None, "", FILE),
    ]  # fmt: skip
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: Registry(infos)))
    env = {"COLUMNS": str(width)}
    result = CliRunner().invoke(app, ["components", "--kind", "attention"], env=env)
    assert result.exit_code == 0, result.output
    values = ["untrusted", "acme-flash", "acme-kernels", "1.2.0", "seamline-components", REASON]
    assert_whole(result.output, width, [*values, FILE])


@pytest.mark.parametrize("width", WIDTHS)
def test_trace_summarize_keeps_every_figure_whole(
    width: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    name = "seamline.executor.execute.with.a.rather.long.span.name"
    spans = [
        {"name": "seamline.run", "span_id": "r", "start_ns": 0, "end_ns": 1_643_470_000},
        {"name": name, "parent_span_id": "r", "start_ns": 0, "end_ns": 1_366_120_000},
    ]
    Path("t.jsonl").write_text("".join(json.dumps(s) + "\n" for s in spans), encoding="utf-8")
    env = {"COLUMNS": str(width)}
    result = CliRunner().invoke(app, ["trace", "summarize", "t.jsonl"], env=env)
    assert result.exit_code == 0, result.output
    figures = ["1643.47", "1366.12", "100.0%", "83.1%", "1.643", "count", "median ms", "share"]
    assert_whole(result.output, width, [name, *figures])


@pytest.mark.parametrize("width", WIDTHS)
def test_names_and_numbers_are_never_cut_at_any_width(width: int) -> None:
    # tune's and check's tables: a candidate's name, its figures, a check's detail.
    columns = [Column("candidate"), Column("median ms", justify="right"), Column("why", False)]
    rows = [
        [text("native-with-a-long-name"), text("1643.470"), text(REASON)],
        [text("tpu-splash (cannot serve)"), text(""), text("runs only on TPU: " + FILE)],
    ]
    buffer = io.StringIO()
    console = Console(file=buffer, width=width, no_color=True)
    console.print(fitted(console, columns, rows, title=text("length 16 × batch 32")))
    values = ["native-with-a-long-name", "1643.470", REASON, "tpu-splash (cannot serve)", FILE]
    assert_whole(buffer.getvalue(), width, [*values, "median ms", "length 16 × batch 32"])


@pytest.mark.parametrize("width", [20, 30, 40, *WIDTHS])
def test_a_search_hits_score_and_window_are_never_wrapped(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # COLUMNS=20 split a score over three rows of its column: "0.", "46", "6".
    from seamline.adapters.cli.render.listing import search_hits
    from seamline.adapters.search import Found, Hit

    monkeypatch.setenv("COLUMNS", str(width))
    hits = [
        Hit(0.466, "notes/release-plan.md", 12, (0, 40), {}, "We decided to ship " * 4),
        Hit(-0.025, "b.txt", 3, (0, 5), {}, "hello"),
    ]
    search_hits("note", Found(hits, "exact: every one of 91 rows"))
    shown = capsys.readouterr().out
    lines = shown.splitlines()
    for number in ("0.466", "-0.025"):
        assert sum(number in line for line in lines) == 1, f"{number} not on one line:\n{shown}"
    assert max(map(len, lines)) <= width, shown
    assert "notes/release-plan.md" in squeezed(shown), shown
    assert "exact: every one of 91 rows" in " ".join(shown.split()), shown


@pytest.mark.parametrize("width", [20, 30, 40])
def test_a_stacked_hit_names_its_score_and_no_line_ends_in_a_space(
    width: int, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Stacked, a hit's heading line was its score alone ("0.326": of what?), and the title
    and the footer, folded by rich, kept the space they broke at on each line (piped)."""
    from seamline.adapters.cli.render.listing import search_hits
    from seamline.adapters.search import Found, Hit

    monkeypatch.setenv("COLUMNS", str(width))
    hits = [
        Hit(0.326, "notes/release-plan.md", 12, (0, 40), {}, "We decided to ship " * 4),
        Hit(-0.025, "b.txt", 3, (0, 5), {}, "hello"),
    ]
    search_hits("a note about the plan", Found(hits, "exact: every one of 91 rows, scored"))
    shown = capsys.readouterr().out
    lines = shown.splitlines()
    assert not any(line[:1] in "│┃┏┡└" for line in lines), f"not stacked:\n{shown}"
    assert "score: 0.326" in lines, shown
    assert "score: -0.025" in lines, shown
    assert [line for line in lines if line != line.rstrip()] == [], shown
