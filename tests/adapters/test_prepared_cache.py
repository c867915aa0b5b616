"""A compile cache root prepared at an image build is read by the uid the image runs as.

OpenShift runs an image as an arbitrary uid, unknown when the image was built, so a cache
prepared then (``SEAMLINE_CACHE_DIR=/opt/jaxcache``, root's, 0755, entries 0644) could
never be the runtime user's: it was refused, exit 2, "owned by another user (uid 0)"
(now "owned by user root (uid 0)", as the other ownership refusals name root).
Root can replace any file anyway (ssh's ``StrictModes`` accepts root's files too), so a
cache root owns and no one else can write is trusted for reading. Anything else another
user owns, or that a group or others can write, is still refused.

These tests run as root (to own files as root) and stand a non-root uid in for the user
running seamline, as the ownership checks' own tests do.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import jax
import pytest
import structlog

from seamline.adapters import compile_cache
from seamline.adapters.compile_cache import enable_compile_cache
from seamline.contracts import UserError, ownership
from seamline.core import private_cache
from seamline.core.private_cache import CACHE_SETTING, check_jax_compile_cache
from tests.fresh_logging import logging_as_in_a_fresh_process

pytestmark = pytest.mark.skipif(
    not hasattr(os, "getuid") or os.getuid() != 0, reason="needs root to own the cache as root"
)

RUNTIME_UID = 1000680000  # an OpenShift pod's


@pytest.fixture
def prepared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``/opt/jaxcache`` as an image build leaves it; seamline run as another uid."""
    made = tmp_path / "jaxcache"
    made.mkdir()
    made.chmod(0o755)
    (made / "jit_step-0123abcd-cache").write_bytes(b"a compiled program")
    (made / "jit_step-0123abcd-cache").chmod(0o644)
    (made / "xla_gpu").mkdir()
    (made / "xla_gpu").chmod(0o755)
    for name in ("JAX_COMPILATION_CACHE_DIR", "SEAMLINE_CACHE_DIR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("SEAMLINE_CACHE_DIR", str(made))
    monkeypatch.setattr(ownership, "my_uid", lambda: RUNTIME_UID)
    monkeypatch.setattr(private_cache, "my_uid", lambda: RUNTIME_UID, raising=False)
    return made


@pytest.fixture
def updates(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, object]]:
    seen: list[tuple[str, object]] = []  # this process's JAX keeps the suite's cache
    monkeypatch.setattr(jax.config, "update", lambda name, value: seen.append((name, value)))
    return seen


def test_a_cache_root_prepared_is_read(
    prepared: Path, updates: list[tuple[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(compile_cache, "_writable", lambda directory: False)  # not root's uid
    # an info line: a CLI test before this one in the worker leaves a warning-level filter
    with logging_as_in_a_fresh_process(), structlog.testing.capture_logs() as logs:
        assert enable_compile_cache() == prepared
    assert ("jax_compilation_cache_dir", str(prepared)) in updates
    # It is read-only by design: every start warned "make it writable, or set
    # SEAMLINE_CACHE_DIR", the opposite of what the image's builder meant.
    said = [(e["log_level"], e["event"]) for e in logs]
    assert said == [("info", f"compile cache {prepared} was prepared by root: read, not written")]
    assert "fix" not in logs[0]


@pytest.mark.parametrize(
    ("spoil", "says"),
    [
        (lambda c: c.chmod(0o775), "but it can be written by its group (mode 775)"),
        (
            lambda c: (c / "jit_step-0123abcd-cache").chmod(0o664),
            "but its entry jit_step-0123abcd-cache can be written by its group (mode 664)",
        ),
        (lambda c: os.chown(c / "jit_step-0123abcd-cache", 12345, -1), "owned by uid 12345"),
        (
            lambda c: (c / "xla_gpu").chmod(0o777),
            "but its entry xla_gpu can be written by every user (mode 777)",
        ),
        (lambda c: os.chown(c, 12345, -1), "is owned by another user (uid 12345)"),
    ],
)
def test_one_a_group_or_another_user_could_write_is_still_refused(
    prepared: Path, updates: list[tuple[str, object]], spoil: object, says: str
) -> None:
    # gid 0 is root's group and an OpenShift uid's: group write is no one's own here.
    spoil(prepared)  # type: ignore[operator]
    with pytest.raises(UserError, match="is not private") as refused:
        enable_compile_cache()
    assert says in str(refused.value)
    assert updates == []


@pytest.mark.parametrize(
    "spoil",
    [
        pytest.param(lambda c: c.chmod(0o775), id="folder-group-writable"),
        pytest.param(
            lambda c: (c / "jit_step-0123abcd-cache").chmod(0o664), id="entry-group-writable"
        ),
        pytest.param(
            lambda c: os.chown(c / "jit_step-0123abcd-cache", 12345, -1), id="entry-not-root-s"
        ),
    ],
)
def test_a_root_cache_refused_names_root_and_gives_the_image_builders_fix(
    prepared: Path, updates: list[tuple[str, object]], spoil: object
) -> None:
    # It said "owned by another user (uid 0)" where the staging, lock and traces refusals
    # say "user root (uid 0)", and offered only "use a directory of your own".
    spoil(prepared)  # type: ignore[operator]
    with pytest.raises(UserError, match="is not private") as refused:
        enable_compile_cache()
    said = str(refused.value)
    assert "it is owned by user root (uid 0), and a cache root owns" in said, said
    assert "use a directory of your own: point $SEAMLINE_CACHE_DIR at one" in said
    assert f"as root: delete every entry root does not own, then chmod -R go=rX {prepared}" in (
        said
    )


def test_another_users_cache_gets_no_image_builders_fix(
    prepared: Path, updates: list[tuple[str, object]]
) -> None:
    os.chown(prepared, 12345, -1)
    with pytest.raises(UserError, match="is not private") as refused:
        enable_compile_cache()
    assert "chmod -R" not in str(refused.value)


@pytest.fixture
def jax_cache_setting() -> Iterator[None]:
    before = getattr(jax.config, CACHE_SETTING)
    yield
    jax.config.update(CACHE_SETTING, before)


def test_jax_own_variable_naming_a_prepared_cache_passes(
    prepared: Path, monkeypatch: pytest.MonkeyPatch, jax_cache_setting: None
) -> None:
    monkeypatch.setattr(private_cache, "_passed", set())
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", str(prepared))
    jax.config.update(CACHE_SETTING, str(prepared))
    check_jax_compile_cache()  # no refusal
    prepared.chmod(0o775)
    monkeypatch.setattr(private_cache, "_passed", set())
    with pytest.raises(UserError, match="is not private"):
        check_jax_compile_cache()


def test_root_is_not_excused_for_itself(
    prepared: Path, updates: list[tuple[str, object]], monkeypatch: pytest.MonkeyPatch
) -> None:
    # As root, a cache is root's own and checked as anyone's: another user's stays refused.
    monkeypatch.setattr(ownership, "my_uid", lambda: 0)
    monkeypatch.setattr(private_cache, "my_uid", lambda: 0)
    assert enable_compile_cache() == prepared
    os.chown(prepared / "jit_step-0123abcd-cache", 12345, -1)
    with pytest.raises(UserError, match=r"\(uid 12345\)"):
        enable_compile_cache()
