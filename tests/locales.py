"""Locales built for a test with ``localedef`` into a temporary folder (for ``LOCPATH``).

Which locales a machine has installed varies; ``localedef`` builds one from the sources
glibc ships. A test that needs one is skipped where it cannot be built.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path


def built_locale(folder: Path, source: str, charmap: str, name: str) -> Path:
    """``folder``, holding the locale ``name`` (``source`` in ``charmap``); else a skip."""
    if shutil.which("localedef") is None:
        pytest.skip(f"localedef is not installed: the locale {name} cannot be built")
    # localedef exits 1 for warnings while writing a usable locale: what it wrote decides.
    subprocess.run(
        ["localedef", "-i", source, "-f", charmap, str(folder / name)],
        capture_output=True,
        timeout=120,
        check=False,
    )
    if not (folder / name).is_dir():
        pytest.skip(f"localedef could not build the locale {name} here")
    return folder


def in_locale(name: str, locales: Path, **extra: str) -> dict[str, str]:
    """This environment under the locale ``name`` from ``locales``, UTF-8 mode off."""
    environ = {**os.environ, "LC_ALL": name, "LOCPATH": str(locales), "PYTHONUTF8": "0"}
    environ.pop("PYTHONIOENCODING", None)
    return {**environ, **extra}


def file_system_encoding(environ: dict[str, str]) -> str:
    """The file system encoding Python has under ``environ``."""
    check = [sys.executable, "-c", "import sys; print(sys.getfilesystemencoding())"]
    done = subprocess.run(check, env=environ, capture_output=True, text=True, check=True)
    return done.stdout.strip()
