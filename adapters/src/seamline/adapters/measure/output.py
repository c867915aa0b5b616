"""The JSON a benchmark leaves behind: indented, UTF-8, its folder made if needed."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any


def write_json(path: Path, report: Mapping[str, Any]) -> Path:
    """``report`` as indented JSON at ``path`` (its folder made if needed); the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return path
