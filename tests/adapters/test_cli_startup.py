"""`seamline --help` and every `seamline <command> --help` start lean (how fast is
benchmarks/overhead/cli_start.py's business; which modules they import is this file's).

A module on the list is what a help page has no use for: JAX, a component, the
registry, rich's tables, and pydantic (typer reads an absent ``--help`` through it
unless told otherwise: ``conventions.Group``). numpy is allowed.
"""

from __future__ import annotations

import subprocess
import sys

HEAVY = (
    "jax",
    "jaxlib",
    "lancedb",
    "pyarrow",
    "ray",
    "uvicorn",
    "seamline.components",
    "seamline.core.registry",
    "stevedore",
    "rich.table",
    "pydantic",
)

PROBE = """
import sys
from seamline.adapters.cli.main import app, main
from typer.main import get_command

def paths(command, path=()):
    yield path
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from paths(sub, (*path, name))

def helps(paths):
    codes = []
    for path in paths:
        try:
            main([*path, "--help"])
        except SystemExit as stop:
            codes.append(stop.code)
    return sorted(set(codes)), len(codes)

# `bench attention --help` is the benchmark's own argparse program (its tables use rich):
# it is held to the JAX list only, after every other help has been checked.
own = [("bench", "attention")]
codes, count = helps([path for path in paths(get_command(app)) if path not in own])
heavy = sorted(m for m in HEAVY if m in sys.modules)
print("HEAVY", heavy, "CODES", codes, "HELPS", count)
helps(own)
print("OWN", sorted(m for m in HEAVY if m in sys.modules and m not in ("rich.table",)))
"""


def test_help_of_every_command_imports_neither_jax_nor_any_component() -> None:
    """Every help page, one after another in one process: nothing heavy, by any of them."""
    result = subprocess.run(
        [sys.executable, "-c", f"HEAVY = {HEAVY!r}\n{PROBE}"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "Usage: seamline" in result.stdout
    lines = result.stdout.splitlines()
    summary = next(line for line in lines if line.startswith("HEAVY "))
    own = lines[-1]
    assert summary.startswith("HEAVY [] CODES [0] HELPS "), summary
    assert int(summary.rsplit(" ", 1)[1]) >= 14, "every command's help was read"
    assert own == "OWN []", own


def test_components_does_not_import_jax() -> None:
    """`components` imports every trusted plugin to check its class; seamline's own
    modules (contracts, kernel kit, first-party components, cpu-flash, the tokamax
    example) import JAX inside the functions that use it, never at module load."""
    probe = (
        "import sys\nfrom seamline.adapters.cli.main import main\n"
        "try:\n    main(['components', '--format', 'json'])\nexcept SystemExit:\n    pass\n"
        "print('JAX', 'jax' in sys.modules, file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "JAX False" in result.stderr


def test_importing_the_public_api_does_not_import_jax() -> None:
    """``import seamline.api`` imported JAX (about 1,000 modules, 1 to 2.5 s) through
    adapters.search -> search.query -> core.attention -> measure; its names are loaded on
    first use now, and the errors an application catches cost nothing."""
    probe = (
        "import sys\nimport seamline.api\n"
        "from seamline.api import ConfigError, ResumeRefused, SeamlineError, UserError\n"
        "print('BEFORE', 'jax' in sys.modules, sorted(dir(seamline.api)) == sorted(\n"
        "    set(dir(seamline.api)) | set(seamline.api.__all__)))\n"
        "from seamline.api import Embedder\n"
        "print('AFTER', 'jax' in sys.modules, Embedder.__module__, seamline.api.Vectors)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    assert "BEFORE False True" in result.stdout, result.stdout
    assert "AFTER True seamline.core.embedder" in result.stdout, result.stdout
