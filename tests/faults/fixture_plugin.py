"""The fault-injection components, for this process and for ``seamline run`` subprocesses.

The components live in an installed-looking distribution (``plugin/``) so that
subprocesses discover them from ``PYTHONPATH`` and every message names their
distribution. In this process the module is imported once, and a registry is built
from it and the toy components (as discovery would build it), without leaving the
plugin on ``sys.path`` for other tests' discovery. Plain functions, not fixtures:
the scenarios of the reliability tables run them outside pytest too.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import toy_registry

PLUGIN = Path(__file__).parent / "plugin"
SCALE_PLUGIN = Path(__file__).parents[1] / "scaling" / "plugin"
DISTRIBUTION = ("seamline-fixture-faults", "0.1.0")


def fault_environment(**extra: str) -> dict[str, str]:
    """This environment, with the fault and scaling fixtures importable by a subprocess."""
    env = dict(os.environ)
    paths = (str(PLUGIN), str(SCALE_PLUGIN), env.get("PYTHONPATH"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in paths if p)
    env.update(extra)
    return env


@functools.cache
def faults_module() -> ModuleType:
    """The fixture module, imported from ``plugin/``."""
    sys.path.insert(0, str(PLUGIN))
    try:
        return importlib.import_module("seamline_fixture_faults")
    finally:
        sys.path.remove(str(PLUGIN))


def info(cls: type[Any]) -> ComponentInfo:
    """``cls`` registered as discovery would register it from the fixture distribution."""
    target = f"{cls.__module__}:{cls.__name__}"
    return ComponentInfo(
        cls.kind, cls.name, target, *DISTRIBUTION, "ok", "", cls, cls.contract_version
    )


def fault_registry() -> Registry:
    """The toy components and the fault-injection ones, as discovery would register them."""
    faults = faults_module()
    classes = [
        faults.RaisingAttention,
        faults.NanAttention,
        faults.WrongShapeAttention,
        faults.FaultLoader,
        faults.FaultSink,
    ]
    return Registry([*toy_registry().entries(), *map(info, classes)])
