"""A compile cache entry JAX cannot read is removed, and said in one log line.

An entry cut short by a full disk was never repaired (JAX does not overwrite an entry
that exists): every later run warned ``Error -5 while decompressing data`` and compiled
again, and JAX's raw two-line ``UserWarning`` went to stderr among the JSON log lines.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import jax
import pytest
import structlog

from seamline.adapters.compile_cache import enable_compile_cache

TRUNCATED = (
    "Error reading persistent compilation cache entry for 'jit_seamline_step': error: "
    "Error -5 while decompressing data: incomplete or truncated stream"
)


def test_an_entry_jax_cannot_read_is_removed_and_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)  # the suite's cache
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    broken = cache / "jit_seamline_step-0a1b-cache"
    broken.write_bytes(b"\x28\xb5\x2f")  # cut short
    other = cache / "jit_verification-2c3d-cache"
    other.write_bytes(b"whole")
    with warnings.catch_warnings(record=True) as raw:
        warnings.simplefilter("always")
        assert enable_compile_cache(cache) == cache
        with structlog.testing.capture_logs() as logs:
            warnings.warn(TRUNCATED, UserWarning, stacklevel=1)
            warnings.warn("something else", UserWarning, stacklevel=1)
    assert [str(w.message) for w in raw] == ["something else"]  # JAX's said once, by us
    (said,) = [e for e in logs if e["log_level"] == "warning"]
    assert said["event"] == "compile cache entry could not be read; compiled instead"
    assert said["program"] == "jit_seamline_step"
    assert said["entries_removed"] == 1
    assert not broken.exists()  # JAX writes it again, whole
    assert other.exists()
