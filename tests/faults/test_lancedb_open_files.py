"""LanceDB running out of open files stops the run as every other "Too many open files" does.

Under ``ulimit -n 20`` the ``lancedb`` sink's publication failed with LanceDB's
``RuntimeError: ... Too many open files (os error 24)``, said as a component's failure
("fix the cause"); under ``ulimit -n 12`` to ``16`` ``lancedb.connect`` panicked, and
pyo3's ``PanicException`` (a ``BaseException``, which no ``except Exception`` takes)
ended the run with a Python traceback and a Rust one. An ``OSError`` EMFILE was one line,
exit code 1, naming ``ulimit -n``, what was kept and whether to ``--resume``: so is each
of LanceDB's forms now, where the sink connects, writes or publishes.
"""

from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import pytest

from seamline.components.sinks import _lance_table
from seamline.components.sinks import lancedb as lancedb_sink
from seamline.contracts import ResourceExhausted, ShardFailed
from seamline.core import exhaustion
from seamline.core.pipeline import Pipeline
from seamline.core.registry import Registry
from tests.faults.call_scenarios import pipeline_text
from tests.faults.fixture_plugin import fault_environment, fault_registry, info
from tests.faults.test_resource_exhaustion import said

if TYPE_CHECKING:
    from pathlib import Path

EMFILE_RUST = (
    'lance error: LanceError(IO): Too many open files (os error 24) at path "out/emb.lance/'
    'data/.tmpFPkuit", /root/.cargo/registry/src/lance-io-13.0.0/src/object_store.rs:1006:34'
)
EMFILE_PANIC = (
    'Failed to build tokio runtime: Os { code: 24, kind: Uncategorized, message: "Too many '
    'open files" }'
)
SUBPROCESS_PIPELINE = """\
pipeline: lance-open-files
loader: {use: fault-loader, with: {documents: 16}}
model: {use: tiny}
attention: {use: native}
sink: {use: lancedb, with: {path: out/emb.lance}}
run: {batch_size: 4, buckets: [8, 16], checkpoint_every: 8}
"""


class PanicException(BaseException):
    """pyo3's exception for a Rust panic: a ``BaseException``, as pyo3 makes it."""


def test_lancedbs_words_for_too_many_open_files_are_running_out_of_them() -> None:
    assert exhaustion.exhausted_resource(RuntimeError(EMFILE_RUST)) == "open files"
    assert exhaustion.exhausted_resource(RuntimeError("IO error (os error 24)")) == "open files"
    assert exhaustion.exhausted_resource(PanicException(EMFILE_PANIC)) == "open files"
    assert exhaustion.exhausted_resource(RuntimeError("lance error: Not found: x.lance")) is None
    assert (
        exhaustion.exhausted_resource(PanicException("index out of bounds: the len is 3")) is None
    )
    # A panic of another kind stays what it is; so does a stop, whatever it says.
    assert exhaustion.ran_out_in_panic(PanicException("index out of bounds"), "in x", "d") is None
    assert (
        exhaustion.ran_out_in_panic(KeyboardInterrupt("Too many open files"), "in x", "d") is None
    )
    assert exhaustion.ran_out_in_panic(RuntimeError(EMFILE_RUST), "in x", "d") is None, (
        "not a panic"
    )
    stop = exhaustion.ran_out_in_panic(PanicException(EMFILE_PANIC), "in sink 'lancedb'", "d")
    assert isinstance(stop, ResourceExhausted)
    assert stop.resource == "open files"


def registry() -> Registry:
    return Registry([*fault_registry().entries(), info(lancedb_sink.LanceDbSink)])


def run(tmp_path: Path) -> BaseException | None:
    """The fault pipeline into a lancedb table (rows staged two at a time); what it raised."""
    out = tmp_path / "out" / "emb.lance"
    path = tmp_path / "lance.yaml"
    sink = f"{{use: lancedb, with: {{path: {json.dumps(str(out))}, buffer_rows: 2}}}}"
    path.write_text(pipeline_text("{use: native}", sink), encoding="utf-8")
    try:
        Pipeline.from_yaml(path, registry=registry()).run()
    except Exception as caught:  # a PanicException is not one: it fails the test
        return caught
    return None


def panics(*args: Any, **kwargs: Any) -> Any:
    raise PanicException(EMFILE_PANIC)


def runs_out(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError(EMFILE_RUST)


def runs_out_on_the_second_call() -> Any:
    """A staging table's ``add`` that runs out after the first commit's rows are in."""
    import lancedb.table

    added = lancedb.table.LanceTable.add
    calls = 0

    def add(self: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls > 6:  # after the first commit (8 documents, 2 rows an addition)
            raise RuntimeError(EMFILE_RUST)
        return added(self, *args, **kwargs)

    return add


@pytest.mark.parametrize(
    ("where", "kept"),
    [
        ("connect", "nothing was committed, so a run again starts from the beginning"),
        ("write", "what the sink last committed is kept"),
        ("close", "what the sink last committed is kept"),
    ],
)
def test_lancedb_running_out_of_open_files_is_one_line_naming_ulimit(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    where: str,
    kept: str,
) -> None:
    if where == "connect":  # LanceDB's panic, where it builds its runtime
        monkeypatch.setattr(_lance_table.LanceDatabases, "connect", panics)
    elif where == "write":
        import lancedb.table

        monkeypatch.setattr(lancedb.table.LanceTable, "add", runs_out_on_the_second_call())
    else:  # the publication
        monkeypatch.setattr(lancedb_sink, "publish_rows", runs_out)
    error = run(tmp_path)
    assert isinstance(error, ShardFailed), repr(error)
    assert error.component.startswith("sink 'lancedb' ("), error.component
    code, line = said(error, capsys)
    assert code == 1
    assert "\n" not in line
    assert line.startswith("error: ran out of open files in sink 'lancedb' ("), line
    assert kept in line
    assert line.endswith(
        "raise the limit on open files (ulimit -n), then run again (--resume is not needed)"
        if where == "connect"
        else "raise the limit on open files (ulimit -n), then run again with --resume"
    ), line


def test_a_panic_that_is_not_running_out_is_left_as_it_is(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def other_panic(*args: Any, **kwargs: Any) -> Any:
        raise PanicException("called `Option::unwrap()` on a `None` value")

    monkeypatch.setattr(_lance_table.LanceDatabases, "connect", other_panic)
    with pytest.raises(PanicException):
        run(tmp_path)


def test_seamline_run_under_a_low_limit_on_open_files_says_so_in_one_line(
    tmp_path: Path,
) -> None:
    # 13: lancedb.connect panics (12 to 16 did, 10 ran out importing lancedb's modules).
    (tmp_path / "lance.yaml").write_text(SUBPROCESS_PIPELINE, encoding="utf-8")
    command = f"ulimit -n 13; exec {sys.executable} -m seamline.adapters.cli.main run lance.yaml"
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
    assert line.startswith(("error: ran out of open files", "error: Too many open files")), line
    assert "raise the limit on open files (ulimit -n)" in line, line
