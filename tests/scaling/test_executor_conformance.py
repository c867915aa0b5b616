"""Both executors pass the executor conformance suite (``local`` also runs in test_first_party).

The ``ray`` executor's fixture comes from seamline-adapters' ``seamline.conformance``
entry point, as ``seamline check executor:ray`` finds it; here it joins the
session's cluster instead of starting one per check.
"""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

GROUP = "seamline.conformance"


def _fixture(name: str) -> type:
    (point,) = [p for p in entry_points(group=GROUP) if p.name == name]
    fixture: type = point.load()
    return fixture


@pytest.mark.usefixtures("ray_cluster")
class TestRayExecutor(_fixture("executor:ray")):  # type: ignore[misc]
    """The conformance suite over executor:ray, on the session's Ray cluster."""
