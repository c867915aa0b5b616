"""The machine, the interpreter and the versions a benchmark measured on, as JSON.

A figure without its machine cannot be compared with the next run's, and the code
under a benchmark moves between runs; every report records both.
"""

from __future__ import annotations

import os
import platform
from typing import Any

from seamline.contracts.versions import installed_version


def host_info() -> dict[str, Any]:
    """The machine and the interpreter: platform, architecture, processor, CPUs, Python."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or platform.machine(),
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
    }


def versions(*distributions: str) -> dict[str, str]:
    """The installed version of each distribution named; those not installed are left out."""
    found = {name: installed_version(name, "") for name in distributions}
    return {name: version for name, version in found.items() if version}
