"""Shared fixtures: one registry discovery per test session (discovery imports every plugin)."""

from __future__ import annotations

import pytest

from seamline.core.registry import Registry


@pytest.fixture(scope="session")
def registry() -> Registry:
    return Registry.discover()
