"""Outputs edited as an attacker would, then searched: the rows of ``seamline search`` in the
"tampered inputs" table (:mod:`tests.tampered_inputs`).

Each starts from an index the toy pipeline wrote (a copy per row, written once per
kind of sink), edits its manifest, its records or its index files, and runs
``seamline search`` on it from the folder it lies in. A secret planted beside the
output (outside it) is what a tampering tries to make search read or print.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from seamline.core.registry import ComponentInfo, Registry
from tests.adapters.test_search import TEXTS, columnar_registry, write_columnar, write_index
from tests.core.toy import ToyModel
from tests.tampered_inputs import Attempt, Tampering

SECRET = "hunter2-the-secret-of-the-user"
PASSWD = Path("/etc/passwd")
OUTPUTS = {"jsonl": "emb.jsonl", "npy": "emb.npy", "parquet": "emb.parquet", "lancedb": "emb.lance"}


def search_registry() -> Registry:
    """The toy model and every first-party sink, and a model of a distribution trust refuses."""
    untrusted = ComponentInfo(
        "model",
        "evil",
        "evil_models:Backdoor",
        "evil-models",
        "6.6.6",
        "untrusted",
        "distribution 'evil-models' is not trusted: the allowlist at ~/.config/seamline/"
        "config.yaml (trust.distributions) names only seamline-components",
    )
    return Registry([*columnar_registry().entries(), untrusted])


def pristine(workdir: Path, sink: str) -> Path:
    """A copy, in ``workdir/out``, of the three texts indexed by ``sink``: its primary file."""
    made = workdir.parent / "_pristine" / sink
    if not made.exists():
        staging = made.with_name(f"{sink}.writing")
        shutil.rmtree(staging, ignore_errors=True)
        out = staging / "out"
        if sink in ("parquet", "lancedb"):
            write_columnar(out, sink)
        else:
            extra = ", index_path: " + repr(str(out / "emb.index.jsonl")) if sink == "npy" else ""
            write_index(out, f"{{use: {sink}, with: {{path: '{out / OUTPUTS[sink]}'{extra}}}}}")
        staging.rename(made)
    shutil.copytree(made / "out", workdir / "out", symlinks=True)
    return workdir / "out" / OUTPUTS[sink]


def secret_beside(workdir: Path, name: str = "secret.txt") -> Path:
    """A secret outside the output's folder (beside it)."""
    path = workdir / name
    path.write_text(SECRET + "\n", encoding="utf-8")
    return path


