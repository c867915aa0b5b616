"""Ids and paths made from file names are the same under every locale.

Python decodes the names it lists with the locale's encoding. Under ``LC_ALL=de_DE``
(ISO-8859-1) the UTF-8 name ``türkçe.txt`` was listed as ``tÃ¼rkÃ§e.txt``: a text-files
run there gave every non-ASCII file another id than under a UTF-8 locale, so a ``sync``
said "2 added, 2 deleted" over an unchanged folder and an ``upsert`` doubled them. The
names are read as the UTF-8 their bytes spell instead. Real processes here, as the locale
decides at start-up how Python decodes file names; the ISO-8859-1 locale is built with
``localedef`` into a temporary folder (skipped where that cannot be done).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

from tests.locales import built_locale, file_system_encoding, in_locale

if TYPE_CHECKING:
    from pathlib import Path

LATIN1 = "en_US.ISO-8859-1"

READ_ALL = """
import json
from pathlib import Path
import pyarrow as pa, pyarrow.parquet as pq
from seamline.components.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from seamline.components.loaders.parquet import ParquetLoader, ParquetLoaderConfig
from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader

loaders = [
    TextFilesLoader(TextFilesConfig(root=Path("notes"))),
    ParquetLoader(ParquetLoaderConfig(path="pq/*.parquet", id_column=None)),
    JsonlLoader(JsonlLoaderConfig(path=Path("rows.jsonl"))),
]
print(json.dumps([
    [loaded.cursor, loaded.item.id, loaded.item.metadata]
    for loader in loaders for loaded in loader.read()
]))
"""


@pytest.fixture(scope="module")
def latin1_locales(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder for ``LOCPATH`` holding an ISO-8859-1 locale."""
    return built_locale(tmp_path_factory.mktemp("locales"), "en_US", "ISO-8859-1", LATIN1)


def read_in(folder: Path, locale: str, locales: Path) -> list[list[object]]:
    done = subprocess.run(
        [sys.executable, "-c", READ_ALL],
        cwd=folder,
        env=in_locale(locale, locales),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    items: list[list[object]] = json.loads(done.stdout)
    return items


def test_file_names_give_the_same_ids_and_paths_under_an_iso_8859_1_locale(
    tmp_path: Path, latin1_locales: Path
) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder = tmp_path / "données"
    (folder / "notes").mkdir(parents=True)
    for name in ("türkçe.txt", "日本語.txt", "plain.txt"):
        (folder / "notes" / name).write_text(f"text of {name}", encoding="utf-8")
    (folder / "notes" / os.fsdecode(b"caf\xe9.txt")).write_text("not UTF-8", encoding="utf-8")
    (folder / "pq").mkdir()
    pq.write_table(pa.table({"text": ["eins", "zwei"]}), folder / "pq" / "straße.parquet")
    (folder / "rows.jsonl").write_text('{"id": "r1", "text": "one"}\nnot json\n', encoding="utf-8")

    encoding = file_system_encoding(in_locale(LATIN1, latin1_locales))
    if encoding != "iso8859-1":
        pytest.skip(f"the built locale gives Python {encoding!r} file names")

    utf8 = read_in(folder, "C.UTF-8", latin1_locales)
    latin1 = read_in(folder, LATIN1, latin1_locales)
    # A parquet cursor keeps the path as listed (a resume runs under the same settings).
    assert [item[1:] for item in latin1] == [item[1:] for item in utf8]
    assert [item[0] for item in latin1[:4]] == [item[0] for item in utf8[:4]]
    ids = [item_id for _, item_id, _ in latin1]
    assert ids[:4] == ["caf\\udce9.txt", "plain.txt", "türkçe.txt", "日本語.txt"]
    assert ids[4:6] == ["straße.parquet#0:0", "straße.parquet#0:1"]
    paths = [str(metadata.get("path")) for _, _, metadata in latin1]  # type: ignore[attr-defined]
    assert paths[2].endswith("/données/notes/türkçe.txt"), paths
    assert paths[7].endswith("/données/rows.jsonl"), paths  # its line 2, an error record
