"""The third-party path for real: build the example package, install it, discover it, run it.

``examples/plugins/seamline-example-csv`` is built by its own build backend and
installed into a temporary directory (never into the environment running the
tests); that directory is put on ``sys.path`` only while these tests run. The
registry must then find the ``csv`` loader and the ``tsv`` sink through their entry
points, attributed to their distribution; a pipeline must run with them next to the
toy components; the sink, built on the sink kit with seamline-contracts alone, must
pass the sink conformance suite, and ``seamline search`` must read its output through
the reader the sink names. docs/writing-a-component.md shows that sink's module as it
is tested here.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools
import json
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seamline.contracts import DocumentError, Loader, Shard, UserError
from seamline.core.config import parse_pipeline
from seamline.core.config.user import user_trust
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import Registry
from tests.core.toy import MemorySink, toy_registry

ROOT = Path(__file__).parents[2]
PACKAGE = ROOT / "examples" / "plugins" / "seamline-example-csv"
MODULE = "seamline_example_csv"
GUIDE = ROOT / "docs" / "writing-a-component.md"

CSV = (
    "id,text,lang\n"
    "a,one two three,en\n"
    'b,"four, five",en\n'
    "c\n"  # too short to reach the text column: an error record
    "d,boom,en\n"  # the toy model cannot prepare 'boom': an error record too
    ",no id,en\n"  # no id: an error record
    "f,,en\n"  # an empty text is still a document
    "g,six seven eight nine,en\n"
)


def _install_command(target: Path) -> list[str]:
    """How to build and install the package into ``target``, or skip saying why we cannot."""
    common = ["--quiet", "--no-deps", "--target", str(target), str(PACKAGE)]
    uv = shutil.which("uv") or str(Path.home() / ".local" / "bin" / "uv")
    if Path(uv).is_file():
        return [uv, "pip", "install", "--python", sys.executable, *common]
    if importlib.util.find_spec("hatchling") and importlib.util.find_spec("pip"):
        return [sys.executable, "-m", "pip", "install", "--no-build-isolation", *common]
    pytest.skip("cannot build the example package: no uv, and no pip with hatchling")


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """The example package built and installed into a temporary directory on sys.path."""
    target = tmp_path_factory.mktemp("third-party")
    result = subprocess.run(
        _install_command(target), capture_output=True, text=True, timeout=120, check=False
    )
    if result.returncode != 0:
        pytest.fail(f"installing {PACKAGE.name} failed:\n{result.stdout}\n{result.stderr}")
    with pytest.MonkeyPatch.context() as patch:
        patch.syspath_prepend(str(target))
        importlib.invalidate_caches()
        yield target
    sys.modules.pop(MODULE, None)
    importlib.invalidate_caches()


@pytest.fixture(scope="module")
def discovered(installed: Path) -> Registry:
    return Registry.discover(user_trust())


@pytest.fixture(autouse=True)
def _clean_sink() -> Iterator[None]:
    MemorySink.reset()
    yield
    MemorySink.reset()


def _csv_loader(path: Path, registry: Registry) -> Loader[Any]:
    return registry.create("loader", "csv", {"path": str(path)})  # type: ignore[return-value]


def test_installed_only_into_the_temporary_directory(installed: Path) -> None:
    assert (installed / MODULE / "__init__.py").is_file()
    assert list(installed.glob("seamline_example_csv-*.dist-info"))
    # Built as a distribution, not imported from the source tree.
    assert Path(importlib.import_module(MODULE).__file__ or "").is_relative_to(installed)


def test_discovery_finds_the_loader_and_its_distribution(discovered: Registry) -> None:
    info = discovered.get("loader", "csv")
    assert info.usable
    assert info.distribution == "seamline-example-csv"
    assert info.version == "0.1.0"
    assert info.target == "seamline_example_csv:CsvLoader"
    assert info.contract_version == "1.0"
    # The first-party loaders are still there beside it.
    assert {"csv", "jsonl", "text-files"} <= set(discovered.names("loader"))


def test_a_pipeline_runs_with_the_third_party_loader(discovered: Registry, tmp_path: Path) -> None:
    data = tmp_path / "docs.csv"
    data.write_text(CSV, encoding="utf-8")
    toy = toy_registry()
    taken = {(info.kind, info.name) for info in discovered.entries()}
    registry = Registry(
        [
            *discovered.entries(),
            *(info for info in toy.entries() if (info.kind, info.name) not in taken),
        ]
    )
    text = (
        "pipeline: csv-toy\n"
        f"loader: {{use: csv, with: {{path: '{data}'}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        "sink: {use: memory}\n"
        "run: {batch_size: 2, buckets: [4]}\n"
    )
    summary = Orchestrator(parse_pipeline(text, "csv.yaml", registry), registry).run()

    assert sorted(r.doc_id for r in MemorySink.records) == ["a", "b", "f", "g"]
    assert {r.doc_id: dict(r.metadata) for r in MemorySink.records}["g"] == {"row": 7}
    errors = {e.id: e.reason for e in MemorySink.errors}
    assert set(errors) == {"c", "d", "docs.csv:5"}
    assert "row 3" in errors["c"]
    assert "cannot prepare 'boom'" in errors["d"]
    assert "id column" in errors["docs.csv:5"]
    assert MemorySink.closed == [True]
    assert (summary.counts.documents, summary.counts.failed_documents) == (4, 3)


def test_order_cursor_and_shards(discovered: Registry, tmp_path: Path) -> None:
    data = tmp_path / "docs.csv"
    data.write_text(CSV, encoding="utf-8")
    loader = _csv_loader(data, discovered)
    everything = list(loader.read())
    assert [item.cursor for item in everything] == [str(n) for n in range(1, 8)]
    ids = [item.item.id for item in everything]
    assert ids == ["a", "b", "c", "d", "docs.csv:5", "f", "g"]
    assert isinstance(everything[2].item, DocumentError)
    # Resuming after a cursor yields exactly the rest.
    assert [item.item.id for item in loader.read(after="4")] == ids[4:]
    # Shards are disjoint and together complete, each in the stable order.
    shards = [[i.item.id for i in loader.read(shard=Shard(k, 3))] for k in range(3)]
    assert sorted(itertools.chain(*shards)) == sorted(ids)
    assert shards[1] == ["b", "docs.csv:5"]


def test_a_repeated_id_is_the_same_rows_error_in_every_shard_and_resume(
    discovered: Registry, tmp_path: Path
) -> None:
    # The guide's loader published both rows of a repeated id, which its own page says a
    # loader must refuse (the host cannot see a repeat across shards and resumes).
    data = tmp_path / "docs.csv"
    data.write_text("id,text\nr1,first\nr2,second\nr1,again\nr3,third\n", encoding="utf-8")
    loader = _csv_loader(data, discovered)
    items = [loaded.item for loaded in loader.read()]
    assert [item.id for item in items] == ["r1", "r2", "docs.csv:3", "r3"]
    repeat = items[2]
    assert isinstance(repeat, DocumentError)
    assert repeat.reason == "row 3: id 'r1' repeats row 1's; ids must be unique"
    for shard in (Shard(0, 2), Shard(1, 2)):
        assert all(
            not isinstance(i.item, DocumentError) or i.item.id == "docs.csv:3"
            for i in loader.read(shard=shard)
        )
    assert [i.item.id for i in loader.read(shard=Shard(0, 2))] == ["r1", "docs.csv:3"]
    assert [i.item.id for i in loader.read(after="2")] == ["docs.csv:3", "r3"]


def test_user_mistakes_are_user_errors(discovered: Registry, tmp_path: Path) -> None:
    with pytest.raises(UserError, match="is not a file"):
        list(_csv_loader(tmp_path / "missing.csv", discovered).read())
    other = tmp_path / "other.csv"
    other.write_text("id,body\n1,x\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"has no column 'text' \(its columns: 'id', 'body'\)"):
        list(_csv_loader(other, discovered).read())
    # A field over the csv module's limit ended the run with "failed: ... Error: field
    # larger than field limit (131072)", naming neither the file nor the line.
    huge = tmp_path / "huge.csv"
    huge.write_text(f'id,text\na,short\nb,"{"word " * 30_000}"\n', encoding="utf-8")
    with pytest.raises(
        UserError, match=r"'.*huge\.csv', the record from line 3: field larger than"
    ):
        list(_csv_loader(huge, discovered).read())


def test_a_byte_order_mark_is_not_part_of_the_first_column(
    discovered: Registry, tmp_path: Path
) -> None:
    # Excel's "CSV UTF-8" begins with one: the header was refused as having no column
    # 'id' (its columns: \ufeffid, text).
    data = tmp_path / "excel.csv"
    data.write_text("id,text\nx1,from excel\n", encoding="utf-8-sig")
    items = list(_csv_loader(data, discovered).read())
    assert [(item.item.id, item.item.text) for item in items] == [("x1", "from excel")]  # type: ignore[union-attr]


def test_the_conformance_suite_passes_through_its_registered_class(discovered: Registry) -> None:
    from seamline.adapters.cli.check import check

    outcome = check(discovered, "loader:csv", max_examples=1)
    failed = [r for r in outcome.suite.results if r.outcome in ("failed", "error")]
    assert not failed, failed
    assert outcome.suite.passed
    (record,) = outcome.suite.records
    assert (record.distribution, record.distribution_version) == ("seamline-example-csv", "0.1.0")


def test_an_allowlist_binds_the_installed_package_by_its_record(
    installed: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A real install (its RECORD lists the module) is believed under an allowlist...
    from seamline.core.trust import TrustPolicy

    trust = TrustPolicy().narrowed(["seamline-example-csv", "seamline-components"], "test")
    info = Registry.discover(trust).get("loader", "csv")
    assert info.usable
    assert (info.distribution, info.doubt) == ("seamline-example-csv", "")
    # ...until a second folder declares its name: then neither is, and both are named.
    forged = tmp_path / "forged"
    fake = forged / "zz_forged-1.0.dist-info"
    fake.mkdir(parents=True)
    (fake / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: Seamline.Example_CSV\nVersion: 1\n"
    )
    (fake / "entry_points.txt").write_text("[seamline.loader]\ncsv2 = seamline_example_csv:X\n")
    monkeypatch.syspath_prepend(str(forged))
    refused = Registry.discover(trust).entries("loader")
    csv = next(i for i in refused if i.name == "csv")
    assert csv.status == "untrusted"
    assert str(fake.resolve()) in csv.reason
    assert str(next(installed.glob("seamline_example_csv-*.dist-info")).resolve()) in csv.reason


# -- the tsv sink: a third party's sink on the sink kit -------------------------------------


def _with_toys(discovered: Registry) -> Registry:
    toy = toy_registry()
    taken = {(info.kind, info.name) for info in discovered.entries()}
    others = (info for info in toy.entries() if (info.kind, info.name) not in taken)
    return Registry([*discovered.entries(), *others])


def test_discovery_finds_the_sink_and_the_reader_it_names(discovered: Registry) -> None:
    info = discovered.get("sink", "tsv")
    assert (info.distribution, info.target) == (
        "seamline-example-csv",
        "seamline_example_csv.tsv:TsvSink",
    )
    assert info.contract_version == "1.4"
    assert info.cls is not None
    assert info.cls.reader is not None
    assert info.cls.reader.__name__ == "TsvReader"
    source = (PACKAGE / "src" / MODULE / "tsv.py").read_text(encoding="utf-8")
    assert len(source.splitlines()) <= 100, "a sink on the kit is about a hundred lines"


def test_the_sink_conformance_suite_passes_through_its_registered_class(
    discovered: Registry,
) -> None:
    from seamline.adapters.cli.check import check

    outcome = check(discovered, "sink:tsv", max_examples=1)
    failed = [r for r in outcome.suite.results if r.outcome in ("failed", "error")]
    assert not failed, failed
    assert outcome.suite.passed
    ran = {r.check for r in outcome.suite.results if r.outcome == "passed"}
    assert "exactly_once_across_a_crash" in ran
    assert "staged_parts_are_published_together_and_once" in ran


@pytest.mark.parametrize("spelling", ["absolute", "relative"])
def test_search_reads_the_sinks_output_through_the_reader_it_names(
    discovered: Registry, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, spelling: str
) -> None:
    from seamline.adapters.search import find

    registry = _with_toys(discovered)
    out = tmp_path / "out" / "emb.tsv"
    if spelling == "relative":
        monkeypatch.chdir(tmp_path)
        out = Path("out") / "emb.tsv"
    texts = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota"]
    text = (
        "pipeline: tsv-toy\n"
        f"loader: {{use: list, with: {{texts: {texts!r}}}}}\n"
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: tsv, with: {{path: '{out}'}}}}\n"
        "run: {batch_size: 2, buckets: [4, 8], checkpoint_every: 1}\n"
    )
    Orchestrator(parse_pipeline(text, "tsv.yaml", registry), registry).run()
    assert json.loads(out.with_name("emb.manifest.json").read_text())["outputs"]["sink"] == "tsv"
    found = find(registry, out, texts[1], k=3)
    assert found.hits[0].doc_id == "d1"
    assert {hit.doc_id for hit in found.hits} == {"d0", "d1", "d2"}
    assert found.how == "exact: every one of 3 rows"
    assert found.hits[0].score == pytest.approx(1.0, abs=1e-5)


def test_the_guide_shows_the_tested_sink() -> None:
    """docs/writing-a-component.md shows the sink's module as it is: the code tested above."""
    source = (PACKAGE / "src" / MODULE / "tsv.py").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), flags=re.DOTALL)
    assert source in blocks, f"{GUIDE.name} must show {MODULE}/tsv.py verbatim"
