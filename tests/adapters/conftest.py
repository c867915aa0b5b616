"""Fixtures the server's test modules share."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from seamline.core.config.user import user_trust
from seamline.core.registry import Registry
from tests.adapters.serving import PLUGIN


@pytest.fixture(scope="module")
def tiny_registry() -> Iterator[Registry]:
    """The registry with the tiny test model's plugin on the path (once per module)."""
    sys.path.insert(0, str(PLUGIN))
    try:
        yield Registry.discover(user_trust())
    finally:
        sys.path.remove(str(PLUGIN))
