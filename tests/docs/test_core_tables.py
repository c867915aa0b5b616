"""The docs' tables of the pipeline file's own sections name every field the schema has.

docs/pipelines.md describes the sections core reads (the top level, ``run``,
``telemetry``, ``trust``, the fields of ``attention`` and the user config's ``trust``) in
tables written by hand, and precision.md shows every ``precision`` setting in one YAML
block. :mod:`tests.docs.test_field_tables` ties the components' tables to their
``Config``; these were tied to nothing, so a field added to a section reached
``seamline schema`` and not the page a user reads. Here each table's first column must
be exactly the fields of the model that reads the section (by the name a file uses, an
alias such as ``with`` included). The defaults and meanings are prose here (``unset:
every installed distribution``) and are not compared.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml
from pydantic import BaseModel

from seamline.core.config.spec import (
    AttentionSpecConfig,
    PipelineSpec,
    PrecisionGate,
    PrecisionSettings,
    RunSettings,
    TelemetrySettings,
)
from seamline.core.config.user import UserTrustSettings
from seamline.core.trust.settings import TrustSettings
from tests.docs.workdir import ROOT

PIPELINES = ROOT / "docs" / "pipelines.md"
PRECISION = ROOT / "docs" / "precision.md"


@dataclass(frozen=True)
class Case:
    heading: str
    """The heading the table is under (the first line that is exactly this)."""
    nth: int
    """Which table of fields under it (0: the first), before the next heading of its level."""
    model: type[BaseModel]
    left_out: frozenset[str] = frozenset()
    """Fields the page describes elsewhere (``attention``'s ``use`` and ``with``)."""


CASES = {
    "top-level": Case("## Top-level fields", 0, PipelineSpec),
    "run": Case("### `run`", 0, RunSettings),
    "telemetry": Case("### `telemetry`", 0, TelemetrySettings),
    "trust": Case("### `trust`", 0, TrustSettings),
    "user-config-trust": Case("### `trust`", 1, UserTrustSettings),
    "attention": Case("## Attention", 0, AttentionSpecConfig, frozenset({"use", "with"})),
}


def file_names(model: type[BaseModel]) -> set[str]:
    """The keys a file uses for ``model``'s fields (an alias where there is one)."""
    return {info.alias or name for name, info in model.model_fields.items()}


def table_fields(page: Path, case: Case) -> tuple[int, list[str]]:
    """The 1-based line of the table's header, and the field each row names."""
    lines = page.read_text(encoding="utf-8").splitlines()
    start = lines.index(case.heading)
    level = case.heading.split(" ")[0]
    seen = -1
    fenced = False
    for number in range(start + 1, len(lines)):
        line = lines[number]
        if line.startswith("```"):
            fenced = not fenced
        if fenced:
            continue  # a `# comment` in a YAML block is not a heading
        if line.startswith("#") and len(line.split(" ")[0]) <= len(level):
            break
        if line.startswith("| field |"):
            seen += 1
            if seen == case.nth:
                rows = []
                for row in lines[number + 2 :]:
                    if not row.startswith("|"):
                        break
                    rows.append(row.split("|")[1].strip().strip("`"))
                return number + 1, rows
    raise AssertionError(f"{page.name}: no table {case.nth} of fields under {case.heading!r}")


@pytest.mark.parametrize("name", CASES)
def test_a_section_s_table_names_every_field_once(name: str) -> None:
    case = CASES[name]
    line, rows = table_fields(PIPELINES, case)
    wanted = file_names(case.model) - case.left_out
    where = f"docs/pipelines.md:{line}"
    assert len(rows) == len(set(rows)), f"{where}: a field has two rows: {sorted(rows)}"
    assert not wanted - set(rows), f"{where}: no row for {sorted(wanted - set(rows))}"
    assert not set(rows) - wanted, f"{where}: rows for no field: {sorted(set(rows) - wanted)}"


def test_the_precision_settings_block_shows_every_setting() -> None:
    text = PRECISION.read_text(encoding="utf-8")
    start = text.index("## The settings")
    block = text[text.index("```yaml\n", start) + len("```yaml\n") : text.index("```\n", start)]
    shown = yaml.safe_load(block)["precision"]
    assert set(shown) == file_names(PrecisionSettings), "docs/precision.md: ## The settings"
    assert set(shown["gate"]) == file_names(PrecisionGate), "docs/precision.md: gate"
    PrecisionSettings.model_validate(shown)  # and the block is a valid section
