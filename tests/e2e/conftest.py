"""Fixtures of the end-to-end tests that run ``seamline`` in this process."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.fresh_logging import logging_as_in_a_fresh_process


@pytest.fixture
def fresh_logging() -> Iterator[None]:
    """``seamline run`` sets logging up for a command line: not for the next test."""
    with logging_as_in_a_fresh_process():
        yield
