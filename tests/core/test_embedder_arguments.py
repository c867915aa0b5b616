"""What ``Embedder`` says to a caller who passes it the wrong thing, and after ``close()``.

python.md promises that a keyword that is not a valid pipeline section is a
``ConfigError`` placed by its key path, and that a bad argument to ``encode`` is refused
before any work with a message saying what it must be. The toy model keeps these fast.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import warnings
import weakref
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from seamline.contracts import ConfigError
from seamline.core.embedder import Embedder
from tests.core.toy import toy_registry
from tests.fake_frames import NA, DataFrame, PolarsFrame


def toy_embedder(**keywords: Any) -> Embedder:
    keywords.setdefault("model", {"use": "toy"})
    return Embedder(attention="native", registry=toy_registry(), **keywords)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"model": "bert-encoder"}, r"\['model'\]: model is a str, not a mapping"),
        ({"model": None}, r"\['model'\]: model is empty \(null\), not a mapping"),
        ({"model": [1, 2]}, r"\['model'\]: model is a list, not a mapping"),
        ({"run": "x"}, r"\['run'\]: run is a str, not a mapping"),
        ({"run": [("batch_size", 8)]}, r"\['run'\]: run is a list, not a mapping"),
        ({"trust": "x"}, r"\['trust'\]: trust is a str, not a mapping"),
    ],
)
def test_a_keyword_that_is_not_a_mapping_is_a_config_error_placed_by_its_key(
    keywords: dict[str, Any], message: str
) -> None:
    # dict("bert-encoder") raised "ValueError: dictionary update sequence element #0 ...".
    with pytest.raises(ConfigError, match=r"^Embedder\(\.\.\.\)" + message) as caught:
        toy_embedder(**keywords)
    assert "give it as a mapping" in str(caught.value)


_QUESTIONS = DataFrame({"text": ["how do I catch an exception?", "sorting a list", "third"]})
_PASS_A_COLUMN = r"^texts is a pandas DataFrame \(2 dimensions\): pass one column, df\['text'\]$"


@pytest.fixture(scope="module")
def embedder() -> Iterator[Embedder]:
    with toy_embedder() as built:
        yield built


@pytest.mark.parametrize(
    ("call", "message"),
    [
        # list(None) said "'NoneType' object is not iterable", naming no argument
        (lambda e: e.encode(None), "texts must be a str or a sequence of str, not NoneType"),
        (lambda e: e.encode(5), "texts must be a str or a sequence of str, not int"),
        (lambda e: e.submit(5), "texts must be a str or a sequence of str, not int"),
        # a str failed in the batching with "'<' not supported between ..."
        (lambda e: e.encode("a", batch_tokens="512"), "batch_tokens must be an int .*not str"),
        # 2.5 and True were taken as budgets
        (lambda e: e.encode("a", batch_tokens=2.5), "batch_tokens must be an int .*not float"),
        (lambda e: e.encode("a", batch_tokens=True), "batch_tokens must be an int .*not bool"),
        (lambda e: e.encode([], batch_tokens="1"), "batch_tokens must be an int .*not str"),
        (lambda e: e.submit("a", batch_tokens="1"), "batch_tokens must be an int .*not str"),
        # "no" is true to Python: the opposite of what it says
        (lambda e: e.encode("a", normalize="no"), "normalize must be True, False or None, not str"),
        (lambda e: e.encode("a", queries="no"), "queries must be True, False or None, not str"),
        (lambda e: e.submit("a", queries=1), "queries must be True, False or None, not int"),
        # numpy's own "iteration over a 0-d array"
        (lambda e: e.encode(np.array("abc")), r"texts is a NumPy array \(0 dimensions\)"),
        (lambda e: e.encode(np.array([["a"]])), r"texts is a NumPy array \(2 dimensions\)"),
        # a DataFrame was embedded as its column names: one vector, for "text"
        (lambda e: e.encode(_QUESTIONS), _PASS_A_COLUMN),
        (lambda e: e.submit(_QUESTIONS), _PASS_A_COLUMN),
        (lambda e: e.encode(PolarsFrame({"text": ["a"]})), "texts is a polars DataFrame"),
    ],
)
def test_an_argument_of_the_wrong_type_is_a_type_error_saying_what_it_must_be(
    embedder: Embedder, call: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        call(embedder)


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"queries": "no"}, "queries must be True or False, not str"),
        ({"max_wait": "0.1"}, "max_wait must be a number of seconds, not str"),
    ],
)
def test_an_embedder_setting_of_the_wrong_type_is_refused(
    keywords: dict[str, Any], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        toy_embedder(**keywords)


class _Watches:
    """A monitor without ``bind``: the hub's first call to it failed, logged, and the
    embedder went on, so the program's monitor observed less than it was meant to."""

    name = "watches"

    def observe(self, event: Any) -> None:
        pass

    def close(self) -> None:
        pass


