"""Running out of memory or open files stops the run; no kernel is demoted for it.

Under ``ulimit -v`` every candidate failed to compile with a ``MemoryError`` (or to run
with XLA's ``RESOURCE_EXHAUSTED``), each was demoted in turn, and the run ended as a
user error, exit code 2: "no attention candidate can serve B512xTq256...", ~1,500
characters blaming the kernels, with nothing said of the checkpoint it kept. Likewise
``ulimit -n 8`` ("Too many open files"). Here the errors are injected where a
candidate is traced (every candidate passes through ``CheckedAttention``) or where its
outputs are fetched; the run goes through the Python API with the fault fixtures'
checkpointing sink, and its error through the command line's handling.
"""

from __future__ import annotations

import errno
import json
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

import jax
import pytest
import typer

from seamline.adapters.cli.commands.run import KEPT, NOTHING_KEPT
from seamline.adapters.cli.errors import environment_errors, user_errors
from seamline.contracts import Fallback, ResourceExhausted, ShardFailed
from seamline.core import commits
from seamline.core.attention import checked, steps
from seamline.core.pipeline import Pipeline
from tests.core.toy import MemorySink, RecordingMonitor
from tests.faults.call_scenarios import pipeline_text
from tests.faults.fixture_plugin import fault_registry, faults_module

if TYPE_CHECKING:
    from pathlib import Path

OUT_OF_MEMORY = "Unable to allocate 192. MiB for an array with shape (512, 256, 12, 32)"
ATTENTION = "{use: [fault-raise, native], verify: false, with: {fault-raise: {at: 99}}}"


def run(
    tmp_path: Path, attention: str = ATTENTION
) -> tuple[BaseException | None, str | None, list[Fallback]]:
    """Run the fault pipeline into a checkpointing sink: what it raised, the cursor of the
    checkpoint it left (None: none), and the fallbacks its monitor saw."""
    MemorySink.reset()
    RecordingMonitor.events.clear()
    out = tmp_path / "out" / "emb.jsonl"
    path = tmp_path / "faults.yaml"
    sink = f"{{use: fault-jsonl, with: {{path: {json.dumps(str(out))}}}}}"
    path.write_text(pipeline_text(attention, sink), encoding="utf-8")
    error: BaseException | None = None
    try:
        Pipeline.from_yaml(path, registry=fault_registry()).run()
    except Exception as caught:
        error = caught
    checkpoint = out.parent / ".emb.jsonl.checkpoint"
    cursor = None
    if checkpoint.exists():
        cursor = commits.decode(json.loads(checkpoint.read_text(encoding="utf-8"))["cursor"])[0]
    fallbacks = [e for e in RecordingMonitor.events if isinstance(e, Fallback)]
    RecordingMonitor.events.clear()
    return error, cursor, fallbacks


