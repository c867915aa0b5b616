"""JAX's persistent compilation cache, switched on at the edge for command-line runs.

Compiling each shape bucket costs seconds; with the cache, a second run of the
same pipeline loads the compiled executables instead. It is an application's
choice (it writes to disk), so the CLI makes it, not the core.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax


def default_cache_dir() -> Path:
    """``$SEAMLINE_CACHE_DIR``, else ``$XDG_CACHE_HOME/seamline/jax``, else ``~/.cache/...``."""
    explicit = os.environ.get("SEAMLINE_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "seamline" / "jax"


def enable_compile_cache(directory: Path | None = None) -> Path:
    """Point JAX's persistent cache at ``directory`` and cache every compilation."""
    directory = directory or default_cache_dir()
    directory.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(directory))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
    return directory
