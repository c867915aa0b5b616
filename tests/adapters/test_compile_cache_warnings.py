"""A compile cache entry JAX cannot read or write is removed, alone, and said in one line.

An entry cut short by a full disk was never repaired (JAX does not overwrite an entry
that exists): every later run warned ``Error -5 while decompressing data`` and compiled
again, and JAX's raw two-line ``UserWarning`` went to stderr among the JSON log lines.
Removing every entry of the program instead (``jit_seamline_step-*``) cost every other
pipeline sharing the cache its compiled steps on one failed write (``ulimit -f``). And an
entry that could not be read because the system refused the process (out of open files,
under a server's ``ulimit -n``) was removed though whole: it is kept now.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import subprocess
import sys
import textwrap
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
BROKEN = "jit_seamline_step-" + "0a1b" * 16
WHOLE = "jit_seamline_step-" + "2c3d" * 16  # another pipeline's step
OTHER = "jit_verification-" + "4e5f" * 16


def _cache(tmp_path: Path) -> Path:
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / f"{BROKEN}-cache").write_bytes(b"\x28\xb5\x2f")  # cut short
    (cache / f"{WHOLE}-cache").write_bytes(b"whole")
    (cache / f"{OTHER}-cache").write_bytes(b"whole")
    return cache


def test_the_entry_jax_cannot_read_is_removed_alone_and_logged_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)  # the suite's cache
    cache = _cache(tmp_path)
    seen: list[logging.LogRecord] = []
    everything = logging.Handler(logging.NOTSET)
    everything.emit = seen.append  # type: ignore[method-assign]
    logging.getLogger().addHandler(everything)
    try:
        with warnings.catch_warnings(record=True) as raw:
            warnings.simplefilter("always")
            assert enable_compile_cache(cache) == cache
            with structlog.testing.capture_logs() as logs:
                logging.getLogger("jax._src.lru_cache").debug(f"Cache hit for key: {BROKEN!r}")
                warnings.warn(TRUNCATED, UserWarning, stacklevel=1)
                warnings.warn("something else", UserWarning, stacklevel=1)
    finally:
        logging.getLogger().removeHandler(everything)
    assert [str(w.message) for w in raw] == ["something else"]  # JAX's said once, by us
    assert not [r for r in seen if r.name.startswith("jax") and r.levelno < logging.WARNING]
    (said,) = [e for e in logs if e["log_level"] == "warning"]
    assert said["event"] == "compile cache entry could not be read; compiled instead"
    assert said["program"] == "jit_seamline_step"
    assert said["entry"] == f"{BROKEN}-cache"
    assert said["entries_removed"] == 1
    assert not (cache / f"{BROKEN}-cache").exists()  # JAX writes it again, whole
    assert (cache / f"{WHOLE}-cache").exists()  # another pipeline's: kept
    assert (cache / f"{OTHER}-cache").exists()


def test_no_entry_is_removed_when_jax_named_no_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)
    cache = _cache(tmp_path)
    assert enable_compile_cache(cache) == cache
    with warnings.catch_warnings(), structlog.testing.capture_logs() as logs:
        warnings.simplefilter("always")
        warnings.warn(TRUNCATED.replace("reading", "writing"), UserWarning, stacklevel=1)
    (said,) = [e for e in logs if e["log_level"] == "warning"]
    assert said["event"] == "compile cache entry could not be written; compiled instead"
    assert said["entries_removed"] == 0
    assert len(list(cache.iterdir())) == 3


RUN = textwrap.dedent(
    """
    import json, resource, sys
    from pathlib import Path
    import jax, numpy as np, structlog
    from seamline.adapters.compile_cache import enable_compile_cache

    cache, limit = Path(sys.argv[1]), int(sys.argv[2])

    def step(x):
        return x * 2.0 + 1.0

    unlimited = resource.getrlimit(resource.RLIMIT_FSIZE)
    with structlog.testing.capture_logs() as logs:
        enable_compile_cache(cache)
        if limit:
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, unlimited[1]))
        jax.block_until_ready(jax.jit(step)(np.ones(3, np.float32)))
        jax.block_until_ready(jax.jit(lambda x: x - 1.0)(np.ones(3, np.float32)))
    resource.setrlimit(resource.RLIMIT_FSIZE, unlimited)
    said = [e for e in logs if e["log_level"] == "warning"]
    print(json.dumps(said, default=str))
    """
)


NOT_ROOT = ["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner,-chown"]
"""Root's permission bits are no bar: the run, as root, as if it were not."""


