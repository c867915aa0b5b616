"""Shared fixtures: one registry discovery per test session (discovery imports every plugin),
and one run of each scenario whose outcome a generated table of docs/reliability.md shows."""

from __future__ import annotations

import pytest

from seamline.core.config.user import user_trust
from seamline.core.registry import Registry
from tests.core.hostile_pipelines import HostilePipelines
from tests.faults.outcomes import FaultOutcomes
from tests.tampered_inputs import TamperedInputs


@pytest.fixture(scope="session")
def registry() -> Registry:
    return Registry.discover(user_trust())


@pytest.fixture(scope="session")
def hostile_pipelines(
    tmp_path_factory: pytest.TempPathFactory, registry: Registry
) -> HostilePipelines:
    """Each hostile pipeline file read once per session: its tests and its table share it."""
    return HostilePipelines(tmp_path_factory.mktemp("hostile-pipelines"), registry)


@pytest.fixture(scope="session")
def fault_outcomes(tmp_path_factory: pytest.TempPathFactory) -> FaultOutcomes:
    """Each injected-fault scenario run once per session: its tests and its table share it."""
    return FaultOutcomes(tmp_path_factory.mktemp("faults"))


@pytest.fixture(scope="session")
def tampered_inputs(tmp_path_factory: pytest.TempPathFactory) -> TamperedInputs:
    """Each tampered input attempted once per session, with relative paths from its own
    folder (as the table shows them): its tests and its table share it."""
    return TamperedInputs(tmp_path_factory.mktemp("tampered-inputs"))