class _Complete(_Watches):
    def bind(self, publish: Any) -> None:
        pass


@pytest.mark.parametrize(
    ("monitors", "message"),
    [
        ([_Watches()], r"^monitors\[0\] is a _Watches without bind\(\): a monitor has a name"),
        ([_Complete(), _Complete], r"^monitors\[1\] is the class _Complete, not a monitor"),
        ("log", r"^monitors must be a list of monitors .*, not str$"),
    ],
)
def test_monitors_that_are_not_monitors_are_refused_before_the_model_is_built(
    monitors: Any, message: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``Pipeline.run(extra_monitors=...)`` refused these with a TypeError; ``Embedder`` took
    them. Refused as the first check, before the model: building one is an error here."""
    import seamline.core.embedder as embedder_module

    def no_model(*_: Any) -> None:
        raise AssertionError("the model was built before the monitors were checked")

    monkeypatch.setattr(embedder_module, "_model_of", no_model)
    with pytest.raises(TypeError, match=message):
        toy_embedder(monitors=monitors)


@pytest.mark.parametrize(
    ("gap", "named"),
    [(float("nan"), "NaN"), (np.float32("nan"), "NaN"), (None, "None"), (NA, "<NA>")],
)
def test_a_missing_text_is_named_as_missing_with_its_index_and_the_fix(
    embedder: Embedder, gap: object, named: str
) -> None:
    # "texts[1] is a float, not a str": a Series with a gap read as one holding a number.
    message = rf"^texts\[1\] is missing \({named}\): .*\.dropna\(\).*\.fillna\(''\)"
    with pytest.raises(TypeError, match=message):
        embedder.encode(["a", gap, "b"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match=message):
        embedder.submit(np.array(["a", gap], dtype=object))
    with pytest.raises(TypeError, match=r"^texts\[1\] is a float, not a str$"):
        embedder.encode(["a", 1.5])  # type: ignore[list-item]  # a number is still one


@pytest.mark.parametrize("texts", [["a", 3], _QUESTIONS, ["a", None], 5])
def test_a_refused_text_shows_the_keyword_hint_wrapper_once(embedder: Embedder, texts: Any) -> None:
    # encode's refusal passed through the wrapper twice (encode's and submit's): a 51-line
    # traceback in Jupyter, its reader shown the same hint frame two times.
    with pytest.raises(TypeError) as caught:
        embedder.encode(texts)
    names = [entry.name for entry in caught.traceback]
    assert names.count("checked") == 1, names
    assert "submit" not in names


def test_whole_numbers_and_flags_of_numpy_are_taken(embedder: Embedder) -> None:
    expected = embedder.encode(["a b"], batch_tokens=8, normalize=True)
    got = embedder.encode(["a b"], batch_tokens=np.int64(8), normalize=np.bool_(True))
    np.testing.assert_allclose(got, expected, atol=1e-6)
    from_array = embedder.encode(np.array(["a b"]), batch_tokens=8, normalize=True)
    np.testing.assert_allclose(from_array, expected, atol=1e-6)


@pytest.mark.parametrize(
    "call",
    [
        lambda e: e.encode(["a"]),
        lambda e: e.encode([]),  # returned an empty array of the known width
        lambda e: e.dimension,
        lambda e: e.submit(["a"]),
        lambda e: e.drain(0.01),
    ],
)
def test_every_call_of_a_closed_embedder_says_it_is_closed(call: Any) -> None:
    embedder = toy_embedder()
    assert embedder.dimension == 32  # known now: it used to be answered after close
    embedder.close()
    with pytest.raises(RuntimeError, match="this Embedder is closed"):
        call(embedder)


def test_a_closed_embedder_says_so_and_refuses_a_with_block() -> None:
    # `with e:` on a closed embedder was taken; the error came at the first encode inside,
    # and nothing let a long-lived process ask whether its embedder was still usable.
    embedder = toy_embedder()
    assert not embedder.closed
    with embedder:
        assert not embedder.closed
    assert embedder.closed
    with pytest.raises(RuntimeError, match="this Embedder is closed"), embedder:
        pytest.fail("the block of a closed embedder ran")


@pytest.mark.parametrize(
    ("keyword", "instead"),
    [
        ("batch_size", "batch_tokens=N"),
        ("normalize_embeddings", "normalize=True"),
        ("show_progress_bar", "seamline run shows one"),
        ("prompt_name", "queries=True"),
        # Only "queries=True, the model's own query prefix": for MiniLM (none), no change.
        ("prompt_name", "model.with.prefix.query"),
        ("prompt", "model.with.prefix.document"),
        ("prompt", "model.with.prefix.query"),
        # Was "the pipeline's precision: section": the compute precision, not the output's.
        ("precision", "quantizes the output vectors"),
        ("precision", "np.packbits(vectors > 0, axis=-1)"),
        ("convert_to_tensor", "always a NumPy float32 array"),
    ],
)
def test_a_sentence_transformers_keyword_names_seamlines_equivalent(
    embedder: Embedder, keyword: str, instead: str
) -> None:
    for method in ("encode", "submit"):  # python.md: submit takes encode's arguments
        with pytest.raises(TypeError) as refused:
            getattr(embedder, method)(["a"], **{keyword: 8})
        message = str(refused.value)
        expected = f"Embedder.{method}() got an unexpected keyword argument '{keyword}'"
        assert message.startswith(expected)
        assert instead in message
        assert "docs/python.md" in message


def test_another_unknown_keyword_is_pythons_own_error(embedder: Embedder) -> None:
    with pytest.raises(TypeError) as refused:
        embedder.encode(["a"], batchtokens=8)
    expected = "Embedder.encode() got an unexpected keyword argument 'batchtokens'"
    assert str(refused.value) == expected


def test_texts_submitted_and_not_yet_embedded_fail_when_the_embedder_closes() -> None:
    embedder = toy_embedder()
    done = embedder.submit(["embedded before close"])
    assert embedder.drain(5.0) == 1
    waiting = embedder.submit(["still queued"])
    told: list[bool] = []
    waiting.add_done_callback(lambda p: told.append(p.done()))
    embedder.close()
    assert told == [True], "a server waiting on a callback is told at close"
    with pytest.raises(RuntimeError, match="this Embedder is closed"):
        waiting.result()  # was embedded by the released model
    assert done.result().shape == (1, 32)  # type: ignore[union-attr]


def test_closing_releases_the_weights_and_the_compiled_steps() -> None:
    # close() released nothing: a closed embedder still referenced (an attribute, a cache,
    # a traceback) kept its weights on the device and every compiled program (~100 MiB a
    # MiniLM) until the object itself was collected.
    embedder = toy_embedder()
    embedder.encode(["a b", "c d e"])
    weights = weakref.ref(embedder.encoder.params()["table"])
    assert embedder.encoder.steps.in_use()
    embedder.close()
    gc.collect()
    assert weights() is None
    assert embedder.encoder.steps.in_use() == []  # each holds its executable


def test_a_closed_embedder_dropped_is_freed_without_the_cyclic_collector() -> None:
    # Its queue held its pass (a bound method) and its compiled steps its report: a closed
    # and dropped Embedder (encoder, compiled steps, planner...) lived on in those cycles
    # until the cyclic collector next ran.
    embedder = toy_embedder()
    embedder.encode(["a b", "c d e"])
    gc.collect()
    gc.disable()
    try:
        embedder.close()
        gone = weakref.ref(embedder)
        steps = weakref.ref(embedder.encoder.steps)
        del embedder
        assert gone() is None, "freed when its last reference went"
        assert steps() is None
    finally:
        gc.enable()


def test_a_child_forked_after_the_runtime_started_is_refused_at_once() -> None:
    # It hung for ever (multiprocessing's default start method on Linux), with an
    # embedder inherited from the parent and with one built in the child alike.
    embedder = toy_embedder()
    embedder.encode(["a b"])  # the runtime has started here
    context = multiprocessing.get_context("fork")
    answers = context.Queue()
    child = context.Process(target=_use_after_fork, args=(embedder, answers))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # JAX's own "fork() ... deadlock"
        child.start()
    try:
        told = answers.get(timeout=60)
    finally:
        child.join(10)
        if child.is_alive():
            child.kill()
    embedder.close()
    for what in ("this Embedder", "an Embedder"):
        assert f"{what} cannot run in this process" in told[what], told
        assert "multiprocessing.get_context('spawn')" in told[what]


def test_building_an_embedder_is_when_the_runtime_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    # Only the first model call marked it: a child forked after an Embedder was built and
    # never used (gunicorn --preload, one built at import) hung for ever, unrefused.
    from seamline.core import forking

    monkeypatch.setattr(forking, "_started_in", None)
    with toy_embedder():
        assert forking._started_in == os.getpid()


def _use_after_fork(embedder: Embedder, answers: Any) -> None:
    told = {}
    for what, call in (
        ("this Embedder", lambda: embedder.encode(["c d"])),
        ("an Embedder", toy_embedder),
    ):
        try:
            call()
        except RuntimeError as err:
            told[what] = str(err)
        else:
            told[what] = "no error"
    answers.put(told)


def test_pickling_an_embedder_names_the_fix(embedder: Embedder) -> None:
    """``pool.map(f, ..., embedder)`` said ``cannot pickle '_thread.lock' object``: not why,
    nor what to do instead (python.md: build one in each worker)."""
    import pickle

    with pytest.raises(TypeError, match=r"an Embedder cannot be pickled: .*build one in each"):
        pickle.dumps(embedder)
    assert embedder.encode("still usable").shape == (embedder.dimension,)
