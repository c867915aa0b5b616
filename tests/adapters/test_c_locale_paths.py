"""A non-ASCII path under ``LC_ALL=C`` with UTF-8 mode off: the locale named, not the text.

There Python's file system encoding is ASCII, so no file name can hold ``é``. A pipeline's
``path: out/café.jsonl`` (a UTF-8 file) was refused as "a lone surrogate ... give the path
as UTF-8 text", and ``--set sink.with.path=out/café.jsonl`` (argv decoded as ASCII, the
``é`` two lone surrogates) as "character U+DCC3 is not allowed in a YAML file": neither
named the cause or the fix, a UTF-8 locale or ``PYTHONUTF8=1``. Real processes here, as the
locale decides how Python decodes argv and encodes file names at start-up.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import write_pipeline

if TYPE_CHECKING:
    from pathlib import Path

LOCALE = "the locale's (LC_ALL=C); run under a UTF-8 locale (LC_ALL=C.UTF-8) or set PYTHONUTF8=1"


def validate_in_the_c_locale(folder: Path, *args: str | bytes) -> subprocess.CompletedProcess[str]:
    environ = {**fault_environment(), "LC_ALL": "C", "PYTHONUTF8": "0"}
    environ.pop("PYTHONIOENCODING", None)
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", "validate", *args],
        cwd=folder,
        env=environ,
        capture_output=True,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(errors="replace"), done.stderr.decode()
    )


@pytest.mark.parametrize("given", ["in the file", "with --set"])
def test_a_non_ascii_path_in_an_ascii_locale_names_the_locale_and_the_fix(
    tmp_path: Path, given: str
) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    if given == "in the file":
        text = pipeline.read_text(encoding="utf-8").replace('"out/emb.jsonl"', "out/café.jsonl")
        assert "café" in text
        pipeline.write_text(text, encoding="utf-8")
        done = validate_in_the_c_locale(tmp_path, pipeline.name)
    else:  # the bytes a UTF-8 terminal sends
        done = validate_in_the_c_locale(
            tmp_path, pipeline.name, "--set", "sink.with.path=out/café.jsonl".encode()
        )
    assert done.returncode == 2, done.stderr
    said = " ".join(done.stderr.split())
    assert "U+00E9, character 8" in said, said
    assert "file system encoding is ascii" in said, said
    assert LOCALE in said, said
    assert "surrogate" not in said, said
    assert "U+DC" not in said, said
    assert len(done.stderr.strip().splitlines()) == 1, done.stderr
