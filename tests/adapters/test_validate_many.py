"""``seamline validate`` with several files, as a CI job lints its pipelines in one call.

It took one file only (``validate a.yaml b.yaml``: "Got unexpected extra argument(s)"), so
a job with 20 files paid the start-up 20 times. Now each file is checked as if alone:
its lines (or its document, one per line), exit code 2 when any failed.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.adapters.test_cli_conventions import piped
from tests.adapters.test_cli_json import FRAME, PIPELINE


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    good = tmp_path / "good.yaml"
    good.write_text(PIPELINE, encoding="utf-8")
    bad = tmp_path / "bad.yaml"
    bad.write_text(PIPELINE.replace("bert-encoder", "bert-encodr"), encoding="utf-8")
    return {"good": str(good), "bad": str(bad), "missing": str(tmp_path / "missing.yaml")}


def test_every_file_is_checked_and_a_failure_fails_the_command(files: dict[str, str]) -> None:
    done = piped("validate", files["good"], files["bad"], files["missing"], files["good"])
    assert done.returncode == 2, done.stderr
    assert done.stdout.count(f"ok {files['good']}: pipeline 'json-check'") == 2
    err = done.stderr
    # Each failure is headed by its file, then its own errors, located as for one file.
    assert f"failed: {files['bad']}:\nerror: {files['bad']}:4:8: no model component" in err
    assert f"failed: {files['missing']}:\nerror: pipeline file {files['missing']}" in err
    assert err.rstrip().endswith(
        f"2 of 4 pipeline files did not validate: {files['bad']}, {files['missing']}"
    )


def test_files_that_all_pass_exit_0(files: dict[str, str]) -> None:
    done = piped("validate", files["good"], files["good"])
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""


def test_json_is_one_document_per_file_one_a_line(files: dict[str, str]) -> None:
    done = piped("validate", files["bad"], files["good"], "--format", "json")
    assert done.returncode == 2, done.stderr
    documents = [json.loads(text) for text in done.stdout.splitlines()]
    assert [(d["pipeline"], d["ok"]) for d in documents] == [
        (files["bad"], False),
        (files["good"], True),
    ]
    assert all(set(d) == FRAME | {"components"} for d in documents)
    assert documents[0]["errors"][0]["line"] == 4
