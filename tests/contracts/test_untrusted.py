"""Opening what seamline did not write: the manifest's schema, stored rows, and safe file opening.

``seamline.contracts.untrusted``, ``.manifest`` and ``.stored`` are what ``seamline
search`` and the sinks' readers share; the "tampered inputs" table shows them
through the command, these test each check alone.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from seamline.contracts import ConfigError, UserError
from seamline.contracts.manifest import (
    Outputs,
    manifest_json,
    open_output,
    output_files,
    output_folder,
    read_manifest_text,
    validate_manifest,
)
from seamline.contracts.stored import json_row, open_matrix, vector_of
from seamline.contracts.untrusted import (
    LineTooLong,
    NotRegularFile,
    OutsideFolder,
    bounded_lines,
    cut,
    is_count,
    open_regular,
    read_regular,
    strict_json,
    unicode_problem,
    visible,
    within,
)

MODEL = {"use": "toy", "with": {}}


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A FIFO that nobody writes; opened for writing every 10 s, so that a reader that
    waits on it fails its test instead of hanging the session."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(10):  # every open that waits is ended, one after another
            with contextlib.suppress(OSError):  # ENXIO: nobody is waiting now
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()
    yield path
    done.set()


def test_a_fifo_is_refused_at_once_not_waited_on(fifo: Path) -> None:
    started = time.monotonic()
    with pytest.raises(NotRegularFile, match="a FIFO"):
        open_regular(fifo)
    with pytest.raises(ConfigError, match="the manifest is a FIFO"):
        read_manifest_text(fifo)
    with pytest.raises(UserError, match=r"pipe \(the records file that m.json names\) is a FIFO"):
        open_output(fifo, "records", Path("m.json"))
    assert time.monotonic() - started < 5, "an open waited for a writer"


def test_a_device_is_refused(tmp_path: Path) -> None:
    with pytest.raises(NotRegularFile, match="a character device"):
        read_regular("/dev/zero", 10)


def test_a_link_is_refused_where_links_are_not_followed(tmp_path: Path) -> None:
    target = tmp_path / "target"
    target.write_text("x", encoding="utf-8")
    (tmp_path / "link").symlink_to(target)
    assert read_regular(tmp_path / "link", 10) == b"x"
    with pytest.raises(NotRegularFile, match="a symbolic link"):
        read_regular(tmp_path / "link", 10, follow=False)
    with pytest.raises(ConfigError, match="the manifest is a symbolic link"):
        read_manifest_text(tmp_path / "link")


def test_a_read_is_bounded_one_byte_past_the_limit(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 100)
    assert len(read_regular(tmp_path / "big", 10)) == 11


def test_lines_are_bounded_and_numbered(tmp_path: Path) -> None:
    path = tmp_path / "lines"
    path.write_bytes(b"one\n\n  \ntwo\n" + b"y" * 50 + b"\nlast")
    with path.open("rb") as handle:
        got = []
        with pytest.raises(LineTooLong) as caught:
            got.extend(bounded_lines(handle, 10))
    assert got == [(1, b"one"), (4, b"two")]
    assert caught.value.number == 5
    with path.open("rb") as handle:
        assert list(bounded_lines(handle, 50))[-1] == (6, b"last")


@pytest.mark.parametrize("relative", [False, True])
def test_a_name_must_stay_in_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, relative: bool
) -> None:
    out = tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    (out / "emb.jsonl").write_text("", encoding="utf-8")
    (tmp_path / "secret").write_text("", encoding="utf-8")
    (out / "out-link").symlink_to(tmp_path / "secret")
    (out / "in-link").symlink_to(out / "emb.jsonl")
    (out / "sub-link").symlink_to(tmp_path, target_is_directory=True)
    folder = out
    if relative:  # as a user types it, from a working directory of the test's own
        monkeypatch.chdir(tmp_path)
        folder = Path("out")
    assert within(folder, "emb.jsonl") == (out / "emb.jsonl").resolve()
    assert within(folder, "sub/new.jsonl") == (out / "sub" / "new.jsonl").resolve()
    assert within(folder, str(out / "emb.jsonl")) == (out / "emb.jsonl").resolve()
    assert within(folder, "in-link") == (out / "emb.jsonl").resolve()
    for name, why in [
        ("../secret", "climbs out"),
        ("sub/../emb.jsonl", "climbs out"),  # refused even where it would stay inside
        (str(tmp_path / "secret"), "is a path outside"),
        ("/etc/passwd", "is a path outside"),
        ("out-link", "leads through a symbolic link outside"),
        ("sub-link/secret", "leads through a symbolic link outside"),
        ("", "is not a file name"),
        ("a\0b", "is not a file name"),
    ]:
        with pytest.raises(OutsideFolder, match=why):
            within(folder, name)


def test_strict_json_refuses_what_python_accepts() -> None:
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}'):
        with pytest.raises(ValueError, match="is not a JSON value"):
            strict_json(text)
    with pytest.raises(RecursionError):
        strict_json("[" * 100_000 + "]" * 100_000)


def test_a_key_twice_in_an_object_is_refused_where_asked() -> None:
    """Python keeps the last of two equal keys: a tampered manifest could show a reviewer's
    parser one model and seamline another."""
    text = '{"model": {"use": "a"}, "model": {"use": "b"}}'
    assert strict_json(text) == {"model": {"use": "b"}}  # a record line: not asked
    with pytest.raises(ValueError, match="key 'model' appears twice in an object"):
        strict_json(text, unique_keys=True)
    with pytest.raises(ConfigError, match=r"the manifest is not JSON \(key 'model' appears twice"):
        manifest_json(text, "out/emb.manifest.json")


def test_a_count_is_ascii_digits_that_int_takes() -> None:
    for text in ("0", "7", "1" * 20):
        assert is_count(text)
        int(text)
    for text in ("", "²", "1²", "\u0661", "-1", "+1", " 1", "1_0", "1" * 21):
        assert not is_count(text), text  # '²' passes isdigit(), and int() refuses it


# -- the manifest ------------------------------------------------------------------------


def test_unknown_keys_are_ignored_and_known_ones_checked_strictly() -> None:
    manifest = validate_manifest(
        {"model": MODEL, "added_by_a_newer_seamline": {"x": 1}, "outputs": {"sink": "jsonl"}},
        "m.json",
    )
    assert manifest.model is not None
    assert manifest.model.use == "toy"
    assert manifest.attention_served is None, "a manifest from before it was recorded"
    served = {"B2xTq8:float32:segments,cpu": "cpu-flash"}
    assert validate_manifest({"attention_served": served}, "m.json").attention_served == served
    for data, problem in [
        ({"model": MODEL, "outputs": "junk"}, r"m.json: outputs: Input should be a valid dict"),
        ({"model": {"use": "toy"}}, r"m.json: missing required field 'model.with'"),
        ({"model": {"use": 5, "with": {}}}, r"m.json: model.use: Input should be a valid string"),
        (
            {"model": MODEL, "outputs": {"index": {"nprobes": "7"}}},
            r"outputs.index.nprobes: Input should be a valid integer \(got '7'\)",
        ),
        ({"model": MODEL, "seamline_manifest": 2}, "written by a newer seamline"),
        (["a list"], "a manifest is a JSON object, not list"),
        ({"model": MODEL, "attention_served": {"B1:float32": 3}}, "attention_served.B1:float32"),
        (
            {"model": MODEL, "attention_served": {f"B{i}": "native" for i in range(1025)}},
            "attention_served: Dictionary should have at most 1024 items",
        ),
    ]:
        with pytest.raises(ConfigError, match=problem):
            validate_manifest(data, "m.json")


def test_a_problem_is_located_where_the_caller_can_locate_it() -> None:
    with pytest.raises(ConfigError) as caught:
        validate_manifest({"model": MODEL, "outputs": 3}, "m.json", lambda path: f"m.json:{path}")
    assert caught.value.location == "m.json:('outputs',)"
    with pytest.raises(ConfigError) as caught:
        manifest_json('{\n  "model": {,\n}', "m.json")
    assert caught.value.location == "m.json:2:13"


def test_files_outside_the_manifests_folder_are_refused_with_their_field(tmp_path: Path) -> None:
    manifest = tmp_path / "emb.manifest.json"
    outputs = Outputs.model_validate(
        {"parts": [{"files": {"records": "part-0/emb.jsonl"}}, {"files": {"records": "/etc/x"}}]}
    )
    with pytest.raises(ConfigError, match=r"outputs.parts.1.files.records: '/etc/x' is a path"):
        output_files(outputs, manifest)
    fine = Outputs.model_validate({"files": {"records": "emb.jsonl"}})
    assert output_files(fine, manifest) == ({"records": tmp_path / "emb.jsonl"},)


def test_an_output_folder_holds_regular_files_and_folders_only(tmp_path: Path) -> None:
    table = tmp_path / "emb.lance"
    (table / "data").mkdir(parents=True)
    (table / "data" / "a.lance").write_bytes(b"")
    assert output_folder(table, "table", Path("m.json")) == table
    (table / "data" / "b.lance").symlink_to("/etc/passwd")
    with pytest.raises(UserError, match=r"holds .*b.lance, which is a symbolic link"):
        output_folder(table, "table", Path("m.json"))
    with pytest.raises(UserError, match="is a regular file, not a folder"):
        output_folder(table / "data" / "a.lance", "table", Path("m.json"))


# -- stored rows -------------------------------------------------------------------------


def test_a_row_is_checked_and_its_vector_too() -> None:
    row, values = json_row(b'{"id": "d", "window": 1, "span": [0, 4], "embedding": [1, 2]}', "f:1")
    assert (row.id, row.window, row.span, row.text, row.metadata) == ("d", 1, (0, 4), None, {})
    assert vector_of(values, 2, "f:1").tolist() == [1.0, 2.0]
    for line, problem in [
        (b'{"id": "d", "span": [0, "4"]}', r"f:1: a record's span.1: Input should be a valid int"),
        (b'{"id": 7, "span": [0, 4]}', "f:1: a record's id: Input should be a valid string"),
        (b'{"id": "d", "window": -1, "span": [0, 4]}', "window: Input should be greater"),
        (b"[1, 2]", "f:1: a record is a JSON object, not list"),
        (b"\xff\xfe", "f:1: not a JSON record"),
    ]:
        with pytest.raises(UserError, match=problem):
            json_row(line, "f:1")
    for values, problem in [
        ([1.0], "a vector of 1 values where the index's model makes 2"),
        (["a", "b"], "not a list of numbers"),
        ([[1.0], [2.0]], "not a flat list"),
        ([1.0, float("inf")], "a NaN or an infinity"),
    ]:
        with pytest.raises(UserError, match=problem):
            vector_of(values, 2, "f:1")


def test_a_npy_matrix_is_read_from_its_header_and_never_unpickled(tmp_path: Path) -> None:
    path = tmp_path / "m.npy"
    np.save(path, np.arange(6, dtype=np.float32).reshape(3, 2))
    with path.open("rb") as handle:
        assert open_matrix(handle, "m.npy").tolist() == [[0, 1], [2, 3], [4, 5]]
    np.save(path, np.full((3, 2), {"a": 1}, dtype=object), allow_pickle=True)
    with path.open("rb") as handle, pytest.raises(UserError, match=r"a \.npy array of object"):
        open_matrix(handle, "m.npy")
    np.save(path, np.zeros((1000, 8), np.float32))
    path.write_bytes(path.read_bytes()[:500])  # the header says 1000 rows
    with path.open("rb") as handle, pytest.raises(UserError, match="500 bytes where its header"):
        open_matrix(handle, "m.npy")
    path.write_bytes(b"not a npy file at all")
    with path.open("rb") as handle, pytest.raises(UserError, match=r"not a \.npy matrix"):
        open_matrix(handle, "m.npy")


def test_text_from_a_file_is_shown_not_obeyed_by_the_terminal() -> None:
    assert visible("a\x1b[2Jb\x07c\u202eévil") == "a\ufffd[2Jb\ufffdc\ufffdévil"
    assert visible("one\ntwo\tthree", keep="\n\t") == "one\ntwo\tthree"
    assert visible("emoji 🙂 and CJK 漢字") == "emoji 🙂 and CJK 漢字"


def test_a_message_repeats_a_value_only_so_far() -> None:
    assert cut("short") == "short"
    assert cut("9" * 5000, 10) == "9999999999... (5,000 characters)"


def test_a_lone_surrogate_is_named_with_its_place() -> None:
    assert unicode_problem("fine") is None
    said = unicode_problem("ab\udce9", "texts[2]")
    assert said is not None
    assert said.startswith("texts[2] is not valid Unicode: it holds a lone surrogate '\\udce9'")
    assert "at offset 2" in said
