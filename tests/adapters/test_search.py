"""seamline search reads everything from the index's manifest: files, model and attention."""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import structlog
from typer.testing import CliRunner

from seamline import api
from seamline.adapters.cli import main as cli
from seamline.adapters.search import (
    Found,
    ModelChanged,
    QueryEncoder,
    Searcher,
    find,
    open_index,
    search,
)
from seamline.components.sinks.jsonl import JsonlSink
from seamline.components.sinks.lancedb import LanceDbSink
from seamline.components.sinks.npy import NpySink
from seamline.components.sinks.parquet import ParquetSink
from seamline.contracts import ConfigError, UnsupportedError, UserError
from seamline.contracts.readback import FilterRefused, read_records
from seamline.core.config import parse_pipeline
from seamline.core.orchestrator import Orchestrator
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import toy_registry

TEXTS = ["alpha beta gamma", "delta epsilon", "zeta eta theta iota kappa lambda mu nu xi"]


def registry() -> Registry:
    toys = toy_registry()
    sinks = [
        ComponentInfo(
            "sink", c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.1"
        )
        for c in (JsonlSink, NpySink)
    ]
    return Registry([*toys.entries(), *sinks])


def write_index(
    tmp_path: Path,
    sink: str,
    attention: str = "{use: native}",
    precision: str = "float32",
    model: str = "{use: toy}",
) -> Path:
    reg = registry()
    text = (
        "pipeline: search\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        f"model: {model}\n"
        f"attention: {attention}\n"
        f"precision: {precision}\n"
        f"sink: {sink}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    return tmp_path


def test_npy_with_a_custom_index_path_is_found_through_the_manifest(tmp_path: Path) -> None:
    out = tmp_path / "vectors" / "emb.npy"
    custom = tmp_path / "vectors" / "rows" / "which-row-is-what.jsonl"
    write_index(tmp_path, f"{{use: npy, with: {{path: '{out}', index_path: '{custom}'}}}}")
    assert not out.with_suffix(".index.jsonl").exists()  # not where search used to look
    hits = search(registry(), out, TEXTS[1], k=3)
    assert hits[0].doc_id == "d1"
    assert {hit.doc_id for hit in hits} == {"d0", "d1", "d2"}
    # The manifest itself may be named as the index.
    by_manifest = search(registry(), out.with_name("emb.manifest.json"), TEXTS[1], k=1)
    assert by_manifest[0].doc_id == "d1"


def test_an_output_whose_files_are_not_beside_its_manifest_is_not_searched(
    tmp_path: Path,
) -> None:
    # The manifest is data anyone who can write the folder can edit: search opens no file
    # outside the manifest's folder, whoever wrote the name there. (A run never writes such
    # a manifest: a sink's files outside its output's folder are refused in its config.)
    out = tmp_path / "vectors" / "emb.npy"
    write_index(tmp_path, f"{{use: npy, with: {{path: '{out}'}}}}")
    elsewhere = tmp_path / "rows" / "which-row-is-what.jsonl"
    elsewhere.parent.mkdir()
    manifest_path = out.with_name("emb.manifest.json")
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    (out.parent / manifest["outputs"]["files"]["index"]).rename(elsewhere)
    manifest["outputs"]["files"]["index"] = str(elsewhere)
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"emb.manifest.json:\d+:\d+: outputs.files.index: "):
        search(registry(), out, TEXTS[1], k=3)


def test_jsonl_index_lists_its_files(tmp_path: Path) -> None:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    index = open_index(out)
    assert index.sink == "jsonl"
    assert index.files == {"errors": tmp_path / "emb.errors.jsonl", "records": out}
    assert search(registry(), out, TEXTS[2], k=1)[0].doc_id == "d2"


@pytest.mark.parametrize("sink", ["jsonl", "npy"])
def test_the_file_sinks_store_the_text_search_shows(tmp_path: Path, sink: str) -> None:
    # Every first-party sink stores each window's text (sink contract 1.2); jsonl and npy
    # dropped it, and search showed "(no text stored)" for their outputs.
    out = tmp_path / f"emb.{sink}"
    write_index(tmp_path, f"{{use: {sink}, with: {{path: '{out}'}}}}")
    hit = search(registry(), out, TEXTS[2], k=1)[0]
    assert (hit.doc_id, hit.text) == ("d2", TEXTS[2])


def attention_for(tmp_path: Path, recorded: Any, use: str | None = None) -> str:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    manifest_file = out.with_name("emb.manifest.json")
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest["attention"] = recorded
    manifest_file.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    encoder = QueryEncoder(registry(), open_index(out), use)
    try:
        encoder("a query of words")
        (chosen,) = set(encoder.chosen.values())
    finally:
        encoder.close()
    return chosen


