"""What a test's run published, read back as ``seamline search`` reads it.

Through the output's manifest and the reader of the sink it names (sink contract 1.4),
the sink found in the registry by that name exactly as search finds it
(:func:`seamline.adapters.search.sink_named`): the tests keep no list of sink kinds
either, and a sink whose reader is wrong fails them as it would fail search.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from seamline.adapters.search import sink_named
from seamline.contracts import OutputRecord, Sink, readback
from seamline.core.config.user import user_trust
from seamline.core.registry import Registry


@cache
def _registry() -> Registry:
    return Registry.discover(user_trust())


def _sink(name: str) -> type[Sink[Any]]:
    return sink_named(_registry(), name, "the manifest's outputs.sink")


def read_records(output: Path) -> list[OutputRecord] | None:
    """Every published record of ``output`` (its primary file or manifest), part by part;
    None while nothing is published there."""
    return readback.read_records(output, _sink)


def read_errors(output: Path) -> list[dict[str, Any]] | None:
    """Every published record of a document set aside; None while nothing is published."""
    return readback.read_errors(output, _sink)
