"""A resume refused because the input changed names the files that did.

The refusal said "the input files under 'notes' (added, removed or modified)" and no
more: with thousands of files, the user could not tell which one to put back (an
editor's swap file, a log written into the folder) short of ``--restart``.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts import ComponentConfig, InputGlob
from seamline.contracts.sink_kit._input_change import CLOCK_TICK_NS, input_changed
from seamline.core.fingerprint import input_fingerprint


class Notes(ComponentConfig):
    root: Path


class Pattern(ComponentConfig):
    pattern: InputGlob


def notes(folder: Path, count: int) -> Path:
    """``count`` notes in ``folder``, each written an hour ago.

    Their change times are now (no call sets those back), so it waits a clock tick: a
    kernel that stamps files by a coarse clock gives a file changed within the same tick
    the same time, and a change the test makes at once would look as old as these."""
    folder.mkdir()
    hour_ago = time.time_ns() - 3_600 * 10**9
    for index in range(count):
        note = folder / f"n{index:02}.txt"
        note.write_text(f"note {index}", encoding="utf-8")
        os.utime(note, ns=(hour_ago, hour_ago))
    time.sleep(CLOCK_TICK_NS / 1e9)
    return folder


def fingerprint(config: ComponentConfig) -> dict[str, Any]:
    found = input_fingerprint(config)
    assert found is not None
    return found


def said_after(config: ComponentConfig, change: Callable[[], object]) -> str:
    """What a resume refused after ``change`` says of the input ``config`` names."""
    recorded = fingerprint(config)
    change()
    said = input_changed(recorded, fingerprint(config))
    assert said is not None
    return said


@pytest.fixture
def in_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's folder as the working directory: inputs named relative to it, as the
    README's pipelines name them."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_an_unchanged_input_is_no_change_whenever_it_was_listed(in_tmp: Path) -> None:
    notes(in_tmp / "notes", 3)
    config = Notes(root=Path("notes"))
    first = fingerprint(config)
    time.sleep(0.01)
    again = fingerprint(config)
    assert first["listed"]["at"] != again["listed"]["at"]
    assert input_changed(first, again) is None


def test_an_added_and_an_edited_file_are_named_with_the_counts(in_tmp: Path) -> None:
    folder = notes(in_tmp / "notes", 4)

    def edit() -> None:
        (folder / ".n01.txt.swp").write_bytes(b"vim")
        (folder / "n02.txt").write_text("edited", encoding="utf-8")

    said = said_after(Notes(root=Path("notes")), edit)
    assert said.startswith("the input files under 'notes' (4 files when the checkpoint's run ")
    assert said.endswith(", 5 now; newer than that: 'notes/.n01.txt.swp', 'notes/n02.txt')")


def test_a_file_written_just_before_the_listing_is_not_named(in_tmp: Path) -> None:
    """Files are stamped by the kernel's coarse clock, so the refusal counts a file stamped
    up to a tick before the listing as changed since; but a file written then and listed
    (as a test or a script writes its input and runs at once) did not change. The full
    suite, where the first run starts within milliseconds, named every input file."""
    folder = notes(in_tmp / "notes", 2)
    just_now = time.time_ns() - 5_000_000
    os.utime(folder / "n00.txt", ns=(just_now, just_now))
    added = folder / "n05.txt"
    said = said_after(Notes(root=Path("notes")), lambda: added.write_text("new", "utf-8"))
    assert said.endswith(", 3 now; newer than that: 'notes/n05.txt')")


def test_files_unpacked_just_before_the_listing_are_not_named(in_tmp: Path) -> None:
    """An archive unpacked (or a folder copied with ``cp -p``) and run at once: the files
    carry old modification times and change times from just before the listing, within
    the clock tick a refusal counts from. The newest of those times is recorded, so
    they are not named for a file added later."""
    folder = in_tmp / "notes"
    folder.mkdir()
    year_ago = time.time_ns() - 365 * 86_400 * 10**9
    for index in range(3):
        (folder / f"u{index}.txt").write_text(f"unpacked {index}", encoding="utf-8")
        os.utime(folder / f"u{index}.txt", ns=(year_ago, year_ago))
    added = folder / "added.txt"

    def add_a_tick_later() -> None:  # a coarse clock would stamp it as the unpacked files
        time.sleep(CLOCK_TICK_NS / 1e9)
        added.write_text("new", "utf-8")

    said = said_after(Notes(root=Path("notes")), add_a_tick_later)
    assert said.endswith(", 4 now; newer than that: 'notes/added.txt')"), said


def test_a_removed_file_is_told_by_the_count_alone(in_tmp: Path) -> None:
    """A removed file has no time to be found by."""
    folder = notes(in_tmp / "notes", 4)
    said = said_after(Notes(root=Path("notes")), (folder / "n00.txt").unlink)
    assert said.endswith(
        ", 3 now; none is newer than that: a file was removed (or renamed or "
        "edited on a file system that keeps no change time))"
    )


@pytest.mark.parametrize("how", ["renamed", "copied in with its time", "given back its time"])
def test_a_file_with_an_old_modification_time_is_named_by_its_change_time(
    in_tmp: Path, how: str
) -> None:
    """``mv``, ``cp -p`` (``rsync -a``, an archive) and ``touch -r`` leave a file with a
    modification time from before the checkpoint: by it alone, such a file was counted
    and never named ("none is newer"). Its change time is when it happened."""
    folder = notes(in_tmp / "notes", 3)
    outside = notes(in_tmp / "elsewhere", 1) / "n00.txt"
    n01 = folder / "n01.txt"
    old = n01.stat().st_mtime_ns

    def change() -> None:
        if how == "renamed":
            n01.rename(folder / "renamed.txt")
        elif how == "copied in with its time":
            shutil.copy2(outside, folder / "copied.txt")
        else:
            n01.write_text("edited, and longer", encoding="utf-8")
            os.utime(n01, ns=(old, old))

    said = said_after(Notes(root=Path("notes")), change)
    named = {"renamed": "renamed.txt", "copied in with its time": "copied.txt"}.get(how, "n01.txt")
    assert said.endswith(f"now; newer than that: 'notes/{named}')"), said


def test_a_glob_pattern_s_files_are_named_as_matched(in_tmp: Path) -> None:
    added = notes(in_tmp / "data", 2) / "n09.txt"
    said = said_after(Pattern(pattern="data/*.txt"), lambda: added.write_text("new", "utf-8"))
    assert said.startswith("the input files under 'data/*.txt' (2 files when the checkpoint's ")
    assert said.endswith(", 3 now; newer than that: 'data/n09.txt')")


def test_five_files_are_named_and_the_rest_counted(in_tmp: Path) -> None:
    folder = notes(in_tmp / "notes", 1)

    def add_twelve() -> None:
        for index in range(12):
            (folder / f"new{index:02}.txt").write_text("x", encoding="utf-8")

    said = said_after(Notes(root=Path("notes")), add_twelve)
    assert "'notes/new04.txt' and 7 more)" in said
    assert "new05" not in said


def test_a_name_with_control_characters_is_shown_inert(in_tmp: Path) -> None:
    evil = notes(in_tmp / "notes", 1) / "evil\x1b]0;pwned\x07\u202e.txt"
    said = said_after(Notes(root=Path("notes")), lambda: evil.write_text("x", "utf-8"))
    assert "\x1b" not in said
    assert "\x07" not in said
    assert "\u202e" not in said


@pytest.mark.parametrize(
    "listed",
    [
        None,
        "yesterday",
        {"at": "1796650000000000000", "count": 1, "patterns": []},
        {"at": -1, "count": 1, "patterns": []},
        {"at": 1 << 64, "count": 1, "patterns": []},
        {"at": 1_796_650_000_000_000_000, "count": 1 << 50, "patterns": []},
        {"at": 1_796_650_000_000_000_000, "count": True, "patterns": []},
        {"at": 1_796_650_000_000_000_000, "count": 1, "patterns": "0"},
        {"at": 1_796_650_000_000_000_000, "count": 1, "patterns": [], "newest": "0"},
        {"at": 1_796_650_000_000_000_000, "count": 1, "patterns": [], "newest": -5},
    ],
)
def test_a_checkpoint_without_a_listing_it_can_use_gets_the_plain_words(
    in_tmp: Path, listed: Any
) -> None:
    """A checkpoint from before the listing was recorded, or one edited: what changed is
    said as it was, and nothing in it is listed or trusted."""
    notes(in_tmp / "notes", 2)
    config = Notes(root=Path("notes"))
    recorded = {**fingerprint(config), "files": "0" * 16}
    if listed is None:
        del recorded["listed"]
    else:
        recorded["listed"] = listed
    said = input_changed(recorded, fingerprint(config))
    assert said == "the input files under 'notes' (added, removed or modified)"


def test_only_this_run_s_own_paths_are_listed(in_tmp: Path) -> None:
    """The checkpoint's paths are anyone's to edit: the files named are under this run's."""
    notes(in_tmp / "notes", 1)
    secret = notes(in_tmp / "secret", 1)
    (secret / "new-secret.txt").write_text("x", encoding="utf-8")
    config = Notes(root=Path("notes"))
    recorded = {**fingerprint(config), "paths": [str(secret)], "files": "0" * 16}
    said = input_changed(recorded, fingerprint(config))
    assert said is not None
    assert "secret" not in said
    assert said.startswith("the input files under 'notes' (1 file when")
