"""The session's processes share one JAX compilation cache (tests/shared_compilations.py).

If the folder were not named in the environment, or not set in this process's JAX, every
worker and subprocess would compile alone again, and the suite would take minutes more
without any test failing; these checks are what fails instead.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp


def cached_files() -> set[str]:
    return {p.name for p in Path(os.environ["JAX_COMPILATION_CACHE_DIR"]).iterdir()}


def test_this_process_compiles_into_the_sessions_folder() -> None:
    folder = os.environ.get("JAX_COMPILATION_CACHE_DIR")
    assert folder, "no session compilation cache is named"
    assert Path(folder).is_dir()
    before = cached_files()
    jax.jit(lambda x: jnp.sin(x) * 3.0 + 0.25)(jnp.arange(7.0)).block_until_ready()
    assert cached_files() - before, "the compilation was not written to the shared folder"


def test_a_subprocess_finds_what_another_process_compiled() -> None:
    program = (
        "import jax, jax.numpy as jnp\n"
        "from jax import monitoring\n"
        "hits = []\n"
        "monitoring.register_event_listener(lambda e, **k: hits.append(e))\n"
        "jax.jit(lambda x: jnp.cos(x) - 0.5)(jnp.arange(5.0)).block_until_ready()\n"
        "print('/jax/compilation_cache/cache_hits' in hits)\n"
    )
    said = [
        subprocess.run(
            [sys.executable, "-c", program], capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    ]
    assert said[1] == "True", f"the second process compiled again: {said}"
