"""Every sink, whatever the path looks like: publish after commits, resume, refuse collisions.

The run the README shows writes ``out/emb.lance``: a path relative to the working
directory. A checkpoint used to record its partial files as paths, which a resume
compared with the destination in another spelling (absolute against relative) and
refused, so a lancedb run that had committed once could not even publish its own
work, and ``--resume`` of the other sinks failed for relative paths. Here each sink
commits, crashes, resumes and publishes with its path spelled every way a user
spells it (:mod:`tests.faults.spellings`), from a working directory of the test's
own; a checkpoint moved with its folder still resumes; two configured outputs that
are one file are refused when the config is validated.
"""

from __future__ import annotations

import gc
import os
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig
from seamline.contracts import DocumentError, OutputRecord, Sink
from tests.faults.spellings import SPELLINGS, place
from tests.readback import read_errors, read_records

MANIFEST = {"seamline_manifest": 1, "pipeline": "paths", "model": {"use": "toy", "with": {}}}
NAMES = {"jsonl": "emb.jsonl", "npy": "emb.npy", "parquet": "emb.parquet", "lancedb": "emb.lance"}
CONFIGS: dict[str, tuple[type[Sink[Any]], Any]] = {
    "jsonl": (JsonlSink, JsonlSinkConfig),
    "npy": (NpySink, NpySinkConfig),
    "parquet": (ParquetSink, ParquetSinkConfig),
    "lancedb": (LanceDbSink, LanceDbSinkConfig),
}
SMALL = {"parquet": {"row_group_size": 2}, "lancedb": {"buffer_rows": 2}}
"""Small row groups and staging batches: rows written after a commit really are on disk."""


def make(kind: str, path: Path, **options: Any) -> Sink[Any]:
    cls, config = CONFIGS[kind]
    return cls(config(path=path, **{**SMALL.get(kind, {}), **options}))


def records(count: int, start: int = 0) -> list[OutputRecord]:
    rng = np.random.default_rng(start)
    return [
        OutputRecord(f"d{i}", 0, (0, 4), rng.standard_normal(8).astype(np.float32), {}, f"t{i}")
        for i in range(start, start + count)
    ]


def keys(found: list[OutputRecord] | None) -> list[str]:
    assert found is not None, "nothing was published"
    return [record.doc_id for record in found]


def crash_after_a_commit(kind: str, path: Path) -> None:
    """Write, commit at cursor "c1", write more, and die (no close): a killed run."""
    sink = make(kind, path)
    sink.start(MANIFEST)
    sink.write(records(3))
    sink.write_error(DocumentError(id="bad", reason="unreadable"))
    sink.commit("c1")
    sink.write(records(3, start=3))  # after the commit: a resume writes these again
    del sink
    gc.collect()


