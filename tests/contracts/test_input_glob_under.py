"""A folder whose files a pattern picks is fingerprinted by those files alone (loader
contract 1.3, ``InputGlobUnder``).

The fingerprint covered every file under ``text-files``' ``root``: an editor's swap file
or a log written into the folder refused ``--resume`` (now with the file's name, but
still refused), though the loader never reads it, and ``root: ~`` with ``glob:
notes/*.md`` had the whole home folder walked at every run's start.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Annotated, Any

import pytest

from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.contracts import ComponentConfig, Document, InputGlobUnder
from seamline.contracts.input_files import Under, input_entries, input_files
from seamline.contracts.sink_kit._input_change import CLOCK_TICK_NS, input_changed
from seamline.core.fingerprint import input_fingerprint


class Picked(ComponentConfig):
    root: Path
    glob: Annotated[str, InputGlobUnder("root")] = "**/*.txt"


class Whole(ComponentConfig):
    root: Path


def fingerprint(config: ComponentConfig) -> dict[str, Any]:
    found = input_fingerprint(config)
    assert found is not None
    return found


@pytest.fixture
def notes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Three notes in ``notes`` (written an hour ago), the working directory above it."""
    monkeypatch.chdir(tmp_path)
    folder = tmp_path / "notes"
    folder.mkdir()
    hour_ago = time.time_ns() - 3_600 * 10**9
    for index in range(3):
        note = folder / f"n{index}.txt"
        note.write_text(f"note {index}", encoding="utf-8")
        os.utime(note, ns=(hour_ago, hour_ago))
    time.sleep(CLOCK_TICK_NS / 1e9)  # their change times are now: a tick between them and ours
    return folder


def strays(folder: Path) -> None:
    """Files no ``**/*.txt`` reads: a swap file, a log in a folder of its own, a .DS_Store."""
    (folder / ".n1.txt.swp").write_bytes(b"b0VIM 9.0")
    (folder / "logs").mkdir()
    (folder / "logs" / "run.log").write_text("resumed\n", encoding="utf-8")
    (folder / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")


def test_files_the_pattern_does_not_match_are_not_the_input(notes: Path) -> None:
    picked, whole = Picked(root=Path("notes")), Whole(root=Path("notes"))
    before = fingerprint(picked), fingerprint(whole)
    strays(notes)
    assert input_changed(before[0], fingerprint(picked)) is None
    # A folder no pattern field names is still its every file (a third party's loader
    # that reads them all).
    assert input_changed(before[1], fingerprint(whole)) is not None


def test_a_file_the_pattern_matches_is_named_and_no_other(notes: Path) -> None:
    recorded = fingerprint(Picked(root=Path("notes")))
    strays(notes)
    (notes / "deeper").mkdir()
    (notes / "deeper" / "n9.txt").write_text("new", encoding="utf-8")
    (notes / ".draft.txt").write_text("a dot-file the pattern matches", encoding="utf-8")
    said = input_changed(recorded, fingerprint(Picked(root=Path("notes"))))
    assert said is not None
    assert said.startswith("the input files under 'notes' (3 files when the checkpoint's run ")
    assert said.endswith(", 5 now; newer than that: 'notes/.draft.txt', 'notes/deeper/n9.txt')")


def test_the_fingerprint_lists_the_files_text_files_reads(notes: Path) -> None:
    """One listing for both: every document the loader reads is fingerprinted, and no
    other file (what it sets aside unread, a broken link, has no size or time)."""
    strays(notes)
    (notes / ".hidden").mkdir()
    (notes / ".hidden" / "h.txt").write_text("in a dot-folder", encoding="utf-8")
    (notes / "folder.txt").mkdir()  # a folder the pattern matches: not a document
    (notes / "folder.txt" / "inner.txt").write_text("inner", encoding="utf-8")
    (notes / "link.txt").symlink_to("n0.txt")
    (notes / "broken.txt").symlink_to("gone.txt")
    (notes / "n0.md").write_text("another suffix", encoding="utf-8")
    config = TextFilesConfig(root=Path("notes"))
    read = {
        loaded.cursor
        for loaded in TextFilesLoader(config).read()
        if isinstance(loaded.item, Document)
    }
    [entry] = input_entries(config)
    assert entry == Under(Path("notes"), "**/*.txt")
    listed = {file.name for file in input_files(entry)}
    assert listed == read
    assert {".hidden/h.txt", "folder.txt/inner.txt", "link.txt", "n2.txt"} <= listed
    assert not {"broken.txt", ".n1.txt.swp", "logs/run.log", "n0.md"} & listed


def older(fingerprint: dict[str, Any]) -> dict[str, Any]:
    """``fingerprint`` as a seamline before loader contract 1.3 recorded it: no ``under``."""
    listed = {key: value for key, value in fingerprint["listed"].items() if key != "under"}
    return {**fingerprint, "listed": listed}


def test_an_older_checkpoint_of_anything_else_still_resumes(notes: Path) -> None:
    """Paths and patterns are fingerprinted as before: their older checkpoints match."""
    recorded = older(fingerprint(Whole(root=Path("notes"))))
    assert input_changed(recorded, fingerprint(Whole(root=Path("notes")))) is None


@pytest.mark.parametrize(
    "under", [[[0, "**/*.txt"]], "x", [[0]], [["0", "a"]], [[0, 5]], [[True, "a"]]], ids=repr
)
def test_an_edited_under_is_not_trusted(notes: Path, under: object) -> None:
    """A checkpoint's ``listed.under`` that is not ``[index, pattern]`` pairs leaves the
    files unnamed; the current run's own says which files are listed, never the
    checkpoint's (the first case: a pattern the checkpoint claims is not the run's)."""
    recorded = fingerprint(Whole(root=Path("notes")))
    recorded["listed"]["under"] = under
    (notes / "n7.txt").write_text("new", encoding="utf-8")
    said = input_changed(recorded, fingerprint(Whole(root=Path("notes"))))
    assert said is not None
    if under == [[0, "**/*.txt"]]:
        assert said.endswith("newer than that: 'notes/n7.txt')")
    else:
        assert said == "the input files under 'notes' (added, removed or modified)"
