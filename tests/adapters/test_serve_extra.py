"""``seamline serve`` where the ``serve`` extra is not installed: one line, exit code 2.

It ended in a 40-line traceback (``import uvicorn`` in the server module,
ModuleNotFoundError, exit code 1), where the ray executor names what to install. The
extra's modules are hidden in a fresh process (set to None in ``sys.modules``: their
import fails as where they are not installed), which then runs the command.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.adapters.serving import environment, pipeline_text

PROBE = """
import sys
for name in sys.argv[1].split(","):
    sys.modules[name] = None
from seamline.adapters.cli.main import main
sys.argv = ["seamline", "serve", sys.argv[2]]
try:
    main()
finally:
    print("jax imported" if "jax" in sys.modules else "jax not imported")
"""


def serve_without(tmp_path: Path, hidden: str) -> subprocess.CompletedProcess[str]:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(pipeline_text())
    return subprocess.run(
        [sys.executable, "-c", PROBE, hidden, str(pipeline)],
        capture_output=True,
        text=True,
        env=environment(),
        cwd=tmp_path,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize(
    ("hidden", "named"),
    [
        ("uvicorn", "uvicorn (the serve extra), which is not installed"),
        ("uvicorn,starlette", "uvicorn, starlette (the serve extra), which are not installed"),
        ("prometheus_client", "prometheus_client (the serve extra), which is not installed"),
    ],
)
def test_serve_without_its_extra_says_what_to_install(
    tmp_path: Path, hidden: str, named: str
) -> None:
    done = serve_without(tmp_path, hidden)
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: seamline serve needs {named}: pip install 'seamline-adapters[serve]'\n"
    )
    assert "jax not imported" in done.stdout, "refused before the pipeline or model is loaded"


def test_serve_with_a_broken_extra_says_to_reinstall_it(tmp_path: Path) -> None:
    # uvicorn found, but a module of its own missing (h11): the server's import failed
    # with a traceback, exit 1.
    done = serve_without(tmp_path, "h11")
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith(
        "error: seamline serve could not import its server (ModuleNotFoundError: import of "
        "h11 halted; None in sys.modules): the serve extra is installed but broken; "
        "reinstall it: pip install 'seamline-adapters[serve]' --force-reinstall"
    ), done.stderr
    assert "Traceback" not in done.stderr
