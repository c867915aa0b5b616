"""The ``text-files`` and ``jsonl`` loaders, and the example corpus they are fed."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import ValidationError

from seamline.components.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.contracts import Document, DocumentError, Loaded, Loader, Shard, UserError

if TYPE_CHECKING:
    from collections.abc import Iterable

REPO = Path(__file__).resolve().parents[2]
MAKE_CORPUS = REPO / "examples" / "corpus" / "make_corpus.py"


def text_loader(root: Path, **options: Any) -> TextFilesLoader:
    return TextFilesLoader(TextFilesConfig(root=root, **options))


def jsonl_loader(path: Path, **options: Any) -> JsonlLoader:
    return JsonlLoader(JsonlLoaderConfig(path=path, **options))


def ids(items: Iterable[Loaded]) -> list[str]:
    return [loaded.item.id for loaded in items]


def only(items: Iterable[Loaded]) -> Document | DocumentError:
    (loaded,) = list(items)
    return loaded.item


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A small directory of text files, with distractors the glob must not yield."""
    root = tmp_path / "docs"
    files = {
        "b/z.txt": "zed",
        "b/a.txt": "bee a",
        "a.txt": "first",
        "B.txt": "capital",
        "c d.txt": "space in name",
        "ü.txt": "ünïcödé",
        "notes.md": "not matched",
        "dir.txt/inner.txt": "inside a directory whose name matches",
    }
    for relative, text in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


TREE_IDS = sorted(["b/z.txt", "b/a.txt", "a.txt", "B.txt", "c d.txt", "ü.txt", "dir.txt/inner.txt"])


# --- registration -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "cls", "version"),
    [("text-files", TextFilesLoader, "1.3"), ("jsonl", JsonlLoader, "1.0")],  # 1.3: InputGlobUnder
)
def test_loaders_declare_themselves_and_are_registered(
    name: str, cls: type[Loader[Any]], version: str
) -> None:
    assert cls.name == name
    assert cls.kind == "loader"
    assert cls.contract_version == version
    registered = {ep.name: ep for ep in entry_points(group="seamline.loader")}
    assert registered[name].load() is cls
    for field in cls.Config.model_fields.values():
        assert field.description, "every config field documents itself for the YAML schema"


# --- text-files -------------------------------------------------------------------------


def test_text_files_yields_sorted_relative_posix_ids(tree: Path) -> None:
    items = list(text_loader(tree).read())
    assert ids(items) == TREE_IDS
    assert [loaded.cursor for loaded in items] == TREE_IDS
    assert all(isinstance(loaded.item, Document) for loaded in items)


def test_text_files_document_content_and_metadata(tree: Path) -> None:
    by_id = {loaded.item.id: loaded.item for loaded in text_loader(tree).read()}
    doc = by_id["ü.txt"]
    assert isinstance(doc, Document)
    assert doc.text == "ünïcödé"
    assert doc.metadata == {
        "path": str((tree / "ü.txt").absolute()),
        "bytes": len("ünïcödé".encode()),
    }


def test_text_files_order_is_stable_across_runs(tree: Path) -> None:
    assert ids(text_loader(tree).read()) == ids(text_loader(tree).read())


def test_text_files_glob_selects_files(tree: Path) -> None:
    assert ids(text_loader(tree, glob="*.md").read()) == ["notes.md"]
    assert ids(text_loader(tree, glob="b/*.txt").read()) == ["b/a.txt", "b/z.txt"]


@pytest.mark.parametrize("pattern", ["**/**/*.txt", "a/**/b/**/*.txt"])
def test_a_glob_with_more_than_one_globstar_is_refused(tree: Path, pattern: str) -> None:
    """Each '**' more multiplies the walk by the tree's depth: six never ended."""
    from seamline.components.loaders.parquet import ParquetLoaderConfig

    with pytest.raises(ValidationError, match=r"holds '\*\*' 2 times; .*keep one"):
        text_loader(tree, glob=pattern)
    with pytest.raises(ValidationError, match=r"holds '\*\*' 2 times"):
        ParquetLoaderConfig(path=str(tree / pattern.replace("*.txt", "*.parquet")))
    assert ids(text_loader(tree, glob="**/*.md").read()) == ["notes.md"]  # one is fine


def test_text_files_glob_matching_nothing_is_a_user_error(tree: Path, tmp_path: Path) -> None:
    # An empty run would publish an empty output over the last one (a LanceDB sync would
    # delete every row): refused before anything is written, as the parquet loader does.
    with pytest.raises(UserError, match=r"glob '\*\*/\*\.rst' matches no file under root"):
        list(text_loader(tree, glob="**/*.rst").read())
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(UserError, match="nothing was written"):
        list(text_loader(empty).read())