def test_the_recorded_attention_is_negotiated_again_not_assumed(tmp_path: Path) -> None:
    # The run chose long-only for this length (its priority from 8 keys up): so does search.
    assert attention_for(tmp_path, {"use": "auto"}) == "long-only"
    assert attention_for(tmp_path, {"use": ["never", "long-only", "native"]}) == "long-only"
    assert attention_for(tmp_path, {"use": "auto"}, use="native") == "native"


def test_a_recorded_attention_that_cannot_serve_here_says_why(tmp_path: Path) -> None:
    with pytest.raises(UnsupportedError, match=r"'never' cannot serve .* refuses head_dim 8"):
        attention_for(tmp_path, {"use": "never"})


def test_a_recorded_attention_not_installed_is_located_in_the_manifest(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        attention_for(tmp_path, {"use": "flash-of-genius"})
    assert "emb.manifest.json:" in str(caught.value)
    assert "no attention component named 'flash-of-genius'" in str(caught.value)


def refusal_of_model_setting(tmp_path: Path, key: str, value: object) -> str:
    """What searching an index says once its manifest's ``model.with.<key>`` is ``value``."""
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    manifest_file = out.with_name("emb.manifest.json")
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest["model"]["with"][key] = value
    manifest_file.write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        search(registry(), out, TEXTS[2], k=1)
    return str(caught.value)


def test_a_model_setting_this_version_refuses_says_to_write_the_index_anew(
    tmp_path: Path,
) -> None:
    # An index written with a setting since moved (model.with.dtype: bfloat16, before the
    # top-level precision) got the pipeline's advice, "set the pipeline's 'precision'",
    # which changes nothing a manifest says: the index could not be searched either way.
    message = refusal_of_model_setting(tmp_path, "max_length", "not a number")
    assert re.match(r".*emb\.manifest\.json:\d+:\d+: model\.with\.max_length: ", message)
    assert message.endswith("run the pipeline that made it again, fixed as said, to write it anew)")


def test_a_model_setting_of_a_newer_seamline_is_said_to_be_one_not_a_typo(
    tmp_path: Path,
) -> None:
    # "unknown field 'model.with.lower_case' in model 'toy'; allowed fields: ...": a typo
    # to fix, in a file the user never wrote, with no way out.
    message = refusal_of_model_setting(tmp_path, "lower_case", True)
    assert "unknown field 'model.with.lower_case'" in message
    assert "the seamline that wrote the index named it, an older or a newer one" in message
    assert "search it with the seamline that wrote it" in message


def test_an_attention_given_by_the_option_is_placed_at_the_option(tmp_path: Path) -> None:
    # It said "--attention:1:23: no attention component named 'natve'", a place in a text
    # the user never wrote.
    with pytest.raises(ConfigError) as caught:
        attention_for(tmp_path, {"use": "auto"}, use="natve")
    assert str(caught.value).startswith("--attention natve: no attention component named")


# --- parquet and lancedb indexes --------------------------------------------------------

COLUMNAR = [
    ComponentInfo("sink", c.name, f"{c.__module__}:{c.__name__}", "tests", "0", "ok", "", c, "1.2")
    for c in (ParquetSink, LanceDbSink)
]


def columnar_registry() -> Registry:
    return Registry([*registry().entries(), *COLUMNAR])


def write_columnar(tmp_path: Path, sink: str, *, model: str = "{use: toy}", **options: Any) -> Path:
    """An index of the three texts, written by ``sink`` (parquet or lancedb) with ``options``."""
    path = tmp_path / ("emb.parquet" if sink == "parquet" else "emb.lance")
    reg = columnar_registry()
    text = (
        "pipeline: search\n"
        f"loader: {{use: list, with: {{texts: {TEXTS!r}}}}}\n"
        f"model: {model}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}, with: {json.dumps({'path': str(path), **options})}}}\n"
        "run: {batch_size: 4, buckets: [4, 8, 16]}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    return path


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The three texts written once by the parquet, lancedb (no index) and jsonl sinks."""
    out = tmp_path_factory.mktemp("indexes")
    jsonl = out / "jsonl" / "emb.jsonl"
    write_index(out, f"{{use: jsonl, with: {{path: '{jsonl}'}}}}")
    # Each in a folder of its own: emb.parquet and emb.lance would share emb.manifest.json.
    return {sink: write_columnar(out / sink, sink) for sink in ("parquet", "lancedb")} | {
        "jsonl": jsonl
    }


@pytest.mark.parametrize("sink", ["parquet", "lancedb"])
def test_parquet_and_lancedb_indexes_are_searched_with_their_stored_text(
    written: dict[str, Path], sink: str
) -> None:
    found = find(columnar_registry(), written[sink], TEXTS[2], k=3)
    assert found.hits[0].doc_id == "d2"
    assert {hit.doc_id for hit in found.hits} == {"d0", "d1", "d2"}
    assert found.hits[0].text == TEXTS[2]
    assert found.hits[0].snippet(width=20) == TEXTS[2][:19] + "…"
    assert found.hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert found.how == "exact: every one of 3 rows"
    # The scores are the cosine similarities a jsonl index gives for the same vectors.
    expected = {h.doc_id: h.score for h in search(registry(), written["jsonl"], TEXTS[2], k=3)}
    assert {h.doc_id: h.score for h in found.hits} == pytest.approx(expected, abs=1e-5)


@pytest.mark.parametrize(
    ("sink", "mode"),
    [
        ("jsonl", None),
        ("npy", None),
        ("parquet", None),
        *[("lancedb", mode) for mode in ("overwrite", "append", "upsert", "sync")],
    ],
)
@pytest.mark.usefixtures("restored_logging")
def test_an_output_of_no_rows_is_searched_as_one_of_no_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sink: str, mode: str | None
) -> None:
    # A lancedb run that wrote no rows into a fresh path said "search it", and search then
    # said its table did not exist, "not as seamline wrote it" (exit 2), on every rerun:
    # its manifest named a table the run never created. Every sink's empty output is one
    # of no rows, for search (the CLI too), open_index, and read_records.
    suffix = {"jsonl": "jsonl", "npy": "npy", "parquet": "parquet", "lancedb": "lance"}[sink]
    path = tmp_path / "out" / f"emb.{suffix}"
    options = {"path": str(path)} | ({} if mode is None else {"mode": mode})
    reg = columnar_registry()
    text = (
        "pipeline: search\n"
        "loader: {use: list, with: {texts: []}}\n"  # no document, so no row written
        "model: {use: toy}\n"
        "attention: {use: native}\n"
        f"sink: {{use: {sink}, with: {json.dumps(options)}}}\n"
        "run: {batch_size: 4, buckets: [4, 8]}\n"
    )
    Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    found = find(reg, path, "alpha", k=3)
    assert (found.hits, found.how) == ([], "exact: every one of 0 rows")
    with api.open_index(path, registry=reg) as index:
        assert index.search("alpha", k=3, where="id = 'd0'" if sink == "lancedb" else None) == []
    classes = {"jsonl": JsonlSink, "npy": NpySink, "parquet": ParquetSink, "lancedb": LanceDbSink}
    assert read_records(path, classes[sink]) == [], "published, holding no record"
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: reg))
    shown = CliRunner().invoke(cli.app, ["search", str(path), "alpha"])
    assert shown.exit_code == 0, shown.output
    assert "every one of 0 rows" in shown.output


def test_a_lancedb_table_is_searched_through_its_index_unless_exact(tmp_path: Path) -> None:
    index = {"type": "hnsw", "num_partitions": 1, "refine_factor": 4}
    path = write_columnar(tmp_path, "lancedb", index=index)
    reg = columnar_registry()
    through = find(reg, path, TEXTS[1], k=2)
    assert through.how == "vector index embedding_idx (IvfHnswSq: 3 rows indexed, refine_factor 4)"
    assert "ANNSubIndex" in through.plan
    assert through.hits[0].doc_id == "d1"
    exact = find(reg, path, TEXTS[1], k=2, exact=True)
    assert exact.how == "exact: every one of 3 rows"
    assert "ANNSubIndex" not in exact.plan
    assert "KNNVectorDistance: metric=cosine" in exact.plan
    assert [h.doc_id for h in exact.hits] == [h.doc_id for h in through.hits]


def test_a_search_through_an_index_prints_the_rows_cosines_not_the_index_distance(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    # Through an IVF index LanceDB reports squared L2 distances of quantised vectors,
    # 2 - 2 cos: read as 1 - distance, every score printed was 2 cos - 1 (0.16 for a
    # cosine of 0.58, negative for many good hits). The rows found are scored exactly.
    path = write_columnar(tmp_path, "lancedb", index={"type": "hnsw", "num_partitions": 1})
    reg = columnar_registry()
    through = find(reg, path, TEXTS[0], k=3)
    assert through.how == "vector index embedding_idx (IvfHnswSq: 3 rows indexed)"
    exact = {h.doc_id: h.score for h in find(reg, path, TEXTS[0], k=3, exact=True).hits}
    assert {h.doc_id: h.score for h in through.hits} == pytest.approx(exact, abs=1e-6)
    assert min(exact.values()) < 0.99  # a hit whose cosine is not 1: 2 cos - 1 differs
    scores = [h.score for h in through.hits]
    assert scores == sorted(scores, reverse=True)
    # LanceDB's Rust side warns on stderr when a search selects columns without _distance.
    assert "_distance" not in capfd.readouterr().err


def test_a_table_too_small_for_ivf_pq_gets_no_index_and_says_it_scans(tmp_path: Path) -> None:
    # IVF-PQ trains on 256 rows or more: with three, an index would hold none of them
    # ("0 rows indexed"), so the sink builds none and search says it compared every row.
    index = {"type": "ivf_pq", "num_partitions": 1, "num_sub_vectors": 4}
    path = write_columnar(tmp_path, "lancedb", index=index)
    found = find(columnar_registry(), path, TEXTS[1], k=2)
    assert found.how == "exact: every one of 3 rows"
    assert "ANNSubIndex" not in found.plan


def test_where_filters_a_lancedb_table_before_the_nearest_are_chosen(
    written: dict[str, Path],
) -> None:
    path = written["lancedb"]
    found = find(columnar_registry(), path, TEXTS[1], k=3, where="id != 'd1'")
    assert {hit.doc_id for hit in found.hits} == {"d0", "d2"}
    assert found.how.endswith(", where id != 'd1'")
    with pytest.raises(UserError, match=r"where 'colour = 1' is not a filter.*columns: id, "):
        find(columnar_registry(), path, TEXTS[1], where="colour = 1")


@pytest.mark.parametrize(
    ("where", "said"),
    [
        ("id != 'd1' AN id != 'd2'", r"sql parser error: Expected: \), found: AN"),  # a typo
        ("id != 'd1' id != 'd2'", r"Expected: \), found: id"),  # AND left out
        ("id != 'd1'; DROP TABLE t", r"Expected: \), found: ;"),
        ("(id != 'd1') x (id != 'd2')", r"Expected: \), found: x"),
        ("id != 'd1') OR (id = 'd2'", r"it has a '\)' at character 11 that closes no '\('"),
        ("(id != 'd1' -- (", r"it has a '\(' at character 1 that is never closed"),
    ],
)
def test_a_filter_lancedb_cannot_read_whole_is_refused_not_half_applied(
    written: dict[str, Path], where: str, said: str
) -> None:
    # LanceDB read the first expression and dropped the rest: every one of these answered
    # with rows the filter's second half excluded (d2), and `how` showed the whole filter.
    with pytest.raises(
        FilterRefused, match=rf"^where [^\n]* is not a filter LanceDB can apply[^\n]*{said}"
    ):
        find(columnar_registry(), written["lancedb"], TEXTS[1], where=where)


@pytest.mark.parametrize(
    "where",
    [
        "id != 'd1' AND id != 'd2'",
        "(id != 'd1') AND (id != 'd2')",
        "id NOT IN ('d1', 'd2') -- a comment at the end",
        "id != 'd1' /* ( */ AND id != 'd2'",
        "text NOT LIKE '%)%' AND id NOT IN ('d1', 'd2')",
    ],
)
def test_a_whole_filter_applies_all_of_itself(written: dict[str, Path], where: str) -> None:
    found = find(columnar_registry(), written["lancedb"], TEXTS[1], k=3, where=where)
    assert {hit.doc_id for hit in found.hits} == {"d0"}
    assert found.how.endswith(f", where {where}")


@pytest.mark.parametrize(
    ("where", "call"),
    [
        ("length(repeat(text, 300000)) > 0", "repeat"),
        ("LPAD (text, 100000000) = 'a'", "lpad"),
        ("id = 'd0' OR cardinality(range(100000000)) > 0", "range"),
        ("length(list_repeat(text, 300)) > 0", "list_repeat"),  # array_repeat's alias
        ("cardinality(list_resize(string_to_array(text, ' '), 100000, 'x')) > 0", "list_resize"),
    ],
)
def test_a_filter_that_builds_huge_values_is_refused_before_it_runs(
    written: dict[str, Path], where: str, call: str
) -> None:
    # repeat(text, 300000) on 30 rows: +1 GiB and 7 s per search, which LanceDB's query
    # timeout cannot stop (it is checked between batches of rows, not within one).
    with pytest.raises(FilterRefused, match=rf"calls {call}\(\), which builds values far"):
        find(columnar_registry(), written["lancedb"], TEXTS[1], where=where)


def test_those_names_in_strings_and_comments_are_no_calls(written: dict[str, Path]) -> None:
    where = "text != 'repeat(x)' AND id != 'd1' AND id != 'd2' -- rpad(text, 9)"
    found = find(columnar_registry(), written["lancedb"], TEXTS[1], k=3, where=where)
    assert {hit.doc_id for hit in found.hits} == {"d0"}


def test_where_on_a_file_index_says_what_would_work(written: dict[str, Path]) -> None:
    no_engine = r"a where filter runs .*\(lancedb\).* a parquet sink.*DuckDB reads Parquet"
    with pytest.raises(UserError, match=no_engine):
        find(columnar_registry(), written["parquet"], TEXTS[1], where="id = 'd1'")


@pytest.mark.parametrize("sink", ["jsonl", "lancedb"])
def test_a_folder_of_outputs_is_refused_naming_the_outputs_in_it(
    written: dict[str, Path], sink: str
) -> None:
    folder = written[sink].parent
    with pytest.raises(UserError) as refused:
        open_index(folder)
    assert str(refused.value) == (
        f"{folder} is a folder of outputs, not one: name the output to search, by its "
        f"sink's path ({written[sink]})"
    )


def test_a_folder_of_many_outputs_says_how_many_it_does_not_name(tmp_path: Path) -> None:
    # Seven outputs in a folder: five were named, with no word of the other two.
    folder = tmp_path / "out"
    folder.mkdir()
    for stem in "abcdefg":
        (folder / f"{stem}.manifest.json").write_text("{}", encoding="utf-8")
        (folder / f"{stem}.jsonl").write_text("", encoding="utf-8")
    with pytest.raises(UserError) as refused:
        open_index(folder)
    shown = ", ".join(str(folder / f"{stem}.jsonl") for stem in "abcde")
    assert str(refused.value).endswith(f"sink's path ({shown}, and 2 more)")


@pytest.fixture
def restored_logging() -> Iterator[None]:
    """The command configures structlog and the root logger for the process: undo it after."""
    config = structlog.get_config()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    structlog.configure(**config)
    root.handlers[:] = handlers
    root.setLevel(level)


@pytest.mark.usefixtures("restored_logging")
def test_the_command_prints_how_it_searched_and_exits_2_on_a_bad_filter(
    written: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = written["lancedb"]
    monkeypatch.setattr(
        Registry, "discover", classmethod(lambda cls, trust=None: columnar_registry())
    )
    shown = CliRunner().invoke(
        cli.app, ["search", str(path), TEXTS[0], "-k", "1", "--exact"], env={"COLUMNS": "150"}
    )
    assert shown.exit_code == 0, shown.output
    assert "exact: every one of 3 rows" in shown.output
    assert "alpha beta gamma" in shown.output
    bad = CliRunner().invoke(cli.app, ["search", str(path), "q", "--where", "nope ="])
    assert bad.exit_code == 2
    assert "error: where 'nope ='" in bad.output
    assert "Traceback" not in bad.output


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("where", ["", "  "])
@pytest.mark.parametrize("sink", ["jsonl", "lancedb"])
def test_an_empty_filter_is_refused_not_read_as_none(
    written: dict[str, Path], monkeypatch: pytest.MonkeyPatch, sink: str, where: str
) -> None:
    """``--where ""`` (a script's ``--where "$FILTER"``, FILTER unset) searched every row,
    exit code 0, where ``"  "`` was refused."""
    with pytest.raises(FilterRefused, match=r"the where filter is empty"):
        find(columnar_registry(), written[sink], TEXTS[1], where=where)
    monkeypatch.setattr(
        Registry, "discover", classmethod(lambda cls, trust=None: columnar_registry())
    )
    shown = CliRunner().invoke(cli.app, ["search", str(written[sink]), "q", "--where", where])
    assert shown.exit_code == 2, shown.output
    assert shown.output.startswith("error: the where filter is empty"), shown.output


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize("sink", ["jsonl", "lancedb"])
def test_format_json_prints_one_document_of_the_documented_schema(
    written: dict[str, Path], monkeypatch: pytest.MonkeyPatch, sink: str
) -> None:
    monkeypatch.setattr(
        Registry, "discover", classmethod(lambda cls, trust=None: columnar_registry())
    )
    shown = CliRunner().invoke(
        cli.app, ["search", str(written[sink]), TEXTS[2], "-k", "2", "--format", "json"]
    )
    assert shown.exit_code == 0, shown.output
    document = json.loads(shown.stdout)  # one document, nothing else on stdout
    assert document["schema"] == "seamline.search/1"
    assert document["query"] == TEXTS[2]
    assert document["how"].startswith("exact: every one of 3 rows")
    hits = document["hits"]
    assert [set(hit) for hit in hits] == [{"score", "id", "window", "span", "text", "metadata"}] * 2
    assert hits[0]["id"] == "d2"
    assert hits[0]["text"] == TEXTS[2]  # whole, as stored: not a snippet
    assert hits[0]["score"] >= hits[1]["score"]
    wrong = CliRunner().invoke(cli.app, ["search", str(written[sink]), "q", "--format", "yaml"])
    assert wrong.exit_code == 2
    assert "--format must be text or json" in wrong.output


def test_an_output_whose_manifest_another_run_replaced_is_refused(tmp_path: Path) -> None:
    # A run now refuses to replace the manifest of another output still there, so the state
    # a seamline of before (or a hand) left is made by hand: emb.parquet's manifest in place.
    other = tmp_path / "other"
    other.mkdir()
    write_columnar(other, "parquet")
    lance = write_columnar(tmp_path, "lancedb")
    (other / "emb.parquet").rename(tmp_path / "emb.parquet")
    (other / "emb.manifest.json").replace(tmp_path / "emb.manifest.json")
    with pytest.raises(
        UserError, match=r"emb.manifest.json describes another output .*emb.parquet"
    ):
        open_index(lance)
    assert open_index(tmp_path / "emb.parquet").sink == "parquet"


# --- the sink a manifest names, and its reader ---------------------------------------------


def sink_named_in_manifest(out: Path, name: str) -> None:
    manifest_file = out.with_name("emb.manifest.json")
    manifest = json.loads(manifest_file.read_text(encoding="utf-8"))
    manifest["outputs"]["sink"] = name
    manifest_file.write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def test_the_reader_is_the_one_of_the_sink_the_manifest_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Search keeps no list of sink kinds: the name in ``outputs.sink`` is looked up in the
    registry, as a pipeline's sink is, and the output is read by that sink's reader."""
    monkeypatch.chdir(tmp_path)
    out = Path("emb.jsonl")
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    assert search(registry(), out, TEXTS[2], k=1)[0].doc_id == "d2"
    read: list[str] = []
    reader = JsonlSink.reader
    assert reader is not None

    class Recording(reader):  # type: ignore[misc, valid-type]
        def chunks(self, dimension: int | None) -> Any:
            read.append(str(self.file("records")))
            return super().chunks(dimension)

    class Renamed(JsonlSink):
        name = "renamed-jsonl"

    Renamed.reader = Recording
    sink_named_in_manifest(out, "renamed-jsonl")
    info = ComponentInfo(
        "sink", "renamed-jsonl", "tests:Renamed", "tests", "0", "ok", "", Renamed, "1.4"
    )
    with_renamed = Registry([*registry().entries(), info])
    assert search(with_renamed, out, TEXTS[2], k=1)[0].doc_id == "d2"
    assert read == ["emb.jsonl"]


@pytest.mark.parametrize(
    ("name", "refusal"),
    [
        ("postgres", r"outputs.sink: no sink component named 'postgres'; available: "),
        ("evil", r"outputs.sink: sink component 'evil' from evil-sinks 6.6.6 is untrusted"),
        ("memory", r"outputs.sink: the memory sink that wrote it names no reader of its output"),
        ("", r"outputs.sink: the manifest names no sink"),
    ],
    ids=["unregistered", "untrusted", "no-reader", "empty"],
)
def test_a_sink_search_cannot_read_with_is_refused_at_its_name(
    tmp_path: Path, name: str, refusal: str
) -> None:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    sink_named_in_manifest(out, name)
    untrusted = ComponentInfo(
        "sink", "evil", "evil_sinks:Exfiltrate", "evil-sinks", "6.6.6", "untrusted",
        "distribution 'evil-sinks' is not trusted",
    )  # fmt: skip
    with pytest.raises(ConfigError, match=r"emb.manifest.json:\d+:\d+: " + refusal):
        search(Registry([*registry().entries(), untrusted]), out, TEXTS[2], k=1)


def test_queries_are_embedded_in_the_precision_the_index_was_built_in(tmp_path: Path) -> None:
    out = tmp_path / "emb.jsonl"
    emulated = "{use: bfloat16, verify: false, require_native: false}"  # any machine
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}", precision=emulated)
    index = open_index(out)
    assert index.manifest.precision == "bfloat16"
    encoder = QueryEncoder(registry(), index)
    try:
        assert encoder.embedder.precision == "bfloat16"
        assert encoder.embedder.encoder.model.describe()["precision"] == "bfloat16"
        assert search(registry(), out, TEXTS[1], k=1)[0].doc_id == "d1"
    finally:
        encoder.close()


# --- queries that cannot be searched for --------------------------------------------------


@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        ("caf\udce9", r"the query is not valid Unicode: it holds a lone surrogate '\\udce9' at "),
        ("a\ud800", r"the query is not valid Unicode: .*offset 1 .*give the query as UTF-8"),
        ("", r"the query is empty: give the text to search for"),
        (" \t\n", r"the query is only whitespace: give the text to search for"),
        # What the tokeniser drops: each was searched as the empty text, ranking the index
        # by its distance from nothing, where a document of them is skipped by the loaders.
        ("\u200b", r"the query is only invisible characters \(control or format"),
        ("\ufeff \u0301\x01", r"the query is only invisible characters"),
        ("boom", r"the query cannot be embedded: prepare failed: .*cannot prepare 'boom'"),
    ],
    ids=[
        "not-utf8-argv",
        "lone-surrogate",
        "empty",
        "whitespace",
        "zero-width-space",
        "bom-accent-control",
        "model-refuses",
    ],
)
def test_a_query_that_cannot_be_embedded_is_a_user_error(
    written: dict[str, Path], query: str, refusal: str
) -> None:
    # A query a tokenizer cannot take ("TextInputSequence must be str") was the embedder's
    # Unembeddable, a ValueError: a traceback from the command line, a 500 from /v1/search.
    with pytest.raises(UserError, match=refusal):
        find(registry(), written["jsonl"], query, k=1)


