"""Each import-linter contract says the rule and how to keep it, where lint-imports prints it.

lint-imports prints a broken contract's name above the import chains that break it:
"core imports only contracts" told a contributor what was wrong, not what to do instead
(reach components through the registry). Every name is now ``RULE: FIX``.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def contracts() -> list[dict[str, object]]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = config["tool"]["importlinter"]["contracts"]
    assert isinstance(found, list)
    return found


def test_every_contract_name_says_the_rule_and_the_fix() -> None:
    names = [str(contract["name"]) for contract in contracts()]
    assert len(names) >= 10, names
    assert len(set(names)) == len(names), names
    without_fix = [
        name for name in names if not all(part.strip() for part in name.partition(": ")[::2])
    ]
    assert without_fix == [], (
        "name each contract 'RULE: FIX' in pyproject.toml [[tool.importlinter.contracts]], "
        "so that a broken one says what to do:\n" + "\n".join(without_fix)
    )


def test_core_s_contract_points_to_the_registry() -> None:
    (core,) = [c for c in contracts() if c.get("source_modules") == ["seamline.core"]]
    assert "through the registry" in str(core["name"])