@pytest.mark.parametrize("k", range(len(TREE_IDS)))
def test_text_files_resume_yields_exactly_the_rest(tree: Path, k: int) -> None:
    loader = text_loader(tree)
    assert ids(loader.read(after=TREE_IDS[k])) == TREE_IDS[k + 1 :]


def test_text_files_resume_from_unknown_cursor_is_a_user_error(tree: Path) -> None:
    with pytest.raises(UserError, match=r"cannot resume after 'gone\.txt'"):
        list(text_loader(tree).read(after="gone.txt"))


@pytest.mark.parametrize("count", [1, 2, 3, 5, 10])
def test_text_files_shards_are_disjoint_and_complete(tree: Path, count: int) -> None:
    loader = text_loader(tree)
    shards = [ids(loader.read(shard=Shard(index, count))) for index in range(count)]
    flat = [doc_id for shard in shards for doc_id in shard]
    assert sorted(flat) == TREE_IDS
    assert len(flat) == len(set(flat))
    for shard in shards:
        assert shard == sorted(shard), "each shard keeps the stable order"


def test_text_files_sharded_resume_yields_the_rest_of_the_shard(tree: Path) -> None:
    loader = text_loader(tree)
    shard = Shard(1, 3)
    full = list(loader.read(shard=shard))
    assert len(full) >= 2
    rest = list(loader.read(shard=shard, after=full[0].cursor))
    assert rest == full[1:]


def test_text_files_invalid_utf8_becomes_error_record(tmp_path: Path) -> None:
    (tmp_path / "bad.txt").write_bytes(b"ok\xffbad")
    error = only(text_loader(tmp_path).read())
    assert isinstance(error, DocumentError)
    assert error.id == "bad.txt"
    assert error.reason.startswith("not valid utf-8: ")
    assert "byte offset 2" in error.reason
    assert error.reason.endswith("set the loader's encoding (such as latin-1)")  # the fix
    assert error.metadata["path"] == str((tmp_path / "bad.txt").absolute())


def test_a_utf16_file_is_named_so_with_the_encoding_to_set(tmp_path: Path) -> None:
    # Notepad's "Unicode": it failed as invalid UTF-8 at byte 0, naming no fix.
    (tmp_path / "notes.txt").write_bytes("caf\u00e9 notes".encode("utf-16"))
    error = only(text_loader(tmp_path).read())
    assert isinstance(error, DocumentError)
    assert "UTF-16 byte-order mark: convert it to UTF-8" in error.reason
    assert "set the loader's encoding: utf-16" in error.reason
    fixed = only(text_loader(tmp_path, encoding="utf-16").read())
    assert isinstance(fixed, Document)
    assert fixed.text == "caf\u00e9 notes"


def test_an_offset_after_a_byte_order_mark_names_the_byte_of_the_file(tmp_path: Path) -> None:
    # utf-8-sig counts after the mark it drops: "byte offset 6 (byte b'l')".
    (tmp_path / "a.txt").write_bytes(b"\xef\xbb\xbfhello \xff world")
    error = only(text_loader(tmp_path, encoding="utf-8-sig").read())
    assert isinstance(error, DocumentError)
    assert "at byte offset 9 (byte b'\\xff')" in error.reason


@pytest.mark.parametrize("codec", ["utf-16-le", "utf-16-be"])
def test_utf16_without_a_byte_order_mark_is_named_with_the_encoding(
    tmp_path: Path, codec: str
) -> None:
    # It decoded as UTF-8 (NUL is a character): stored and shown as "T\x00h\x00e\x00".
    (tmp_path / "plain.txt").write_bytes("The budget review is on Thursday.".encode(codec))
    (tmp_path / "accent.txt").write_bytes("caf\u00e9 notes, all of them".encode(codec))
    errors = [loaded.item for loaded in text_loader(tmp_path).read()]
    assert all(isinstance(error, DocumentError) for error in errors), errors
    accent, plain = errors
    assert f"looks like {codec.upper()} text without a byte-order mark" in plain.reason
    assert plain.reason.count(f"encoding: {codec}") == 1
    assert f"encoding: {codec}" in accent.reason  # it fails to decode: not "latin-1"
    fixed = only(text_loader(tmp_path, encoding=codec, glob="plain.txt").read())
    assert isinstance(fixed, Document)
    assert fixed.text == "The budget review is on Thursday."