def said(error: BaseException | None, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    """What ``seamline run`` makes of ``error``: its exit code and its one line."""

    def again() -> None:
        assert error is not None
        raise error

    with pytest.raises(typer.Exit) as stopped:
        user_errors(lambda: environment_errors(again, KEPT, nothing_committed=NOTHING_KEPT))
    return stopped.value.exit_code, capsys.readouterr().err.strip()


@pytest.mark.parametrize(
    ("raised", "resource", "fix"),
    [
        (MemoryError(OUT_OF_MEMORY), "memory", "give the run more memory, or smaller batches"),
        (
            OSError(errno.EMFILE, "Too many open files", "/root/.cache/seamline/jax"),
            "open files",
            "raise the limit on open files (ulimit -n)",
        ),
    ],
)
def test_running_out_while_compiling_stops_the_run_without_demoting_a_kernel(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    raised: Exception,
    resource: str,
    fix: str,
) -> None:
    def out_of_it(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise raised

    monkeypatch.setattr(checked.CheckedAttention, "__call__", out_of_it)
    error, cursor, fallbacks = run(tmp_path)
    assert isinstance(error, ShardFailed), repr(error)  # not "no attention candidate can serve"
    cause = error.__cause__
    assert isinstance(cause, ResourceExhausted), repr(cause)
    assert cause.resource == resource
    assert fallbacks == [], "no kernel was demoted for the machine's limit"
    assert cursor is None
    code, line = said(error, capsys)
    assert code == 1
    assert "\n" not in line
    assert line.startswith(f"error: ran out of {resource} compiling batches of 4 sequences of "), (
        line
    )
    assert "with attention 'fault-raise'" in line
    assert "no attention candidate" not in line
    assert "nothing was committed, so a run again starts from the beginning" in line
    assert f": {fix}" in line
    assert len(line) < 500, line


def test_running_out_while_running_keeps_the_checkpoint_and_says_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    fetched = jax.device_get
    calls = 0

    def fifth_runs_out(value: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls >= 5:  # after the first commit (8 documents, 4 a batch, one batch ahead)
            raise jax.errors.JaxRuntimeError(
                "RESOURCE_EXHAUSTED: Out of memory allocating 4855956624 bytes."
            )
        return fetched(value)

    monkeypatch.setattr(steps, "jax", SimpleNamespace(device_get=fifth_runs_out))
    error, cursor, fallbacks = run(tmp_path)
    assert isinstance(error, ShardFailed), repr(error)
    assert isinstance(error.__cause__, ResourceExhausted), repr(error.__cause__)
    assert fallbacks == []
    assert cursor == "7", "the commit after 8 documents is kept"
    code, line = said(error, capsys)
    assert code == 1
    assert line == (
        "error: ran out of memory running batches of 4 sequences of 4 tokens with attention "
        "'fault-raise' (JaxRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating "
        "4855956624 bytes.): the output was not published, and what the sink last committed "
        "is kept: give the run more memory (smaller batches, a lower run.batch_size or "
        "run.batch_tokens, cannot be resumed: they need --restart, which starts over), then run "
        "again with --resume"
    )


def test_running_out_while_asking_a_kernel_is_no_refusal_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def out_of_memory(self: Any, spec: Any) -> Any:
        raise MemoryError

    monkeypatch.setattr(faults_module().RaisingAttention, "supports", out_of_memory)
    error, _, _ = run(tmp_path)
    assert isinstance(error, ShardFailed), repr(error)
    cause = error.__cause__
    assert isinstance(cause, ResourceExhausted), repr(cause)
    assert cause.where.startswith("asking attention 'fault-raise' whether it serves B4x")


def test_running_out_while_timing_kernels_saves_no_timings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An entry without the kernel that could not be timed would be kept in the tuning
    # cache, and rank it last on every later run: a demotion that outlived the run.
    from seamline.core.attention import tuning

    def out_of_memory(candidate: Any, specs: Any) -> Any:
        raise MemoryError(OUT_OF_MEMORY)

    cache = tmp_path / "tuning"
    monkeypatch.setenv("SEAMLINE_TUNING_DIR", str(cache))
    monkeypatch.setattr(tuning, "time_candidate", out_of_memory)
    error, _, _ = run(
        tmp_path,
        "{use: [fault-raise, native], select: measure, verify: false, "
        "with: {fault-raise: {at: 99}}}",
    )
    assert isinstance(error, ShardFailed), repr(error)
    cause = error.__cause__
    assert isinstance(cause, ResourceExhausted), repr(cause)
    assert cause.where.startswith("timing attention 'fault-raise' on B4x")
    assert not cache.exists() or not any(cache.iterdir()), "no timings were saved"


def test_on_chip_memory_a_kernel_asks_for_is_still_the_kernels_fault() -> None:
    from seamline.core.exhaustion import exhausted_resource

    vmem = jax.errors.JaxRuntimeError(
        "RESOURCE_EXHAUSTED: Ran out of memory in memory space vmem while allocating"
    )
    assert exhausted_resource(vmem) is None
    assert exhausted_resource(RuntimeError("MemoryError in a kernel's message")) is None
    assert exhausted_resource(OSError(errno.ENFILE, "File table overflow")) == "open files"
    wrapped = RuntimeError("while compiling")
    wrapped.__cause__ = MemoryError()
    assert exhausted_resource(wrapped) == "memory"


def test_an_accelerators_own_memory_running_out_is_left_to_negotiation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A GPU's HBM running out under a kernel that materializes the scores is where a flash
    # kernel still fits: that stays a candidate's failure (the next one is tried), where
    # the CPU backend's same error is the host's memory, every candidate's.
    from seamline.core.exhaustion import exhausted_resource

    hbm = jax.errors.JaxRuntimeError(
        "RESOURCE_EXHAUSTED: Out of memory allocating 4855956624 bytes."
    )
    assert exhausted_resource(hbm) == "memory"
    monkeypatch.setattr(jax, "default_backend", lambda: "gpu")
    assert exhausted_resource(hbm) is None
    assert exhausted_resource(MemoryError()) == "memory", "the host's memory, on any backend"


def test_the_system_running_out_anywhere_in_the_run_names_the_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # `ulimit -n 8` ran out at the sink's temporary file: "...: fix that, then run again".
    files = OSError(errno.EMFILE, "Too many open files", "out/fd/.e.jsonl.partial.tmp")
    code, line = said(files, capsys)
    assert code == 1
    assert line == (
        "error: Too many open files (out/fd/.e.jsonl.partial.tmp): the output was not "
        "published, and what the sink last committed is kept: raise the limit on open files "
        "(ulimit -n), then run again with --resume"
    )
    # A component's call that ran out of memory (a loader, a sink), not a kernel's.
    failed = ShardFailed(0, 1, "loader 'jsonl' (read, from x 1)", "MemoryError: ", True)
    failed.__cause__ = MemoryError()
    code, line = said(failed, capsys)
    assert code == 1
    assert line.startswith("error: ran out of memory in loader 'jsonl' (read, from x 1) (")
    assert line.endswith(
        "cannot be resumed: it needs --restart, which starts over), then run again with --resume"
    ), "a lower max_bytes is not advised for the --resume that refuses it"
    assert "loader.with.max_bytes" in line, "a loader's read holds a document, not a batch"
