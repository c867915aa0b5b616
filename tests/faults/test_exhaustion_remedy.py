"""Running out of memory: the remedy fits the step that ran out.

Under ``ulimit -v 1300000`` the model ran out of memory loading its weights, and the line
said "give the run more memory, or smaller batches (a lower run.batch_size or
run.batch_tokens)": batches play no part in a load. The remedy is now chosen by the
component's call that ran out: a model's ``load`` names its weights, a loader's ``read``
or a model's ``prepare`` (a whole document, tokenized at once) the loader's
``max_bytes``, a model's ``apply`` (and the attention compiled or run) the batches.
(A run sets aside a document whose ``prepare`` fails, for want of memory too, and goes
on: that remedy is for a ``prepare`` failure that reaches the command as running out.)
"""

from __future__ import annotations

import pickle
from typing import TYPE_CHECKING, Any

import pytest

from seamline.contracts import ResourceExhausted, ShardFailed
from tests.core.toy import ToyModel
from tests.faults.fixture_plugin import faults_module
from tests.faults.test_resource_exhaustion import run, said

if TYPE_CHECKING:
    from pathlib import Path

WEIGHTS = "loading the model holds all its weights at once"
MAX_BYTES = "a lower loader.with.max_bytes"
BATCHES = "smaller batches"


def test_the_step_is_read_from_where_the_failure_was_marked() -> None:
    from seamline.core.seams import operation_of

    assert operation_of("model 'bert-encoder' (load, from seamline-components 0.1.0)") == "load"
    assert operation_of("loader 'jsonl' (read)") == "read"
    assert operation_of("model 'a (b)' (prepare, from acme 1)") == "prepare"
    assert operation_of("the pipeline") == ""
    assert operation_of("compiling batches of 4 sequences of 8 tokens") == ""


@pytest.mark.parametrize(
    ("component", "committed", "fix", "not_said"),
    [
        ("model 'bert-encoder' (load, from x 1)", False, WEIGHTS, (BATCHES, MAX_BYTES)),
        ("model 'bert-encoder' (prepare, from x 1)", False, MAX_BYTES, (BATCHES, WEIGHTS)),
        ("loader 'text-files' (read, from x 1)", True, MAX_BYTES, (BATCHES, WEIGHTS)),
        ("model 'bert-encoder' (apply, from x 1)", True, BATCHES, (MAX_BYTES, WEIGHTS)),
        ("sink 'lancedb' (close, from x 1)", True, "give the run more memory,", (BATCHES,)),
    ],
)
def test_the_remedy_fits_the_call_that_ran_out_of_memory(
    capsys: pytest.CaptureFixture[str],
    component: str,
    committed: bool,
    fix: str,
    not_said: tuple[str, ...],
) -> None:
    failed = ShardFailed(0, 1, component, "MemoryError: ", committed)
    failed.__cause__ = MemoryError()
    code, line = said(failed, capsys)
    assert code == 1
    assert line.startswith(f"error: ran out of memory in {component} ("), line
    assert fix in line, line
    for words in not_said:
        assert words not in line, line
    if committed:  # a setting a --resume refuses is said to need --restart
        assert line.endswith("then run again with --resume"), line
        assert fix == WEIGHTS or fix.endswith(",") or "--restart" in line, line
    else:
        assert line.endswith("then run again (--resume is not needed)"), line


def test_the_step_crosses_a_process_boundary() -> None:
    stop = ResourceExhausted("memory", "in model 'm' (load, from x 1)", "MemoryError: ", "load")
    again = pickle.loads(pickle.dumps(stop))
    assert again.step == "load"
    assert WEIGHTS in again.remedy


@pytest.mark.parametrize(
    ("component", "step", "fix"),
    [("model 'toy'", "load", WEIGHTS), ("loader 'fault-loader'", "read", MAX_BYTES)],
)
def test_a_run_that_runs_out_of_memory_says_what_to_change(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    component: str,
    step: str,
    fix: str,
) -> None:
    def out_of_memory(*args: Any, **kwargs: Any) -> Any:
        raise MemoryError("Cannot allocate memory (os error 12)")

    owner = ToyModel if step == "load" else faults_module().FaultLoader
    monkeypatch.setattr(owner, step, out_of_memory)
    error, _, _ = run(tmp_path, attention="{use: native}")
    assert isinstance(error, ShardFailed), repr(error)
    code, line = said(error, capsys)
    assert code == 1
    assert line.startswith(f"error: ran out of memory in {component} ({step}, "), line
    assert fix in line, line
    assert BATCHES not in line, line