@pytest.mark.parametrize("codec", ["utf-16", "UTF16", "utf-16-le", "utf-16-be"])
def test_a_utf8_file_read_as_utf16_is_set_aside_not_garbled(tmp_path: Path, codec: str) -> None:
    # Any even number of bytes decodes as UTF-16: 'hello world!' was embedded as '敨汬...'.
    (tmp_path / "a.txt").write_bytes("caf\u00e9 notes".encode(codec))
    (tmp_path / "b.txt").write_bytes(b"hello world!")
    marked, utf8 = (loaded.item for loaded in text_loader(tmp_path, encoding=codec).read())
    assert isinstance(marked, Document)
    assert marked.text == "caf\u00e9 notes"
    assert isinstance(utf8, DocumentError)
    assert "it reads as UTF-8: convert it (iconv -f UTF-8 -t UTF-16" in utf8.reason


def test_utf16_without_a_mark_names_the_byte_order_to_set(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_bytes("plain notes".encode("utf-16-be"))
    error = only(text_loader(tmp_path, encoding="utf-16").read())
    assert isinstance(error, DocumentError)
    assert error.reason.startswith("no UTF-16 byte-order mark, which encoding utf-16 needs")
    assert error.reason.endswith("as in UTF-16-BE: set the encoding: utf-16-be")


def test_a_few_nul_bytes_do_not_make_a_file_utf16(tmp_path: Path) -> None:
    (tmp_path / "nul.txt").write_bytes(b"before\x00after and more\x00text")
    doc = only(text_loader(tmp_path).read())
    assert isinstance(doc, Document)


def test_text_files_bad_file_does_not_stop_the_others(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("fine")
    (tmp_path / "b.txt").write_bytes(b"\xc3\x28")
    (tmp_path / "c.txt").write_text("also fine")
    kinds = [type(loaded.item) for loaded in text_loader(tmp_path).read()]
    assert kinds == [Document, DocumentError, Document]


def test_text_files_encoding_option(tmp_path: Path) -> None:
    (tmp_path / "latin.txt").write_bytes("café".encode("latin-1"))
    doc = only(text_loader(tmp_path, encoding="latin-1").read())
    assert isinstance(doc, Document)
    assert doc.text == "café"


def test_text_files_max_bytes(tmp_path: Path) -> None:
    (tmp_path / "small.txt").write_text("12345")
    (tmp_path / "large.txt").write_text("123456")
    items = {loaded.item.id: loaded.item for loaded in text_loader(tmp_path, max_bytes=5).read()}
    assert isinstance(items["small.txt"], Document)
    large = items["large.txt"]
    assert isinstance(large, DocumentError)
    assert "max_bytes=5" in large.reason


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root reads files whatever their mode",
)
def test_text_files_unreadable_file_by_mode(tmp_path: Path) -> None:
    locked = tmp_path / "locked.txt"
    locked.write_text("secret")
    locked.chmod(0)
    try:
        error = only(text_loader(tmp_path).read())
    finally:
        locked.chmod(0o644)
    assert isinstance(error, DocumentError)
    assert "cannot read" in error.reason


def test_text_files_unreadable_file_becomes_error_record(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.txt").write_text("fine")
    (tmp_path / "locked.txt").write_text("secret")
    real_open = os.open

    def guarded_open(path: Any, *args: Any, **kwargs: Any) -> Any:
        if Path(path).name == "locked.txt":
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", guarded_open)
    items = [loaded.item for loaded in text_loader(tmp_path).read()]
    assert isinstance(items[0], Document)
    error = items[1]
    assert isinstance(error, DocumentError)
    assert error.id == "locked.txt"
    assert error.reason == (  # with the fix: the system's words named none
        "cannot read: Permission denied; make it readable by the user running seamline, "
        "or leave it out of the glob"
    )


def test_a_socket_is_named_as_one_not_as_unreadable(tmp_path: Path) -> None:
    # A socket cannot be opened (ENXIO): it read "cannot read: No such device or address".
    import socket

    listener = socket.socket(socket.AF_UNIX)
    try:
        listener.bind(str(tmp_path / "s.txt"))
        error = only(text_loader(tmp_path).read())
    finally:
        listener.close()
    assert isinstance(error, DocumentError)
    assert error.reason == "not a regular file (a socket); only regular files are documents"


def test_text_files_broken_symlink_is_reported_not_dropped(tmp_path: Path) -> None:
    (tmp_path / "dangling.txt").symlink_to(tmp_path / "missing-target.txt")
    error = only(text_loader(tmp_path).read())
    assert isinstance(error, DocumentError)
    assert error.id == "dangling.txt"
    assert "cannot read" in error.reason


def linked_folders(tmp_path: Path) -> Path:
    """``notes/`` with ``real/a.txt``, a link ``inside`` to ``real`` and ``outside`` to a
    folder beside ``notes``."""
    root = tmp_path / "notes"
    (root / "real").mkdir(parents=True)
    (root / "real" / "a.txt").write_text("real doc")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "o.txt").write_text("outside doc")
    (root / "inside").symlink_to("real")
    (root / "outside").symlink_to("../elsewhere")
    return root


def test_a_linked_folder_the_recursive_pattern_walks_past_is_named(tmp_path: Path) -> None:
    # ** does not walk into a linked folder: its files were left out without a word.
    root = linked_folders(tmp_path)
    items = {loaded.item.id: loaded.item for loaded in text_loader(root, glob="**/*.txt").read()}
    assert sorted(items) == ["inside", "outside", "real/a.txt"]
    assert isinstance(items["real/a.txt"], Document)
    for link in ("inside", "outside"):
        error = items[link]
        assert isinstance(error, DocumentError)
        assert error.reason.startswith(f"a symbolic link '{link}' to a folder, which is not")
        assert "no file in a linked folder is read" in error.reason
    # A link the pattern would not walk into is not its business.
    only_real = [loaded.item.id for loaded in text_loader(root, glob="real/**/*.txt").read()]
    assert only_real == ["real/a.txt"]


def test_a_file_reached_through_a_linked_folder_is_set_aside(tmp_path: Path) -> None:
    # A * part does follow the link: inside/a.txt was real/a.txt again, under a second id.
    root = linked_folders(tmp_path)
    items = {loaded.item.id: loaded.item for loaded in text_loader(root, glob="*/*.txt").read()}
    assert sorted(items) == ["inside/a.txt", "outside/o.txt", "real/a.txt"]
    assert isinstance(items["real/a.txt"], Document)
    for name, link in (("inside/a.txt", "inside"), ("outside/o.txt", "outside")):
        error = items[name]
        assert isinstance(error, DocumentError)
        assert error.reason.startswith(f"reached through the link '{link}' to a folder")


def test_text_files_missing_root_is_a_user_error(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    with pytest.raises(UserError, match="does not exist") as caught:
        list(text_loader(missing).read())
    assert str(missing) in str(caught.value)
    assert "'root'" in str(caught.value), "the message says what to change"


@pytest.mark.parametrize("loader", ["text-files", "jsonl"])
def test_a_path_that_is_a_symlink_loop_is_a_user_error_naming_the_loop(
    tmp_path: Path, loader: str
) -> None:
    # text-files: RuntimeError "Symlink loop" from the constructor, a run failure advising
    # --resume (validate passed); jsonl: "does not exist", though `ls` shows it.
    loop = tmp_path / "loop"
    loop.symlink_to(loop)
    with pytest.raises(UserError, match="/loop' is a symbolic link loop") as caught:
        list((text_loader(loop) if loader == "text-files" else jsonl_loader(loop)).read())
    assert ("'root'" if loader == "text-files" else "'path'") in str(caught.value)


def test_text_files_root_that_is_a_file_is_a_user_error(tmp_path: Path) -> None:
    (tmp_path / "file.txt").write_text("x")
    with pytest.raises(UserError, match="is not a directory"):
        list(text_loader(tmp_path / "file.txt").read())


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"glob": ""}, "must not be empty"),
        ({"glob": "/abs/*.txt"}, "must be relative"),
        ({"glob": "../*.txt"}, "must not leave root"),
        ({"encoding": "no-such-codec"}, "unknown encoding"),
        # Codecs Python knows that are not text encodings: validate passed them, and the run
        # failed at its first file with a LookupError (and a "run again with --resume" hint).
        ({"encoding": "rot13"}, "'rot13' is a Python codec but not a text encoding.*'utf-8'"),
        ({"encoding": "bz2_codec"}, "'bz2_codec' is a Python codec but not a text encoding"),
        ({"encoding": "base64"}, "'base64' is a Python codec but not a text encoding"),
        ({"max_bytes": 0}, "at least 1"),
        ({"rooot": "typo"}, "Extra inputs are not permitted"),
    ],
)
def test_text_files_config_is_validated(
    tmp_path: Path, options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        TextFilesConfig(root=tmp_path, **options)


def test_text_files_config_requires_root() -> None:
    with pytest.raises(ValidationError, match="root"):
        TextFilesConfig()  # type: ignore[call-arg]


# --- jsonl loader -----------------------------------------------------------------------


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    with path.open("wb") as handle:
        for line in lines:
            handle.write((line.encode() if isinstance(line, str) else line) + b"\n")
    return path


@pytest.fixture
def good_jsonl(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "docs.jsonl",
        [
            json.dumps({"id": "a", "text": "alpha", "lang": "en", "extra": 1}),
            "",
            json.dumps({"id": 7, "text": "seven", "lang": "fr"}),
            "   ",
            json.dumps({"id": "c", "text": "ĉ"}),
            json.dumps({"id": "d", "text": "delta"}),
            json.dumps({"id": "e", "text": "epsilon"}),
        ],
    )


def test_jsonl_reads_documents_with_line_number_cursors(good_jsonl: Path) -> None:
    items = list(jsonl_loader(good_jsonl).read())
    assert [loaded.cursor for loaded in items] == ["1", "3", "5", "6", "7"]
    assert ids(items) == ["a", "7", "c", "d", "e"]
    first = items[0].item
    assert isinstance(first, Document)
    assert first.text == "alpha"
    assert first.metadata == {}


def test_jsonl_copies_requested_metadata_fields(good_jsonl: Path) -> None:
    items = [loaded.item for loaded in jsonl_loader(good_jsonl, metadata_fields=["lang"]).read()]
    assert [item.metadata for item in items] == [{"lang": "en"}, {"lang": "fr"}, {}, {}, {}]


def test_jsonl_custom_fields(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "x.jsonl", [json.dumps({"key": "k1", "body": "b"})])
    doc = only(jsonl_loader(path, id_field="key", text_field="body").read())
    assert doc == Document(id="k1", text="b", metadata={})


@pytest.mark.parametrize("k", range(5))
def test_jsonl_resume_yields_exactly_the_rest(good_jsonl: Path, k: int) -> None:
    loader = jsonl_loader(good_jsonl)
    full = list(loader.read())
    assert list(loader.read(after=full[k].cursor)) == full[k + 1 :]


def test_jsonl_resume_after_a_blank_line(good_jsonl: Path) -> None:
    assert ids(jsonl_loader(good_jsonl).read(after="2")) == ["7", "c", "d", "e"]


@pytest.mark.parametrize(
    "cursor",
    # '²' is a digit to str.isdigit, not to int(): it failed the run with a ValueError.
    ["abc", "0", "-1", "1.5", "", "²", "1²", "\u0661", "1" * 21, "1" * 5000],
)
def test_jsonl_resume_from_foreign_cursor_is_a_user_error(good_jsonl: Path, cursor: str) -> None:
    with pytest.raises(UserError, match="line numbers") as refused:
        list(jsonl_loader(good_jsonl).read(after=cursor))
    assert len(str(refused.value)) < 400


def test_jsonl_resume_past_the_end_is_a_user_error(good_jsonl: Path) -> None:
    with pytest.raises(UserError, match="has only 7 lines"):
        list(jsonl_loader(good_jsonl).read(after="99"))


@pytest.mark.parametrize("count", [1, 2, 3, 4, 6])
def test_jsonl_shards_are_disjoint_complete_and_balanced(good_jsonl: Path, count: int) -> None:
    loader = jsonl_loader(good_jsonl)
    shards = [ids(loader.read(shard=Shard(index, count))) for index in range(count)]
    flat = [doc_id for shard in shards for doc_id in shard]
    assert sorted(flat) == sorted(["a", "7", "c", "d", "e"])
    assert len(flat) == len(set(flat))
    # Positions count non-blank lines only, so blank lines do not unbalance the shards.
    sizes = [len(shard) for shard in shards]
    assert max(sizes) - min(sizes) <= 1


def test_jsonl_sharded_resume(good_jsonl: Path) -> None:
    loader = jsonl_loader(good_jsonl)
    full = list(loader.read(shard=Shard(0, 2)))
    assert ids(full) == ["a", "c", "e"]
    assert list(loader.read(shard=Shard(0, 2), after=full[0].cursor)) == full[1:]


@pytest.fixture
def bad_jsonl(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "bad.jsonl",
        [
            json.dumps({"id": "ok", "text": "fine"}),
            '{"id": "x", "text": ',  # truncated
            json.dumps({"text": "no id"}),
            json.dumps({"id": "n", "text": 42}),
            json.dumps(["not", "an", "object"]),
            json.dumps({"id": "t"}),
            json.dumps({"id": None, "text": "null id"}),
            b'{"id": "u", "text": "\xff"}',
            json.dumps({"id": "last", "text": "still read"}),
        ],
    )


def test_a_control_character_in_a_string_is_named_once(tmp_path: Path) -> None:
    # json's message ends in "at": the reason read "Invalid control character at at column".
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "x\x00y"}\n')
    error = only(jsonl_loader(path).read())
    assert isinstance(error, DocumentError)
    assert error.reason == "line 1: invalid JSON: Invalid control character at column 23"


