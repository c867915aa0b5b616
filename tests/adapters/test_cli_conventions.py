"""What a user of typer, pip or git expects of a command line: a version, -h everywhere,
``python -m``, and output for a pipe that is not folded at 80 columns.

Each runs ``seamline`` as a process, its output a pipe, as a script or ``| cat`` would.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from seamline.contracts.manifest import FORMAT
from seamline.contracts.sink_kit import CHECKPOINT_FORMAT
from seamline.core.code_digest import code_digest
from seamline.core.provenance import run_versions

SEAMLINE = Path(sys.executable).with_name("seamline")


def piped(
    *args: str, command: tuple[str, ...] = (str(SEAMLINE),)
) -> subprocess.CompletedProcess[str]:
    forcing = ("COLUMNS", "FORCE_COLOR", "TTY_COMPATIBLE")  # what a CI may set, not a pipe
    environ = {k: v for k, v in os.environ.items() if k not in forcing}
    return subprocess.run(
        [*command, *args], capture_output=True, text=True, timeout=120, env=environ, check=False
    )


def shown_version() -> str:
    """What ``seamline --version`` prints: one line, the version second (as scripts read
    it), then the code digest and the formats."""
    return (
        f"seamline {version('seamline-adapters')} (code {code_digest()}; manifest format "
        f"{FORMAT}, checkpoint format {CHECKPOINT_FORMAT})\n"
    )


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version_is_the_installed_distributions(flag: str) -> None:
    """``0.1.0`` at every commit told an operator nothing about which seamline wrote an
    output or a checkpoint (before an upgrade, or after a rollback): the code digest
    that a manifest's and a checkpoint's ``versions`` record is shown, and the formats."""
    done = piped(flag)
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown_version()
    assert code_digest() == run_versions()["seamline-code"]  # what a manifest records


@pytest.mark.parametrize(
    "command", [(), ("run",), ("search",), ("trace",), ("trace", "summarize"), ("serve",)]
)
def test_minus_h_is_help_on_every_command(command: tuple[str, ...]) -> None:
    short, long = piped(*command, "-h"), piped(*command, "--help")
    assert short.returncode == 0, short.stderr
    assert short.stdout == long.stdout
    assert short.stdout.startswith("Usage: seamline")


def test_python_dash_m_seamline_is_the_command() -> None:
    done = piped("--version", command=(sys.executable, "-m", "seamline"))
    assert done.returncode == 0, done.stderr
    assert done.stdout == shown_version()


def test_piped_output_is_not_folded_or_cut() -> None:
    """``seamline components | cat`` cut the very columns it exists for at 80 columns, and
    a long line was folded mid-phrase: into a pipe, every row is whole, on one line."""
    done = piped("components")
    assert done.returncode == 0, done.stderr
    rows = [line for line in done.stdout.splitlines() if "seamline-components" in line]
    assert rows, done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) > 80
    assert not any("…" in line for line in rows), "a cell was cut"
    assert "\x1b[" not in done.stdout, "no colour into a pipe"
    # Every attention of the first party is on a line of its own, its name and its
    # distribution on that same line.
    for name in ("native", "blockwise", "xla-sdpa"):
        assert any(name in row and "seamline-components" in row for row in rows), name


def test_columns_still_sets_a_width_where_one_is_wanted() -> None:
    environ = {**os.environ, "COLUMNS": "60"}
    done = subprocess.run(
        [str(SEAMLINE), "components"], capture_output=True, text=True, env=environ, check=False
    )
    assert done.returncode == 0, done.stderr
    assert max(len(line) for line in done.stdout.splitlines()) <= 60


def test_run_help_says_what_run_accepts() -> None:
    """It listed three log levels of the four it takes, and said only jsonl and npy resume."""
    text = " ".join(piped("run", "-h").stdout.split())
    assert "debug, info, warning or error" in text
    assert "every first- party sink" in text or "every first-party sink" in text
    assert "as jsonl and npy are" not in text


def test_help_shows_each_arguments_name_and_each_options_choices() -> None:
    """Click's own metavars were ``{pipeline}`` and ``<str>``: the choices were hidden."""
    run_help = piped("run", "-h").stdout
    assert "[OPTIONS] PIPELINE\n" in run_help
    assert "--log-format [auto|json|console]" in run_help
    assert "--log-level [debug|info|warning|error]" in run_help
    kinds = piped("components", "-h").stdout
    assert "--kind [attention|model|loader|monitor|sink|executor]" in kinds
    assert "[OPTIONS] INDEX [QUERY]\n" in piped("search", "-h").stdout  # or --queries FILE
    assert "--long-text [truncate|mean]" in piped("serve", "-h").stdout


def test_components_format_json_is_one_document_of_the_documented_schema() -> None:
    done = piped("components", "--format", "json", "--kind", "attention")
    assert done.returncode == 0, done.stderr
    document = json.loads(done.stdout)
    assert document["schema"] == "seamline.components/1"
    fields = {"kind", "name", "distribution", "version", "contract", "status", "reason", "file"}
    assert all(set(entry) == fields for entry in document["components"])
    assert {e["kind"] for e in document["components"]} == {"attention"}
    native = next(e for e in document["components"] if e["name"] == "native")
    assert (native["distribution"], native["status"]) == ("seamline-components", "ok")
    assert piped("components", "--format", "yaml").returncode == 2


def test_components_of_a_distribution_not_installed_is_an_error_naming_those_that_are() -> None:
    """An empty table with exit 0 read as "it registers nothing" for a misspelt name."""
    done = piped("components", "--distribution", "seamline-componets")
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.startswith(
        "error: --distribution seamline-componets: no installed component comes from it; "
        "the distributions that register components: "
    )
    assert "seamline-components" in done.stderr
    only = piped("components", "--distribution", "seamline-cpu-flash", "--format", "json")
    assert {e["distribution"] for e in json.loads(only.stdout)["components"]} == {
        "seamline-cpu-flash"
    }
