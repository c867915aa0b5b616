"""``seamline.api.enable_compile_cache``: how an application keeps compiled programs.

A library does not set JAX's config behind its application's back, so each new
``Embedder`` (and each process's ``Pipeline.run``) compiled its programs again, seconds
each, with no way named to keep them. The helper switches on the cache the command uses.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import jax
import pytest

from seamline import api
from seamline.contracts import UserError

PROGRAM = textwrap.dedent(
    """
    import sys
    import jax, jax.numpy as jnp
    from jax import monitoring
    from seamline.api import enable_compile_cache
    hits = []
    monitoring.register_event_listener(lambda event, **_: hits.append(event))
    print(enable_compile_cache(sys.argv[1]))
    jax.jit(lambda x: jnp.tanh(x) * 0.75 - 2.0)(jnp.arange(6.0)).block_until_ready()
    print("/jax/compilation_cache/cache_hits" in hits)
    """
)


def test_a_second_process_loads_what_the_first_compiled(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("JAX_COMPILATION_CACHE")}
    said = [
        subprocess.run(
            [sys.executable, "-c", PROGRAM, "cache"],
            capture_output=True,
            text=True,
            env=env,
            cwd=tmp_path,
            timeout=300,
            check=True,
        ).stdout.split()
        for _ in range(2)
    ]
    assert said == [["cache", "False"], ["cache", "True"]]  # the directory, as it was named
    assert list((tmp_path / "cache").glob("*-cache")), "nothing was written"


def test_a_directory_that_cannot_be_used_is_a_user_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)  # the suite's cache
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError, match="cannot be made"):
        api.enable_compile_cache(tmp_path / "file")


def test_an_applications_error_names_its_argument_not_the_commands_variable_or_flag(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A Python caller was told to point $SEAMLINE_CACHE_DIR elsewhere or to run with
    --no-compile-cache, a flag it has not, though its own argument was what failed."""
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)
    monkeypatch.setenv("SEAMLINE_CACHE_DIR", str(tmp_path / "elsewhere"))
    (tmp_path / "file").write_text("")
    with pytest.raises(UserError) as refused:
        api.enable_compile_cache(tmp_path / "file")
    said = str(refused.value)
    assert "point the directory passed to enable_compile_cache() at a directory" in said
    assert "do not call enable_compile_cache()" in said
    assert "SEAMLINE_CACHE_DIR" not in said
    assert "--no-compile-cache" not in said
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o777)
    shared.chmod(0o777)
    with pytest.raises(UserError, match="not private") as refused:
        api.enable_compile_cache(shared)
    assert "--no-compile-cache" not in str(refused.value)
    assert "do not call enable_compile_cache()" in str(refused.value)


def test_a_directory_the_application_set_in_jax_config_is_kept(tmp_path: Path) -> None:
    # It was replaced by seamline's default (only the variables were honoured), so the
    # application's own compilations went to ~/.cache/seamline/jax from then on.
    program = textwrap.dedent(
        """
        import jax
        from seamline.api import enable_compile_cache
        jax.config.update("jax_compilation_cache_dir", "mine")
        print(enable_compile_cache(), jax.config.jax_compilation_cache_dir)
        """
    )
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JAX_COMPILATION_CACHE") and k != "SEAMLINE_CACHE_DIR"
    }
    env["XDG_CACHE_HOME"] = str(tmp_path / "xdg")
    said = subprocess.run(
        [sys.executable, "-c", program],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
        check=True,
    ).stdout.split()
    assert said == ["mine", "mine"]
    assert (tmp_path / "mine").is_dir()
    assert not (tmp_path / "xdg").exists()