def test_a_line_cut_short_is_placed_at_its_end(tmp_path: Path) -> None:
    # json placed it past the line's last character, at "line 2 column 1": the reason
    # read "Expecting ',' delimiter at column 1", the line's first column.
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"id": "a", "text": "cut"\n{"id": "b", "text": "cut"')
    first, second = (loaded.item for loaded in jsonl_loader(path).read())
    assert isinstance(first, DocumentError)
    assert first.reason == "line 1: invalid JSON: Expecting ',' delimiter at the end of the line"
    assert isinstance(second, DocumentError)  # the last line, without its newline
    assert second.reason == "line 2: invalid JSON: Expecting ',' delimiter at the end of the line"


@pytest.mark.parametrize(
    ("line", "key"),
    [
        (b'{"id": "a", "text": "first", "text": "second"}', "text"),
        (b'{"id": "b", "id": "c", "text": "beta"}', "id"),
        (b'{"id": "d", "text": "t", "m": {"k": 1, "k": 2}}', "k"),
    ],
)
def test_a_key_given_twice_in_a_line_is_its_error_record(
    tmp_path: Path, line: bytes, key: str
) -> None:
    # The last value was taken without a word: the second text embedded, the id "c".
    path = tmp_path / "dup.jsonl"
    path.write_bytes(line + b"\n")
    error = only(jsonl_loader(path, metadata_fields=["m"]).read())
    assert isinstance(error, DocumentError)
    assert error.id == "dup.jsonl:1"
    assert error.reason.startswith(f"line 1: invalid JSON: the key {key!r} appears twice")


def test_lines_ending_in_cr_only_are_named_as_such(tmp_path: Path) -> None:
    # It said "invalid JSON: Extra data at column 27" and nothing of the line ends.
    path = tmp_path / "cr.jsonl"
    path.write_bytes(b'{"id": "a", "text": "alpha"}\r{"id": "b", "text": "beta"}\r')
    error = only(jsonl_loader(path).read())
    assert isinstance(error, DocumentError)
    assert error.reason.startswith("line 1: invalid JSON: Extra data at column 30; ")
    assert "the file's lines end in CR only" in error.reason


def test_jsonl_bad_lines_become_error_records(bad_jsonl: Path) -> None:
    items = [loaded.item for loaded in jsonl_loader(bad_jsonl).read()]
    assert [type(item) for item in items] == [Document] + [DocumentError] * 7 + [Document]
    errors = items[1:-1]
    assert all(isinstance(error, DocumentError) for error in errors)
    reasons = [error.reason for error in errors if isinstance(error, DocumentError)]
    assert reasons[0].startswith("line 2: invalid JSON: ")
    assert errors[0].id == "bad.jsonl:2"
    assert reasons[1].startswith("line 3: missing id field 'id'")
    assert errors[1].id == "bad.jsonl:3"
    assert reasons[2] == "line 4: text field 'text' must be a string, not int"
    assert errors[2].id == "n", "once the id is known, the error carries it"
    assert reasons[3] == "line 5: expected a JSON object, found list"
    assert reasons[4] == "line 6: missing text field 'text'"
    assert errors[4].id == "t"
    assert "must be a non-empty string or an integer" in reasons[5]
    assert reasons[6].startswith("line 8: not valid utf-8")
    assert errors[0].metadata == {"path": str(bad_jsonl.absolute()), "line": 2}
    # A line named by its place is marked as one: any string, its place too, may be the
    # id of another line, and a lancedb sync took the place for that document.
    placed = [error.place for error in errors if isinstance(error, DocumentError)]
    assert placed == [True, True, False, True, False, True, True]


def test_jsonl_a_utf8_byte_order_mark_does_not_cost_the_first_line(tmp_path: Path) -> None:
    # Windows tools (PowerShell's Out-File, Excel's "UTF-8" export) begin the file with one:
    # the first line was an error record ("Unexpected UTF-8 BOM") the user could not fix.
    path = write_lines(
        tmp_path / "bom.jsonl",
        [
            b"\xef\xbb\xbf" + json.dumps({"id": "a", "text": "first"}).encode(),
            '{"id": "b", "text": "\ufeffsecond"}',
        ],
    )
    items = [loaded.item for loaded in jsonl_loader(path).read()]
    assert all(isinstance(item, Document) for item in items), items
    assert ids(list(jsonl_loader(path).read())) == ["a", "b"]
    assert [item.text for item in items if isinstance(item, Document)] == ["first", "\ufeffsecond"]


def test_jsonl_a_bad_byte_after_a_byte_order_mark_is_counted_from_the_line_start(
    tmp_path: Path,
) -> None:
    # The mark is dropped before decoding: the offset was counted after it (3, not 6),
    # so a hex viewer showed the user a good byte.
    path = write_lines(tmp_path / "bom.jsonl", [b'\xef\xbb\xbf{"a\xff": 1}'])
    (item,) = [loaded.item for loaded in jsonl_loader(path).read()]
    assert isinstance(item, DocumentError)
    assert item.reason == "line 1: not valid utf-8: invalid start byte at byte offset 6 of the line"


@pytest.mark.parametrize(
    ("encode", "what"),
    [
        (gzip.compress, "is gzip-compressed"),
        (bz2.compress, "is bzip2-compressed"),
        (lzma.compress, "is xz-compressed"),
        (lambda data: data.decode().encode("utf-16"), "is UTF-16 text"),
    ],
)
def test_jsonl_a_compressed_or_utf16_file_is_refused_saying_what_it_is(
    tmp_path: Path, encode: Any, what: str
) -> None:
    # Every line failed as "not valid utf-8" (or as invalid JSON), which hid the reason.
    data = b"".join(
        json.dumps({"id": str(i), "text": f"text {i}"}).encode() + b"\n" for i in range(3)
    )
    path = tmp_path / "docs.jsonl.gz"
    path.write_bytes(encode(data))
    with pytest.raises(UserError, match=what) as caught:
        list(jsonl_loader(path).read())
    assert "docs.jsonl.gz" in str(caught.value)


def test_jsonl_missing_file_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="does not exist") as caught:
        list(jsonl_loader(tmp_path / "none.jsonl").read())
    assert "none.jsonl" in str(caught.value)


