"""The Makefile's setup as the docs tests run it: from a folder that links the checkout.

The docs tests run ``make run`` from a temporary folder whose ``.venv`` links this
checkout's. When the install stamp was stale there, uv wrote the temporary folder's path
into the checkout's ``bin/activate`` and into every script it reinstalled (``seamline``'s
shebang among them); once that folder was deleted the checkout's ``.venv/bin/seamline``
could no longer start. Setup must name the environment by its real path.
"""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest

from tests.docs.workdir import ROOT, make_workdir

MAKE_VARIABLES = {"MAKEFLAGS", "MFLAGS", "MAKELEVEL"}
"""Set by the ``make test`` that runs this test: a recursive make would inherit them."""

pytestmark = pytest.mark.skipif(
    shutil.which("make") is None or not (ROOT / ".venv").is_dir(),
    reason="needs make and the checkout's .venv",
)


def test_setup_from_a_folder_linking_the_checkout_installs_by_the_real_path() -> None:
    workdir = make_workdir()
    try:
        planned = subprocess.run(
            ["make", "--dry-run", "--no-print-directory", "--what-if=constraints.txt", "setup"],
            cwd=workdir,
            env={k: v for k, v in os.environ.items() if k not in MAKE_VARIABLES},
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        ).stdout
    finally:
        shutil.rmtree(workdir)
    real = (ROOT / ".venv").resolve()
    creating = [line for line in planned.splitlines() if " venv --quiet " in line]
    installing = [line for line in planned.splitlines() if "--compile-bytecode" in line]
    assert creating, planned
    assert installing, planned
    assert all(line.rstrip().endswith(f" {real}") for line in creating), creating
    assert all(f"--python {real}/bin/python " in line for line in installing), installing
    assert str(workdir) not in planned
