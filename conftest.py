"""The docs are tests, and the suite runs on two workers.

pytest collects README.md's and docs/*.md's console blocks: see tests/docs/collect.py for
what a block must do to pass, and how a page marks a block that is illustrative only.

``make test`` runs ``pytest -n 2 --dist loadgroup`` (pytest-xdist). Each test is put in
an ``xdist_group`` here, so that a group runs whole on one worker, in collection order:

- a module's tests (a test class's, for a class) are one group, so that a module-scoped
  fixture is made once, and a page's console blocks run in order in the one folder that
  its ``make run`` writes;
- the modules that share a session-scoped fixture doing real work (``SHARED_WORK``) are
  one group, so that the work is done once, as in a run on one process.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.docs.collect import documentation_tests

pytest_collect_file = documentation_tests(Path(__file__).parent).pytest()

SHARED_WORK = frozenset({"ray_cluster", "fault_outcomes", "hostile_pipelines", "tampered_inputs"})
"""Session-scoped fixtures that start a Ray cluster or run scenarios: one worker each."""


def _scope(item: pytest.Item) -> str:
    """The module of a test (``path``), or its class (``path::Class``)."""
    path, _, rest = item.nodeid.partition("::")
    parts = rest.split("::")
    return f"{path}::{parts[0]}" if len(parts) > 1 else path


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the marks into node ids
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not config.pluginmanager.hasplugin("xdist"):
        return
    # Union-find over scopes and the SHARED_WORK fixtures their tests use.
    parent: dict[str, str] = {}

    def root(name: str) -> str:
        while parent.setdefault(name, name) != name:
            name = parent[name]
        return name

    for item in items:
        for fixture in SHARED_WORK.intersection(getattr(item, "fixturenames", ())):
            parent[root(_scope(item))] = root(f"shared-{fixture}")
    for item in items:
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(root(_scope(item))))