@pytest.mark.usefixtures("restored_logging")
@pytest.mark.parametrize(
    ("query", "refusal"),
    [
        ("caf\udce9", "error: the query is not valid Unicode: it holds a lone surrogate"),
        ("", "error: the query is empty: give the text to search for"),
        ("   ", "error: the query is only whitespace"),
        ("boom", "error: the query cannot be embedded: prepare failed"),
    ],
    ids=["not-utf8-argv", "empty", "whitespace", "model-refuses"],
)
def test_the_command_refuses_such_a_query_with_exit_2(
    written: dict[str, Path], monkeypatch: pytest.MonkeyPatch, query: str, refusal: str
) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    shown = CliRunner().invoke(cli.app, ["search", str(written["jsonl"]), query])
    assert shown.exit_code == 2, shown.output
    assert refusal in shown.output
    assert len(shown.output.strip().splitlines()) == 1, shown.output
    assert "Traceback" not in shown.output


def test_utf8_bytes_that_a_c_locale_decoded_are_searched_as_the_text_they_spell(
    written: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under LC_ALL=C with PYTHONUTF8=0, Python decodes argv as ASCII: "café" arrives as
    # "caf\udcc3\udca9" and was refused as "not valid Unicode" though the user typed UTF-8.
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    as_typed = "café".encode().decode("ascii", "surrogateescape")
    runs = [
        CliRunner().invoke(cli.app, ["search", str(written["jsonl"]), query, "--format", "json"])
        for query in (as_typed, "café")
    ]
    assert [run.exit_code for run in runs] == [0, 0], runs[0].output
    assert runs[0].output == runs[1].output


# --- an index republished while it is open ------------------------------------------------


@pytest.mark.parametrize("sink", ["jsonl", "npy"])
def test_a_republish_by_another_model_is_refused_not_scored_with_the_old_one(
    tmp_path: Path, sink: str
) -> None:
    # open_index kept the model of the manifest it first read, and scored the new rows
    # with it, silently.
    out = tmp_path / f"emb.{sink}"
    written = f"{{use: {sink}, with: {{path: '{out}'}}}}"
    write_index(tmp_path, written)
    with Searcher(registry(), out) as index:
        assert index.find(TEXTS[1], k=1).hits[0].doc_id == "d1"
        write_index(tmp_path, written)  # the same model: read as it is
        assert index.find(TEXTS[1], k=1).hits[0].doc_id == "d1"
        write_index(tmp_path, written, model="{use: toy, with: {max_length: 2}}")
        with pytest.raises(ModelChanged, match=r"republished since it was opened, by a run "):
            index.find(TEXTS[1], k=1)
    with Searcher(registry(), out) as again:
        assert again.find(TEXTS[1], k=1).hits[0].score == pytest.approx(1.0, abs=1e-5)


def _shown(found: Found) -> list[tuple[str, int, float]]:
    return [(hit.doc_id, hit.window, round(hit.score, 5)) for hit in found.hits]


@pytest.mark.parametrize("index", [None, {"type": "hnsw", "num_partitions": 1}])
def test_a_lancedb_table_is_read_at_the_version_its_manifest_was_published_with(
    tmp_path: Path, index: dict[str, Any] | None
) -> None:
    # The sink commits a run's rows (and builds its indexes) before it renames the manifest
    # into place. A search in between read the newest version, the republishing run's rows
    # made by another model, and scored them with the query model of the manifest still in
    # place: silently wrong (seen twice in 37 tries). Each read now takes the table at the
    # version the manifest records, so it reads the rows that manifest's model made.
    options = {} if index is None else {"index": index}
    path = write_columnar(tmp_path, "lancedb", **options)
    manifest = path.with_name("emb.manifest.json")
    published = manifest.read_bytes()
    pinned = json.loads(published)["outputs"]["table_version"]
    with api.open_index(path, registry=columnar_registry()) as opened:
        before = opened.find(TEXTS[1], k=3)
        assert before.hits[0].score == pytest.approx(1.0, abs=1e-5)
        # The version recorded is the one with the index (built before the manifest).
        assert before.how.startswith("exact" if index is None else "vector index")
        # Another model republishes; then the window: its rows are committed, and the
        # manifest in place is still the one the index was opened by.
        write_columnar(tmp_path, "lancedb", model="{use: toy, with: {max_length: 2}}", **options)
        assert json.loads(manifest.read_bytes())["outputs"]["table_version"] > pinned
        republished = manifest.read_bytes()
        manifest.write_bytes(published)
        during = opened.find(TEXTS[1], k=3)
        assert _shown(during) == _shown(before)
        assert during.how == before.how
        # A search opened in the window reads the same.
        assert _shown(find(columnar_registry(), path, TEXTS[1], k=3)) == _shown(before)
        assert [h.doc_id for h in opened.find(TEXTS[2], k=1, where="id != 'd0'").hits] == ["d2"]
        manifest.write_bytes(republished)  # the window closes: the new rows, the new model
        with pytest.raises(ModelChanged, match=r"republished since it was opened, by a run "):
            opened.find(TEXTS[1], k=3)


def test_a_manifest_from_before_the_version_was_recorded_reads_the_newest(
    tmp_path: Path,
) -> None:
    path = write_columnar(tmp_path, "lancedb")
    manifest = path.with_name("emb.manifest.json")
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    del recorded["outputs"]["table_version"]
    manifest.write_text(json.dumps(recorded), encoding="utf-8")
    found = find(columnar_registry(), path, TEXTS[2], k=1)
    assert (found.hits[0].doc_id, found.how) == ("d2", "exact: every one of 3 rows")


def test_a_pinned_version_the_table_no_longer_has_is_refused_naming_the_fix(
    tmp_path: Path,
) -> None:
    path = write_columnar(tmp_path, "lancedb")
    manifest = path.with_name("emb.manifest.json")
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    newest = recorded["outputs"]["table_version"]
    recorded["outputs"]["table_version"] = newest + 40
    manifest.write_text(json.dumps(recorded), encoding="utf-8")
    with pytest.raises(UserError) as refused:
        find(columnar_registry(), path, TEXTS[2], k=1)
    assert str(refused.value) == (
        f"{path}: {manifest} was published with version {newest + 40} of the table "
        f"(outputs.table_version), which the table no longer has (its newest is {newest}): "
        "its old versions were cleaned up, or it was rewritten since. Run the pipeline that "
        "writes it again to publish it anew"
    )


@pytest.mark.parametrize("value", ["3", -1, 2**63, True, 1.5])
def test_a_table_version_that_is_not_a_version_is_refused(tmp_path: Path, value: Any) -> None:
    # The manifest is hostile input: its table version is checked before LanceDB sees it.
    path = write_columnar(tmp_path, "lancedb")
    manifest = path.with_name("emb.manifest.json")
    recorded = json.loads(manifest.read_text(encoding="utf-8"))
    recorded["outputs"]["table_version"] = value
    manifest.write_text(json.dumps(recorded), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"outputs\.table_version: "):
        find(columnar_registry(), path, TEXTS[2], k=1)


def test_an_output_a_crashed_first_run_left_unpublished_says_to_resume(tmp_path: Path) -> None:
    """A first run stopped after its commits and before its manifest leaves a checkpoint and
    no manifest: a search of it says ``--resume`` finishes it (not "run the pipeline again",
    which would throw the committed work away)."""
    from tests.core.toy import LoaderCrash

    out = tmp_path / "emb.jsonl"
    reg = registry()
    texts = [*TEXTS, *TEXTS]
    text = (
        "pipeline: search\n"
        f"loader: {{use: list, with: {{texts: {texts!r}, crash_at: d4}}}}\n"
        "model: {use: toy}\nattention: {use: native}\nprecision: float32\n"
        f"sink: {{use: jsonl, with: {{path: '{out}'}}}}\n"
        "run: {batch_size: 1, buckets: [4, 8], checkpoint_every: 1}\n"
    )
    with pytest.raises(LoaderCrash):
        Orchestrator(parse_pipeline(text, "p.yaml", reg), reg).run()
    with pytest.raises(UserError, match=r"stopped before publishing.*--resume"):
        api.open_index(out, registry=reg)
    (tmp_path / ".emb.jsonl.checkpoint").unlink()  # no run at all: nothing to resume
    with pytest.raises(UserError, match="does not exist: run a pipeline whose sink writes it"):
        api.open_index(out, registry=reg)
