"""The sinks' readers take an output back as untrusted input, as ``seamline search`` does.

``read_records`` and ``read_errors`` follow the manifest beside an output, which
whoever can write the folder can edit: each problem is one ``UserError`` naming the
file and the line or field (never a traceback deep in a parser), and nothing outside
the manifest's folder is opened. Paths are given as a user types them: relative to a
working directory of the test's own, and absolute.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.contracts import ConfigError, UserError
from tests.components.test_sinks import ERRORS, make_records
from tests.readback import read_errors, read_records

MANIFEST = {"seamline_manifest": 1, "pipeline": "readers", "run_id": "r"}


@pytest.fixture(params=["absolute", "relative"])
def out(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The folder the outputs are written to, spelled absolute or relative to the cwd."""
    if request.param == "relative":
        monkeypatch.chdir(tmp_path)
        return Path("out")
    return tmp_path / "out"


def publish(sink: Any) -> None:
    sink.start(MANIFEST)
    sink.write(make_records(4))
    for error in ERRORS:
        sink.write_error(error)
    sink.close(complete=True)


def jsonl(out: Path) -> Path:
    publish(JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl")))
    return out / "emb.jsonl"


def edit(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_a_published_output_reads_back_whole(out: Path) -> None:
    records = read_records(jsonl(out))
    assert records is not None
    assert [(r.doc_id, r.index) for r in records] == [(f"doc-{i // 2}", i % 2) for i in range(4)]
    assert [e["id"] for e in read_errors(out / "emb.jsonl") or []] == ["bad.txt", "big.txt"]
    publish(NpySink(NpySinkConfig(path=out / "npy" / "emb.npy")))
    assert len(read_records(out / "npy" / "emb.npy") or []) == 4


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        (lambda m: m.update(outputs="junk"), r"emb.manifest.json: outputs: Input should be"),
        (
            lambda m: m["outputs"]["files"].update(records="/etc/passwd"),
            r"outputs.files.records: '/etc/passwd' is a path outside",
        ),
        (
            lambda m: m["outputs"]["files"].update(errors="../../secret.jsonl"),
            r"outputs.files.errors: '../../secret.jsonl' climbs out",
        ),
        (lambda m: m.update(seamline_manifest=9), "written by a newer seamline"),
    ],
)
def test_a_tampered_manifest_is_one_located_refusal(out: Path, change: Any, problem: str) -> None:
    primary = jsonl(out)
    edit(out / "emb.manifest.json", change)
    with pytest.raises(ConfigError, match=problem):
        read_records(primary)


def test_tampered_records_are_refused_with_their_line(out: Path) -> None:
    primary = jsonl(out)
    lines = primary.read_text(encoding="utf-8").splitlines()
    primary.write_text("\n".join([lines[0], '{"id": "x", "span": "no"}', *lines[2:]]) + "\n")
    with pytest.raises(UserError, match=r"out/emb.jsonl:2: a record's span: "):
        read_records(primary)
    primary.write_text("\n".join([lines[0], "not json"]) + "\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"out/emb.jsonl:2: not a JSON record"):
        read_records(primary)
    errors = out / "emb.errors.jsonl"
    errors.write_text("[1, 2]\n", encoding="utf-8")
    with pytest.raises(UserError, match=r"out/emb.errors.jsonl:1: not a JSON object but list"):
        read_errors(primary)


def test_a_fifo_or_a_link_out_in_place_of_a_file_is_refused(out: Path) -> None:
    primary = jsonl(out)
    errors = out / "emb.errors.jsonl"
    errors.unlink()
    os.mkfifo(errors)
    with pytest.raises(UserError, match=r"emb.errors.jsonl \(the errors file .*\) is a FIFO"):
        read_errors(primary)
    secret = out.parent / "secret.jsonl"
    secret.write_text('{"id": "secret", "span": [0, 1], "embedding": [1.0]}\n', encoding="utf-8")
    primary.unlink()
    primary.symlink_to(secret.resolve())
    with pytest.raises(ConfigError, match=r"'emb\.jsonl' leads through a symbolic link outside"):
        read_records(primary)
