"""A file past ``ulimit -f``, a full disk or a spent quota: one line that names the fix.

Under ``ulimit -f 300`` the file sinks said ``error: File too large (writing ...): ...
fix that, then run again with --resume`` and the ``lancedb`` sink ``failed: the run
failed in sink 'lancedb' (commit, ...): RuntimeError: lance error: LanceError(IO): File
too large (os error 27), /root/.cargo/registry/.../structural.rs:258:9; ... (fix the
cause ...)``: a component's failure, with the path of LanceDB's build, and neither said
what to raise. EFBIG, ENOSPC and EDQUOT are now running out, as EMFILE was: the line
names the file-size limit (``ulimit -f``), the disk or the quota, whichever sink wrote.
"""

from __future__ import annotations

import errno
import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from seamline.components.sinks import lancedb as lancedb_sink
from seamline.contracts import ShardFailed
from seamline.core import exhaustion
from tests.faults.fixture_plugin import fault_environment
from tests.faults.test_lancedb_open_files import SUBPROCESS_PIPELINE, PanicException, run
from tests.faults.test_resource_exhaustion import said

if TYPE_CHECKING:
    from pathlib import Path

SOURCE = "/root/.cargo/registry/src/index.crates.io-1949/lance-file-13.0.0/src/x.rs:258:9"
FILE_SIZE = "raise the limit on a file's size (ulimit -f)"
DISK = "free space on the disk being written to"
QUOTA = "free space within your disk quota"
CASES = [
    (errno.EFBIG, "File too large", "room under the file-size limit", FILE_SIZE),
    (errno.ENOSPC, "No space left on device", "disk space", DISK),
    (errno.EDQUOT, "Disk quota exceeded", "disk quota", QUOTA),
]


@pytest.mark.parametrize(("number", "words", "resource", "fix"), CASES)
def test_rusts_words_for_a_full_disk_are_running_out(
    number: int, words: str, resource: str, fix: str
) -> None:
    rust = RuntimeError(f"lance error: LanceError(IO): {words} (os error {number}), {SOURCE}")
    assert exhaustion.exhausted_resource(rust) == resource
    panic = PanicException(f'Os {{ code: {number}, kind: Other, message: "{words}" }}')
    assert exhaustion.exhausted_resource(panic) == resource
    assert exhaustion.exhausted_resource(OSError(number, words)) == resource
    # The words alone are not the system's: a library may refuse a file as "too large".
    assert exhaustion.exhausted_resource(RuntimeError(words)) is None
    stop = exhaustion.exhausted(rust, "in sink 'lancedb'", f"RuntimeError: {rust}")
    assert stop is not None
    assert ".cargo" not in str(stop), "the path of LanceDB's build is no use to a user"
    assert str(stop).endswith(f"{words} (os error {number}))"), str(stop)
    assert stop.remedy.startswith(fix)


@pytest.mark.parametrize(("number", "words", "resource", "fix"), CASES)
def test_lancedb_out_of_room_is_one_line_naming_the_fix(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    number: int,
    words: str,
    resource: str,
    fix: str,
) -> None:
    def runs_out(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError(f"lance error: LanceError(IO): {words} (os error {number}), {SOURCE}")

    monkeypatch.setattr(lancedb_sink, "publish_rows", runs_out)
    error = run(tmp_path)
    assert isinstance(error, ShardFailed), repr(error)
    code, line = said(error, capsys)
    assert code == 1
    assert "\n" not in line
    assert line.startswith(f"error: ran out of {resource} in sink 'lancedb' (close, "), line
    assert ".cargo" not in line
    assert "what the sink last committed is kept" in line
    assert fix in line
    assert line.endswith(", then run again with --resume"), line


@pytest.mark.parametrize(("number", "words", "resource", "fix"), CASES)
def test_a_file_sink_out_of_room_names_the_fix(
    capsys: pytest.CaptureFixture[str], number: int, words: str, resource: str, fix: str
) -> None:
    code, line = said(OSError(number, words, "out/fs/.e.jsonl.partial.tmp"), capsys)
    assert code == 1
    assert line.startswith(f"error: {words} (out/fs/.e.jsonl.partial.tmp): the output was not")
    assert "fix that" not in line
    assert fix in line
    assert line.endswith(", then run again with --resume"), line


@pytest.mark.parametrize("sink", ["lancedb", "jsonl"])
def test_seamline_run_under_a_low_file_size_limit_names_ulimit_f(tmp_path: Path, sink: str) -> None:
    # 1 KiB: LanceDB's first data file is past it (its RuntimeError, at the first commit),
    # and so is the jsonl sink's partial file (an OSError). Python ignores SIGXFSZ, so a
    # write past the limit fails with EFBIG rather than killing the process.
    text = SUBPROCESS_PIPELINE
    if sink == "jsonl":
        out = json.dumps(str(tmp_path / "out" / "emb.jsonl"))
        text = text.replace(
            "{use: lancedb, with: {path: out/emb.lance}}",
            f"{{use: fault-jsonl, with: {{path: {out}}}}}",
        )
    (tmp_path / "limit.yaml").write_text(text, encoding="utf-8")
    command = f"ulimit -f 1; exec {sys.executable} -m seamline.adapters.cli.main run limit.yaml"
    done = subprocess.run(
        ["bash", "-c", f"{command} --no-compile-cache"],
        cwd=tmp_path,
        env=fault_environment(COLUMNS="400"),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    line = done.stderr.strip().splitlines()[-1]
    assert line.startswith(("error: ran out of room under the file-size", "error: File too large"))
    assert FILE_SIZE in line, line
    assert ".cargo" not in line, line