def edit_manifest(output: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    path = output.with_name("emb.manifest.json")
    data = json.loads(path.read_text(encoding="utf-8"))
    edit(data)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


def edit_records(output: Path, edit: Callable[[list[dict[str, Any]]], None]) -> None:
    """The records edited, and the manifest's sha256 of them with them (an edit of both
    files, which whoever can write the folder can make): what the reader then makes of
    hostile content, past the check that refuses an edit of the records alone."""
    rows = [json.loads(line) for line in output.read_text(encoding="utf-8").splitlines()]
    edit(rows)
    output.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    digest = hashlib.sha256(output.read_bytes()).hexdigest()
    edit_manifest(output, set_at("outputs", "sha256", {output.name: digest}))


def search(output: Path, *more: str) -> tuple[str | Path, ...]:
    return ("search", output, TEXTS[0], *more)


def attempt(output: Path, *more: str, **extra: Any) -> Attempt:
    """``seamline search`` on ``output``, with the search registry."""
    return Attempt(search(output, *more), search_registry(), **extra)


def guarded(output: Path, secret: Path, **extra: Any) -> Attempt:
    """An attempt that must neither open nor print ``secret``."""
    return attempt(output, outside=(secret,), secrets=(SECRET,), **extra)


# -- the manifest ------------------------------------------------------------------------


def manifest_edit(edit: Callable[[dict[str, Any]], None]) -> Callable[[Path], Attempt]:
    def prepare(workdir: Path) -> Attempt:
        output = pristine(workdir, "jsonl")
        edit_manifest(output, edit)
        return attempt(output)

    return prepare


def set_at(*path_and_value: Any) -> Callable[[dict[str, Any]], None]:
    *path, value = path_and_value

    def edit(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def without_with(data: dict[str, Any]) -> None:
    del data["model"]["with"]


def truncated_manifest(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    manifest = output.with_name("emb.manifest.json")
    text = manifest.read_text(encoding="utf-8")
    manifest.write_text(text[: text.index('"model": {') + len('"model": {')], encoding="utf-8")
    return attempt(output)


def huge_manifest(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    edit_manifest(output, set_at("padding", "x" * (2 << 20)))
    return attempt(output)


def manifest_fifo(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    manifest = output.with_name("emb.manifest.json")
    manifest.unlink()
    os.mkfifo(manifest)
    return attempt(output, fifos=(manifest,))


def manifest_linked_out(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    secret = workdir / "secret.json"
    secret.write_text(json.dumps({"model": {"use": SECRET, "with": {}}}), encoding="utf-8")
    manifest = output.with_name("emb.manifest.json")
    manifest.unlink()
    manifest.symlink_to(secret)
    return guarded(output, secret)


def records_named(name: Callable[[Path], str]) -> Callable[[Path], Attempt]:
    """The manifest's ``outputs.files.records`` set to ``name(workdir)``."""

    def prepare(workdir: Path) -> Attempt:
        output = pristine(workdir, "jsonl")
        secret = secret_beside(workdir, "secret.jsonl")
        edit_manifest(output, set_at("outputs", "files", "records", name(workdir)))
        outside = (secret, PASSWD, Path("/dev/zero"))
        return attempt(output, outside=outside, secrets=(SECRET,))

    return prepare


def records_link(target: Callable[[Path], Path]) -> Callable[[Path], Attempt]:
    """The records file replaced by a symbolic link to ``target(workdir)``."""

    def prepare(workdir: Path) -> Attempt:
        output = pristine(workdir, "jsonl")
        secret = secret_beside(workdir, "secret.jsonl")
        output.unlink()
        output.symlink_to(target(workdir))
        return attempt(output, outside=(secret, Path("/dev/zero")), secrets=(SECRET,))

    return prepare


def records_fifo(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    output.unlink()
    os.mkfifo(output)
    return attempt(output, fifos=(output,))


def model_named(use: str) -> Callable[[Path], Attempt]:
    return manifest_edit(set_at("model", "use", use))


def textless(workdir: Path, path_of: str) -> Path:
    """The jsonl index with its texts removed and ``metadata.path`` set to ``path_of``."""
    output = pristine(workdir, "jsonl")

    def edit(rows: list[dict[str, Any]]) -> None:
        for row in rows:
            row.pop("text", None)
            row["span"] = [0, 200]
            row["metadata"] = {"path": path_of}

    edit_records(output, edit)
    return output


def corpus_root_etc(workdir: Path) -> Attempt:
    output = textless(workdir, "passwd")
    edit_manifest(output, set_at("provenance", "corpus_root", "/etc"))
    return attempt(output, outside=(PASSWD,), secrets=("root:",))


def metadata_path(workdir: Path) -> Attempt:
    secret = secret_beside(workdir)
    output = textless(workdir, str(secret))
    edit_manifest(output, set_at("provenance", "corpus_root", str(workdir)))
    return guarded(output, secret)


# -- the records -------------------------------------------------------------------------


def records_edit(edit: Callable[[list[dict[str, Any]]], None]) -> Callable[[Path], Attempt]:
    def prepare(workdir: Path) -> Attempt:
        output = pristine(workdir, "jsonl")
        edit_records(output, edit)
        return attempt(output)

    return prepare


def line_not_json(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    lines = output.read_text(encoding="utf-8").splitlines()
    lines[1] = '{"id": "d1", "window": 0, "embedding": [0.25, 0.5'  # cut short
    output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return attempt(output)


def records_cut_at_a_line(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    lines = output.read_text(encoding="utf-8").splitlines(keepends=True)
    output.write_text("".join(lines[:-1]), encoding="utf-8")  # a valid, smaller file
    return attempt(output)


def records_value_edited(workdir: Path) -> Attempt:
    """One value of a vector changed, the line count kept, the manifest left as published."""
    output = pristine(workdir, "jsonl")
    lines = output.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[1])
    row["embedding"][0] = 0.9
    lines[1] = json.dumps(row)
    output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return attempt(output)


def nan_in_embedding(workdir: Path) -> Attempt:
    output = pristine(workdir, "jsonl")
    lines = output.read_text(encoding="utf-8").splitlines()
    row = json.loads(lines[2])
    row["embedding"][0] = float("nan")
    lines[2] = json.dumps(row)  # Python writes NaN, which is not JSON
    output.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return attempt(output)


def huge_line(workdir: Path) -> Attempt:
    return records_edit(lambda rows: rows[0].update(text="x" * (17 << 20)))(workdir)


def markup_text(rows: list[dict[str, Any]]) -> None:
    for row in rows:
        row["text"] = "[/] [bold]not markup[/bold] \x1b[2J"


def short_embedding(rows: list[dict[str, Any]]) -> None:
    rows[1]["embedding"] = rows[1]["embedding"][:-1]


# -- the index files ---------------------------------------------------------------------


def npy_of_objects(workdir: Path) -> Attempt:
    output = pristine(workdir, "npy")
    matrix = np.empty((3, 2), dtype=object)
    matrix[:] = "payload"
    with output.open("wb") as handle:
        np.save(handle, matrix, allow_pickle=True)
    return attempt(output)


def npy_short_index(workdir: Path) -> Attempt:
    output = pristine(workdir, "npy")
    rows = output.with_name("emb.index.jsonl")
    rows.write_text("".join(rows.read_text(encoding="utf-8").splitlines(True)[:2]), "utf-8")
    return attempt(output)


def npy_long_index(workdir: Path) -> Attempt:
    output = pristine(workdir, "npy")
    rows = output.with_name("emb.index.jsonl")
    lines = rows.read_text(encoding="utf-8").splitlines(True)
    rows.write_text("".join([*lines, lines[0]]), "utf-8")
    return attempt(output)


def parquet_rewritten(edit: Callable[[Any], Any]) -> Callable[[Path], Attempt]:
    """The Parquet file rewritten by pyarrow, ``edit`` applied to its table, its footer's
    key-value metadata (the manifest it holds) kept."""

    def prepare(workdir: Path) -> Attempt:
        import pyarrow.parquet as pq

        output = pristine(workdir, "parquet")
        table = pq.read_table(output)
        pq.write_table(edit(table).replace_schema_metadata(table.schema.metadata), output)
        return attempt(output)

    return prepare


def first_value_changed(table: Any) -> Any:
    import pyarrow as pa

    embedding = table.column("embedding").combine_chunks()
    values = embedding.values.to_numpy().copy()
    values[0] = 0.9
    changed = pa.FixedSizeListArray.from_arrays(pa.array(values), embedding.type.list_size)
    return table.set_column(table.schema.get_field_index("embedding"), "embedding", changed)


def parquet_garbage(workdir: Path) -> Attempt:
    output = pristine(workdir, "parquet")
    output.write_bytes(b"PAR1" + os.urandom(64) + b"not parquet at all")
    return attempt(output)


def lance_linked_out(workdir: Path) -> Attempt:
    output = pristine(workdir, "lancedb")
    elsewhere = workdir / "elsewhere.lance"
    output.rename(elsewhere)
    output.symlink_to(elsewhere, target_is_directory=True)
    return attempt(output)


def lance_fifo_inside(workdir: Path) -> Attempt:
    output = pristine(workdir, "lancedb")
    data = next(p for p in output.rglob("*.lance") if p.is_file())
    data.unlink()
    os.mkfifo(data)
    named = {str(data.relative_to(workdir)): "out/emb.lance/data/<file>.lance"}
    return attempt(output, fifos=(data,), placeholders=named)


def lance_version(shift: Callable[[int], Any]) -> Callable[[Path], Attempt]:
    """The LanceDB table's manifest naming another version of it (``shift`` of its own)."""

    def prepare(workdir: Path) -> Attempt:
        output = pristine(workdir, "lancedb")

        def edit(data: dict[str, Any]) -> None:
            outputs = data["outputs"]
            outputs["table_version"] = shift(outputs["table_version"])

        edit_manifest(output, edit)
        return attempt(output)

    return prepare


def k_of(value: str) -> Callable[[Path], Attempt]:
    def prepare(workdir: Path) -> Attempt:
        return attempt(pristine(workdir, "jsonl"), "-k", value)

    return prepare


def toy_field() -> str:
    """A field of the toy model's config, to give the wrong type."""
    assert "max_length" in ToyModel.Config.model_fields
    return "max_length"


SCENARIOS = [
    Tampering(
        "outputs-junk", "manifest", '`outputs: "junk"`', manifest_edit(set_at("outputs", "junk"))
    ),
    Tampering("model-no-with", "manifest", "the model without `with`", manifest_edit(without_with)),
    Tampering(
        "wrong-type",
        "manifest",
        "a wrong-typed field (`outputs.files.records: 5`)",
        manifest_edit(set_at("outputs", "files", "records", 5)),
    ),
    Tampering(
        "model-config",
        "manifest",
        'the model\'s config of the wrong type (`max_length: "long"`)',
        manifest_edit(set_at("model", "with", toy_field(), "long")),
    ),
    Tampering("not-json", "manifest", "cut short (not JSON)", truncated_manifest),
    Tampering(
        "newer-format",
        "manifest",
        "a format this seamline does not know (`seamline_manifest: 2`)",
        manifest_edit(set_at("seamline_manifest", 2)),
    ),
    Tampering("huge-manifest", "manifest", "2 MiB long", huge_manifest),
    Tampering("manifest-fifo", "manifest", "a FIFO in its place", manifest_fifo),
    Tampering(
        "manifest-link",
        "manifest",
        "a symbolic link to a JSON file outside the folder",
        manifest_linked_out,
    ),
    Tampering(
        "records-absolute",
        "manifest",
        "the records file named as `/etc/passwd`",
        records_named(lambda _: str(PASSWD)),
    ),
    Tampering(
        "records-dotdot",
        "manifest",
        "the records file named as `../secret.jsonl` (outside the folder)",
        records_named(lambda _: "../secret.jsonl"),
    ),
    Tampering(
        "records-dev-zero",
        "manifest",
        "the records file named as `/dev/zero`",
        records_named(lambda _: "/dev/zero"),
    ),
    Tampering(
        "records-escape",
        "manifest",
        "the records file named with a terminal escape (`ESC]0;owned BEL`)",
        records_named(lambda _: "emb\x1b]0;owned\x07.jsonl"),
    ),
    Tampering(
        "model-untrusted",
        "manifest",
        "the model swapped for one of a distribution trust refuses",
        model_named("evil"),
    ),
    Tampering(
        "model-import-path",
        "manifest",
        "the model named by an import path (`evil_models:Backdoor`)",
        model_named("evil_models:Backdoor"),
    ),
    Tampering(
        "corpus-root",
        "manifest",
        "`provenance.corpus_root: /etc`, records without text naming `passwd`",
        corpus_root_etc,
        exit_code=0,
    ),
    Tampering(
        "metadata-path",
        "records",
        "records without text, `metadata.path` naming a secret outside the folder",
        metadata_path,
        exit_code=0,
    ),
    Tampering(
        "records-link",
        "records",
        "the records file a symbolic link to a file outside the folder",
        records_link(lambda workdir: workdir / "secret.jsonl"),
    ),
    Tampering(
        "records-link-dev-zero",
        "records",
        "the records file a symbolic link to `/dev/zero`",
        records_link(lambda _: Path("/dev/zero")),
    ),
    Tampering("records-fifo", "records", "a FIFO in place of the records file", records_fifo),
    Tampering("line-not-json", "records", "a line that is not JSON", line_not_json),
    Tampering(
        "records-cut-at-a-line",
        "records",
        "its last line removed (what is left is valid)",
        records_cut_at_a_line,
    ),
    Tampering(
        "records-value-edited",
        "records",
        "one vector value changed, the line count kept",
        records_value_edited,
    ),
    Tampering(
        "record-wrong-type",
        "records",
        'a wrong-typed field (`span: "x"`)',
        records_edit(lambda rows: rows[1].update(span="x")),
    ),
    Tampering(
        "embedding-short",
        "records",
        "a vector one value short",
        records_edit(short_embedding),
    ),
    Tampering("embedding-nan", "records", "`NaN` in a vector", nan_in_embedding),
    Tampering("huge-line", "records", "a line of 17 MiB", huge_line),
    Tampering(
        "markup",
        "records",
        "rich markup and a terminal escape in the stored text",
        records_edit(markup_text),
        exit_code=0,
    ),
    Tampering(
        "npy-objects", "index", "the `.npy` matrix an array of objects (a pickle)", npy_of_objects
    ),
    Tampering(
        "npy-short-index",
        "index",
        "the npy sink's rows file one row short of the matrix",
        npy_short_index,
    ),
    Tampering(
        "npy-long-index",
        "index",
        "the npy sink's rows file one row longer than the matrix",
        npy_long_index,
    ),
    Tampering("parquet-garbage", "index", "the Parquet file not Parquet", parquet_garbage),
    Tampering(
        "parquet-rows-dropped",
        "index",
        "the Parquet file rewritten a row short, its footer's manifest kept",
        parquet_rewritten(lambda table: table.slice(0, table.num_rows - 1)),
    ),
    Tampering(
        "parquet-value-changed",
        "index",
        "the Parquet file rewritten with one vector value changed, its footer's manifest kept",
        parquet_rewritten(first_value_changed),
    ),
    Tampering(
        "lance-link",
        "index",
        "the LanceDB table a symbolic link to a table outside the folder",
        lance_linked_out,
    ),
    Tampering(
        "lance-fifo", "index", "a FIFO in place of a data file of the table", lance_fifo_inside
    ),
    Tampering(
        "lance-version-gone",
        "index",
        "the version of the LanceDB table the manifest names (`outputs.table_version`) not in it",
        lance_version(lambda version: version + 40),
    ),
    Tampering(
        "lance-version-huge",
        "index",
        "`outputs.table_version: 2**70` (larger than LanceDB's version numbers)",
        lance_version(lambda _: 2**70),
    ),
    Tampering(
        "index-empty",
        "command line",
        "the index given as `''` (an empty path)",
        lambda workdir: Attempt(("search", "", TEXTS[0]), search_registry()),
    ),
    Tampering("k-huge", "command line", "`-k 2**70` (larger than an int64)", k_of(str(2**70))),
    Tampering("k-zero", "command line", "`-k 0`", k_of("0")),
    Tampering("k-negative", "command line", "`-k -3`", k_of("-3")),
]