@pytest.mark.parametrize("spelling", SPELLINGS)
@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_run_that_committed_publishes_and_a_killed_one_resumes(
    tmp_path: Path, kind: str, spelling: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    placed = place(tmp_path / "work", NAMES[kind], spelling)
    monkeypatch.chdir(placed.cwd)

    # A whole run with commits: the lancedb sink refused its own checkpoint at close.
    sink = make(kind, placed.path)
    sink.start(MANIFEST)
    for start in (0, 2):
        sink.write(records(2, start=start))
        sink.commit(str(start))
    sink.close(complete=True)
    assert keys(read_records(placed.output)) == [f"d{i}" for i in range(4)]

    # A run killed after a commit, resumed: every record exactly once.
    crash_after_a_commit(kind, placed.path)
    resumed = make(kind, placed.path)
    assert resumed.recover(MANIFEST) == "c1"
    resumed.write(records(3, start=3))
    resumed.close(complete=True)
    assert keys(read_records(placed.output)) == [f"d{i}" for i in range(6)]
    assert [e["id"] for e in read_errors(placed.output) or []] == ["bad"]
    hidden = [p.name for p in placed.folder.iterdir() if p.name.startswith(".")]
    assert hidden == [], f"left behind: {hidden}"


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_a_checkpoint_moved_with_its_folder_still_resumes(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A checkpoint names its partial files, never a path: the folder can move, and the
    resume can start from another working directory under another spelling."""
    monkeypatch.chdir(tmp_path)
    crash_after_a_commit(kind, tmp_path / "out" / NAMES[kind])
    shutil.move(tmp_path / "out", tmp_path / "moved")
    monkeypatch.chdir(tmp_path / "moved")
    resumed = make(kind, tmp_path / "moved" / ".." / "moved" / NAMES[kind])
    assert resumed.recover(MANIFEST) == "c1"
    resumed.write(records(3, start=3))
    resumed.close(complete=True)
    assert keys(read_records(tmp_path / "moved" / NAMES[kind])) == [f"d{i}" for i in range(6)]


# --- two outputs that are one file --------------------------------------------------------


def collision_cases(kind: str) -> list[tuple[str, str, str]]:
    """``(field, value, what the refusal says)`` for ``kind``, from a folder holding ``o6``."""
    name = NAMES[kind]
    field = "index_path" if kind == "npy" else "errors_path"
    said = f"path .* and {field} .* are the same file"
    cases = [
        (field, f"o6/../o6/{name}", said),  # the records file, with ..
        (field, f"link/{name}", said),  # the records file through a linked folder
        (field, os.path.join("{cwd}", "o6", name), said),  # absolute against relative
        (field, "o6/emb.manifest.json", f"{field} .* and the manifest .* are the same file"),
        (field, f"link/.{name}.checkpoint", "hidden working file of path"),
        (field, f"o6/.{name}.lock", "hidden working file of path"),
    ]
    if kind == "lancedb":
        cases.append((field, "link/emb.lance/errors.jsonl", "is inside path, a folder"))
    if kind == "npy":  # the errors file is not configurable: the index may not take its name
        cases.append((field, "link/emb.errors.jsonl", "the errors file .* same file"))
    return cases


@pytest.mark.parametrize(
    ("kind", "field", "value", "said"),
    [(kind, *case) for kind in sorted(NAMES) for case in collision_cases(kind)],
)
def test_outputs_that_are_one_file_are_refused_when_the_config_is_validated(
    tmp_path: Path, kind: str, field: str, value: str, said: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "o6").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "o6", target_is_directory=True)
    monkeypatch.chdir(tmp_path)
    _, config = CONFIGS[kind]
    with pytest.raises(ValidationError, match=said) as refused:
        config(path=f"o6/{NAMES[kind]}", **{field: value.format(cwd=tmp_path)})
    assert "one would overwrite the other" in str(refused.value)


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_outputs_that_only_look_alike_are_accepted(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Other folders, other names, and links *at* an output's name (publishing renames over
    a link, never writes through it) are not collisions."""
    (tmp_path / "o6").mkdir()
    (tmp_path / "o7").mkdir()
    (tmp_path / "victim").write_text("x")
    for name in (NAMES[kind], "other.jsonl"):
        (tmp_path / "o6" / name).symlink_to(tmp_path / "victim")
    monkeypatch.chdir(tmp_path)
    _, config = CONFIGS[kind]
    field = "index_path" if kind == "npy" else "errors_path"
    for value in ("o6/other.jsonl", f"o6/{NAMES[kind]}.errors", f"o6/more/{NAMES[kind]}"):
        built = config(path=f"o6/{NAMES[kind]}", **{field: value})
        assert built.path == tmp_path / "o6" / NAMES[kind], "made absolute, link not followed"
        assert getattr(built, field) == tmp_path / value
    # Another folder is refused: the manifest names an output's files inside its own folder.
    with pytest.raises(ValidationError, match=rf"{field} .* is outside the folder of path"):
        config(path=f"o6/{NAMES[kind]}", **{field: f"o7/{NAMES[kind]}"})


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_dotdot_after_a_linked_folder_is_where_the_file_system_leads(
    tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``results/../emb.jsonl``, ``results`` a link to ``elsewhere/results``: the path was
    made absolute by its text (``./emb.jsonl``, replacing a file of the user's there) while
    ``open()``, ``seamline search`` and a shell all go to ``elsewhere/emb.jsonl``."""
    (tmp_path / "elsewhere" / "results").mkdir(parents=True)
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "results").symlink_to(tmp_path / "elsewhere" / "results")
    monkeypatch.chdir(tmp_path / "work")
    _, config = CONFIGS[kind]
    spelled = f"results/../{NAMES[kind]}"
    built = config(path=spelled)
    assert built.path == tmp_path / "elsewhere" / NAMES[kind]
    (tmp_path / "elsewhere" / NAMES[kind]).mkdir()  # what the file system finds there
    assert os.path.samefile(built.path, spelled)
    # Links after the last ``..`` are kept as written: a linked folder is written through.
    assert config(path=f"x/../results/{NAMES[kind]}").path == Path.cwd() / "results" / NAMES[kind]


@pytest.mark.parametrize("kind", sorted(NAMES))
def test_an_output_name_that_is_not_utf8_is_refused_before_the_run(kind: str) -> None:
    # "out/caf\udce9.jsonl" (the escape a refusal of the raw byte advised) published, and
    # every search then refused its manifest, which cannot list such a name, as "not as
    # seamline wrote it: run the pipeline again". A folder above it is not in the manifest.
    _, config = CONFIGS[kind]
    with pytest.raises(
        ValidationError, match=r"holds the byte 0xE9 \(character 4\), which is not UTF-8"
    ):
        config(path=f"out/caf\udce9{Path(NAMES[kind]).suffix}")
    assert config(path=f"caf\udce9/{NAMES[kind]}").path.name == NAMES[kind]


@pytest.mark.parametrize("kind", sorted(NAMES))
@pytest.mark.parametrize("value", ["", "  ", "s3://bucket/emb", "db://table"])
def test_an_empty_path_or_a_uri_is_refused(kind: str, value: str) -> None:
    # Path("") is the working directory; "s3://bucket/emb" was a local folder named "s3:".
    _, config = CONFIGS[kind]
    with pytest.raises(ValidationError, match=r"must not be empty|is a URI"):
        config(path=value)