def test_jsonl_directory_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is not a file"):
        list(jsonl_loader(tmp_path).read())


@pytest.mark.parametrize("content", [b"", b"\n\n", b"  \r\n\t\n", b"\xef\xbb\xbf\n"])
def test_jsonl_empty_file_is_a_user_error(tmp_path: Path, content: bytes) -> None:
    # It yielded nothing, and the run published an empty output: with the lancedb sink's
    # mode: sync, a truncated export deleted every row of the table, exit code 0.
    (tmp_path / "empty.jsonl").write_bytes(content)
    with pytest.raises(UserError, match="holds no JSON line") as caught:
        list(jsonl_loader(tmp_path / "empty.jsonl").read())
    assert "empty.jsonl" in str(caught.value)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"id_field": ""}, "must name a field"),
        ({"id_field": "text"}, "must differ"),
        ({"colour": "blue"}, "Extra inputs are not permitted"),
    ],
)
def test_jsonl_config_is_validated(tmp_path: Path, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        JsonlLoaderConfig(path=tmp_path / "x.jsonl", **options)


# --- the example corpus -----------------------------------------------------------------


def make_corpus(outdir: Path) -> str:
    result = subprocess.run(
        [sys.executable, str(MAKE_CORPUS), str(outdir)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return result.stdout


def test_make_corpus_writes_a_real_corpus_the_loader_reads(tmp_path: Path) -> None:
    outdir = tmp_path / "corpus"
    outdir.mkdir()
    (outdir / "stale.txt").write_text("left over from an earlier run")
    (outdir / "keep.md").write_text("not a corpus file")

    report = make_corpus(outdir)
    files = sorted(outdir.glob("*.txt"))
    assert len(files) >= 200
    assert f"wrote {len(files)} documents" in report
    assert not (outdir / "stale.txt").exists(), "earlier *.txt files are cleared"
    assert (outdir / "keep.md").exists(), "only *.txt files are cleared"
    assert all(path.stat().st_size > 0 for path in files)
    assert {path.name.split("-")[0] for path in files} >= {"pydoc", "module"}

    items = [loaded.item for loaded in text_loader(outdir).read()]
    assert len(items) == len(files)
    assert all(isinstance(item, Document) and item.text.strip() for item in items)

    first = {path.name: path.read_bytes() for path in files}
    make_corpus(outdir)
    assert {path.name: path.read_bytes() for path in outdir.glob("*.txt")} == first, (
        "a second run rewrites the same bytes"
    )


def test_text_files_a_file_swapped_for_a_link_after_its_check_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is checked to lie under root, then opened: a file exchanged for a link to
    a file outside root in between (a race a red team won in 13 runs) had the outside
    file's text published. The open descriptor's own path is checked now."""
    from seamline.components.loaders import text_files

    root = tmp_path / "corpus"
    root.mkdir()
    (root / "a.txt").write_text("inside", encoding="utf-8")
    secret = tmp_path / "secret.txt"
    secret.write_text("outside root", encoding="utf-8")
    real_open = text_files.open_regular

    def swapped_then_opened(path: Any, **options: Any) -> Any:
        Path(path).unlink()
        Path(path).symlink_to(secret)  # what the racer does between check and open
        return real_open(path, **options)

    monkeypatch.setattr(text_files, "open_regular", swapped_then_opened)
    error = only(text_loader(root).read())
    assert isinstance(error, DocumentError)
    assert "a symbolic link that leads outside root" in error.reason
    assert str(secret) in error.reason


def test_a_folder_the_glob_looks_into_and_cannot_list_refuses_the_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Path.glob passed over it: team/'s notes were left out, exit 0, and a sync deleted
    # their rows; an unreadable root was "matches no file". (Root may list any folder,
    # so the refusal is made by os.scandir here, whoever runs the tests.)
    (tmp_path / "notes" / "team").mkdir(parents=True)
    (tmp_path / "notes" / "release.md").write_text("ship on Friday", encoding="utf-8")
    (tmp_path / "notes" / "team" / "meeting.md").write_text("Tuesdays", encoding="utf-8")
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.path.basename(os.fspath(path)) in ("team", "notes-closed"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    refusal = r"text-files loader: cannot list the folder '.*notes/team' \(Permission denied\)"
    with pytest.raises(UserError, match=refusal):
        list(text_loader(tmp_path / "notes", glob="**/*.md").read())
    assert ids(list(text_loader(tmp_path / "notes", glob="*.md").read())) == ["release.md"]
    (tmp_path / "notes").rename(tmp_path / "notes-closed")
    with pytest.raises(UserError, match=r"cannot list the folder '.*notes-closed' \("):
        list(text_loader(tmp_path / "notes-closed", glob="**/*.md").read())
    with pytest.raises(UserError, match="Give the run read access to it, or set"):
        list(text_loader(tmp_path / "notes-closed", glob="**/*.md").read())


def test_a_folder_too_deep_to_list_says_so_not_to_give_read_access(tmp_path: Path) -> None:
    # "(File name too long) ... Give the run read access to it": no access mends that,
    # and the message quoted all 4,000 characters of the path.
    root = tmp_path / "notes"
    root.mkdir()
    here = os.open(root, os.O_RDONLY)
    try:
        for _ in range(25):  # 25 names of 200 bytes: past PATH_MAX (4096 bytes)
            os.mkdir("d" * 200, dir_fd=here)
            deeper = os.open("d" * 200, os.O_RDONLY, dir_fd=here)
            os.close(here)
            here = deeper
    finally:
        os.close(here)
    with pytest.raises(UserError, match=r"\(File name too long\)") as caught:
        list(text_loader(root).read())
    said = str(caught.value)
    assert "longer than the system allows (PATH_MAX" in said, said
    assert "read access" not in said, said
    assert "characters)" in said, said
    assert len(said) < 1000, said


def test_jsonl_a_repeated_id_is_a_place_that_names_the_id_it_repeats(tmp_path: Path) -> None:
    """The repeat is named by its place (the first line keeps the id), and says which id
    it repeats: a lancedb sync took it for a line whose id could not be read and deleted
    nothing that was removed from the input."""
    path = write_lines(
        tmp_path / "twice.jsonl",
        ['{"id": 7, "text": "first"}', '{"id": "x", "text": "x"}', '{"id": "7", "text": "2nd"}'],
    )
    items = [loaded.item for loaded in jsonl_loader(path).read()]
    repeat = items[2]
    assert isinstance(repeat, DocumentError)
    assert (repeat.id, repeat.place, repeat.duplicate_of) == ("twice.jsonl:3", True, "7")
    assert [type(item) for item in items[:2]] == [Document, Document]


def test_jsonl_what_counts_as_one_id(tmp_path: Path) -> None:
    """Case and Unicode normalisation make different ids; 7 and "7" are one; an id of only
    whitespace is an id like any other. Refused, it was set aside under its place, and a
    place holds back every deletion of a LanceDB sync (it may stand for any document):
    one such line kept every removed document's rows."""
    nfc, nfd = "caf\u00e9", "cafe\u0301"
    lines = [
        {"id": " \t\u3000", "text": "blank id"},
        {"id": "Doc1", "text": "upper"},
        {"id": "doc1", "text": "lower"},
        {"id": nfc, "text": "composed"},
        {"id": nfd, "text": "decomposed"},
        {"id": 7, "text": "integer"},
        {"id": "7", "text": "string"},
    ]
    path = write_lines(tmp_path / "ids.jsonl", [json.dumps(line) for line in lines])
    items = [loaded.item for loaded in jsonl_loader(path).read()]
    assert [item.id for item in items if isinstance(item, Document)] == [
        " \t\u3000",
        "Doc1",
        "doc1",
        nfc,
        nfd,
        "7",
    ]
    (repeat,) = (item for item in items if isinstance(item, DocumentError))
    assert (repeat.id, repeat.duplicate_of) == ("ids.jsonl:7", "7")