def _run(cache: Path, limit: int = 0, script: str = RUN) -> list[dict[str, object]]:
    env = {**os.environ, "JAX_PLATFORMS": "cpu"}
    env.pop("JAX_COMPILATION_CACHE_DIR", None)
    done = subprocess.run(
        [
            *(NOT_ROOT if os.geteuid() == 0 else []),
            sys.executable,
            "-c",
            script,
            str(cache),
            str(limit),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        check=True,
    )
    assert "persistent compilation cache" not in done.stderr  # JAX's raw warning: ours
    said: list[dict[str, object]] = json.loads(done.stdout.splitlines()[-1])
    return said


def test_real_failures_of_jax_remove_only_their_own_entry(tmp_path: Path) -> None:
    """JAX itself, not a copy of its words: a write cut short by ``ulimit -f`` and a read
    of the entry it left remove that entry and no other pipeline's."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    others = [cache / f"jit_step-{'ab' * 32}-cache", cache / f"jit_other-{'cd' * 32}-cache"]
    for other in others:
        other.write_bytes(b"another pipeline's")
    written = _run(cache, limit=200)  # each of JAX's two entries is larger than 200 bytes
    assert [(said["event"], said["entries_removed"]) for said in written] == [
        ("compile cache entry could not be written; compiled instead", 1)
    ] * 2
    assert sorted(cache.iterdir()) == sorted(others)
    assert _run(cache) == []  # written whole now
    (entry,) = [e for e in cache.glob("jit_step-*") if e not in others]
    entry.write_bytes(entry.read_bytes()[:50])  # cut short by another process's full disk
    (said,) = _run(cache)
    assert said["event"] == "compile cache entry could not be read; compiled instead"
    assert said["entry"] == entry.name
    assert said["entries_removed"] == 1
    assert len(list(cache.iterdir())) == 4  # the others kept, both entries whole:
    assert entry.stat().st_size > 50  # it written again
    assert _run(cache) == []


@pytest.mark.skipif(os.geteuid() == 0 and not shutil.which("setpriv"), reason="root, no setpriv")
def test_a_read_only_cache_is_said_once_not_per_program(tmp_path: Path) -> None:
    """Each program compiled warned that its entry could not be written: one line now,
    at start, and the cache is still read."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o500)
    try:
        said = _run(cache)
    finally:
        cache.chmod(0o700)
    assert [line["event"] for line in said] == [
        f"compile cache {cache} is read-only: compiled programs will not be kept"
    ]
    assert list(cache.iterdir()) == []


@pytest.mark.parametrize(
    ("doing", "error"),
    [
        ("reading", "OSError: [Errno 24] Too many open files: '/c/jit_seamline_step-0a1b-cache'"),
        ("reading", "OSError: [Errno 23] Too many open files in system"),
        ("reading", "OSError: [Errno 12] Cannot allocate memory"),
        ("reading", "OSError: [Errno 5] Input/output error"),
        ("reading", "PermissionError: [Errno 13] Permission denied: '/c/x-cache'"),
        ("reading", "MemoryError: "),
        ("reading", "XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory allocating 1 bytes"),
        ("writing", "OSError: [Errno 24] Too many open files: '/c/x-cache'"),
        ("writing", "PermissionError: [Errno 13] Permission denied: '/c/x-cache'"),
        ("writing", "MemoryError: "),
    ],
)
def test_an_entry_the_system_could_not_read_or_write_is_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, doing: str, error: str
) -> None:
    """Out of open files, memory or permission: the entry is none the worse, and was
    removed all the same (a server at ``ulimit -n 64`` lost every entry it read)."""
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)
    cache = _cache(tmp_path)
    assert enable_compile_cache(cache) == cache
    said = f"Error {doing} persistent compilation cache entry for 'jit_seamline_step': {error}"
    with warnings.catch_warnings(), structlog.testing.capture_logs() as logs:
        warnings.simplefilter("always")
        logging.getLogger("jax._src.lru_cache").debug(f"Cache hit for key: {BROKEN!r}")
        warnings.warn(said, UserWarning, stacklevel=1)
    (line,) = [e for e in logs if e["log_level"] == "warning"]
    done = {"reading": "read", "writing": "written"}[doing]
    assert line["event"] == f"compile cache entry could not be {done}; compiled instead"
    assert line["entry"] == f"{BROKEN}-cache"
    assert line["error"] == error.strip()
    assert line["entries_removed"] == 0
    assert (cache / f"{BROKEN}-cache").exists()


def test_an_entry_cut_short_by_a_full_disk_is_still_removed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)
    cache = _cache(tmp_path)
    assert enable_compile_cache(cache) == cache
    full = "OSError: [Errno 28] No space left on device"
    with warnings.catch_warnings(), structlog.testing.capture_logs() as logs:
        warnings.simplefilter("always")
        logging.getLogger("jax._src.lru_cache").debug(f"Cache hit for key: {BROKEN!r}")
        said = TRUNCATED.split(": error:")[0].replace("reading", "writing")
        warnings.warn(f"{said}: {full}", UserWarning, stacklevel=1)
    (line,) = [e for e in logs if e["log_level"] == "warning"]
    assert line["entries_removed"] == 1
    assert not (cache / f"{BROKEN}-cache").exists()


OUT_OF_FILES = textwrap.dedent(
    """
    import json, os, resource, sys
    from pathlib import Path
    import jax, numpy as np, structlog
    from seamline.adapters.compile_cache import enable_compile_cache

    cache, exhaust = Path(sys.argv[1]), sys.argv[2] != "0"

    def step(x):
        return x * 2.0 + 1.0

    x = np.ones(3, np.float32)
    held = []
    with structlog.testing.capture_logs() as logs:
        enable_compile_cache(cache)
        jax.block_until_ready(jax.jit(lambda v: v - 1.0)(x))  # JAX started, plugins found
        if exhaust:  # every open file this process may have, in use
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            resource.setrlimit(resource.RLIMIT_NOFILE, (64, hard))
            try:
                while True:
                    held.append(os.open(os.devnull, os.O_RDONLY))
            except OSError:
                pass
        try:
            jax.block_until_ready(jax.jit(step)(x))
        finally:
            for fd in held:
                os.close(fd)
    said = [e for e in logs if e["log_level"] == "warning"]
    print(json.dumps(said, default=str))
    """
)


def test_a_real_read_out_of_open_files_keeps_the_entry(tmp_path: Path) -> None:
    """JAX itself: the entry it could not open (``Errno 24``) is whole, and stays."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    assert _run(cache, script=OUT_OF_FILES) == []
    entries = sorted(cache.iterdir())
    assert [e for e in entries if e.name.startswith("jit_step-")]
    (said,) = _run(cache, 1, script=OUT_OF_FILES)
    assert said["event"] == "compile cache entry could not be read; compiled instead"
    assert "Too many open files" in str(said["error"])
    assert said["entries_removed"] == 0
    assert sorted(cache.iterdir()) == entries
    assert _run(cache, script=OUT_OF_FILES) == []  # read, whole
