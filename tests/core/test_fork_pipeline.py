"""A ``Pipeline.run()`` in a child forked after the parent's run is refused, not hung.

python.md ("Processes") promises a ``RuntimeError`` naming the fix when a forked child
uses a ``Pipeline``'s model. ``Pipeline.run`` asked JAX for its devices first, which
recorded the child's own pid as the process that started the runtime: the model's own
check then let the child through, and it waited for ever in the attention's verification.
"""

from __future__ import annotations

import multiprocessing
import os
import queue
import warnings
from typing import Any

import pytest

from seamline.core import forking
from seamline.core.config import parse_pipeline
from seamline.core.pipeline import Pipeline
from tests.core.toy import toy_registry

TEXT = (
    "pipeline: toy\n"
    "loader: {use: list, with: {texts: ['w w', 'x y']}}\n"
    "model: {use: toy}\n"
    "attention: {use: native}\n"
    "sink: {use: memory}\n"
)


def toy_pipeline() -> Pipeline:
    registry = toy_registry()
    return Pipeline(parse_pipeline(TEXT, "p.yaml", registry), registry)


def _run_after_fork(answers: Any) -> None:
    try:
        toy_pipeline().run()
    except BaseException as err:  # a ShardFailed wrapping it would advise --resume
        answers.put(f"{type(err).__name__}: {err}")
    else:
        answers.put("no error")


def test_a_pipeline_run_in_a_forked_child_raises_runtime_error_at_once() -> None:
    toy_pipeline().run()  # the runtime has started here
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_run_after_fork, args=(answers,))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # JAX's own "fork() ... deadlock"
        child.start()
    try:
        told = answers.get(timeout=30)
    except queue.Empty:
        told = "the child hung"
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
    assert told.startswith("RuntimeError: this pipeline's model cannot run in this process"), told
    assert "multiprocessing.get_context('spawn')" in told


def test_a_childs_own_devices_do_not_overwrite_the_parents_record(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The child's jax_devices() (explain, the precision gate) wrote its own pid over the
    # parent's, so every later check in it took the runtime for its own.
    monkeypatch.setattr(forking, "_started_in", os.getpid() + 1)
    forking.note_runtime_started()
    with pytest.raises(RuntimeError, match="was forked from process"):
        forking.refuse_after_fork("a model")
