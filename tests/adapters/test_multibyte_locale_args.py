"""UTF-8 arguments under a multibyte locale (``ja_JP.eucJP``): read as typed, never a traceback.

Python decodes ``argv`` there with the C library, and its own ``euc_jp`` codec cannot
always encode back what that made: ``seamline search out/x.jsonl "東京"`` typed on a
UTF-8 terminal ended in a UnicodeEncodeError traceback from ``as_utf8`` (which undid the
decoding with ``os.fsencode`` and caught only UnicodeDecodeError), as did ``--set``. Real
processes here, as the locale decides how Python decodes argv at start-up; the locale is
built with ``localedef`` (skipped where it cannot be).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from seamline.adapters.cli import options
from seamline.adapters.cli.errors import RefusedValue
from tests.faults.fixture_plugin import fault_environment
from tests.faults.kill_points import write_pipeline
from tests.locales import built_locale, in_locale

if TYPE_CHECKING:
    from pathlib import Path

EUC_JP = "ja_JP.eucJP"
TOKYO = "東京".encode()  # the bytes a UTF-8 terminal sends


@pytest.fixture(scope="module")
def euc_jp_locales(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return built_locale(tmp_path_factory.mktemp("locales"), "ja_JP", "EUC-JP", EUC_JP)


def seamline(folder: Path, locales: Path, *args: str | bytes) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, "-m", "seamline.adapters.cli.main", *args],
        cwd=folder,
        env=in_locale(EUC_JP, locales, **{"PYTHONPATH": fault_environment()["PYTHONPATH"]}),
        capture_output=True,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args,
        done.returncode,
        done.stdout.decode("euc_jp", errors="replace"),
        done.stderr.decode("euc_jp", errors="replace"),
    )


@pytest.mark.parametrize("joined", [False, True], ids=["--set V", "--set=V"])
def test_a_utf8_set_value_under_euc_jp_is_read_as_typed(
    tmp_path: Path, euc_jp_locales: Path, joined: bool
) -> None:
    pipeline = write_pipeline(tmp_path, "relative")
    value = b"pipeline=" + TOKYO
    given: list[str | bytes] = [b"--set=" + value] if joined else ["--set", value]
    done = seamline(tmp_path, euc_jp_locales, "validate", pipeline.name, *given, "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert json.loads(done.stdout)["name"] == "東京"


def test_a_utf8_search_query_under_euc_jp_is_no_traceback(
    tmp_path: Path, euc_jp_locales: Path
) -> None:
    # Reaching the index at all is the point: the query was a traceback before it.
    done = seamline(tmp_path, euc_jp_locales, "search", "missing.jsonl", TOKYO)
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    assert "missing.jsonl" in done.stderr, done.stderr


def test_an_argument_whose_bytes_cannot_be_told_is_refused_naming_the_locale(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def cannot(text: str) -> bytes:
        raise UnicodeEncodeError("euc_jp", text, 1, 2, "illegal multibyte sequence")

    monkeypatch.setattr(os, "fsencode", cannot)
    monkeypatch.setattr(options, "_typed_bytes", lambda argument: None)
    monkeypatch.setenv("LC_ALL", EUC_JP)
    with pytest.raises(RefusedValue, match=r"the locale \(LC_ALL=ja_JP\.eucJP\)") as caught:
        options.as_utf8("\udce6\x9d延根")
    assert "LC_ALL=C.UTF-8" in str(caught.value)
