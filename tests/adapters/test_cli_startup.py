"""`seamline --help` starts lean: no JAX, no components (how fast is benchmarks/ business)."""

from __future__ import annotations

import subprocess
import sys

PROBE = """
import sys
from seamline.adapters.cli.main import main
try:
    main(["--help"])
except SystemExit as stop:
    code = stop.code
heavy = sorted(m for m in ("jax", "jaxlib", "seamline.components", "seamline.core.registry",
                           "stevedore", "rich.table", "pydantic") if m in sys.modules)
print("HEAVY", heavy, "CODE", code)
"""


def test_help_imports_neither_jax_nor_any_component() -> None:
    result = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    assert "Usage: seamline" in result.stdout
    assert "HEAVY [] CODE 0" in result.stdout, result.stdout[-500:]
