"""Runs one after another in one process leave nothing of an earlier run behind.

A notebook or a service runs pipelines in one process, many times. Each run with a
monitor used to leave its monitor hub's courier thread waiting for ever, holding the
run's monitors and its last event; the ``metrics`` monitor was kept by the gauges'
callbacks, one more each run. Here three runs with every first-party monitor must
leave the same seamline objects, threads and device arrays as one run did.
"""

from __future__ import annotations

import collections
import gc
import threading

import jax

from seamline.components.monitors.log import LogMonitor
from seamline.components.monitors.memory import MemoryMonitor
from seamline.components.monitors.metrics import MetricsMonitor
from seamline.core import Pipeline
from seamline.core.registry import ComponentInfo, Registry
from tests.core.toy import MemorySink, toy_registry

SPEC = {
    "pipeline": "again",
    "loader": {"use": "list", "with": {"texts": ["one", "two", "three"]}},
    "model": {"use": "toy"},
    "attention": {"use": "native"},
    "sink": {"use": "memory"},
    "monitors": [{"use": "log"}, {"use": "memory"}, {"use": "metrics"}],
}


def registry() -> Registry:
    monitors = [
        ComponentInfo(
            "monitor",
            c.name,
            f"{c.__module__}:{c.__qualname__}",
            "tests",
            "0",
            "ok",
            "",
            c,
            c.contract_version,
        )
        for c in (LogMonitor, MemoryMonitor, MetricsMonitor)
    ]
    return Registry([*toy_registry().entries(), *monitors])


def left_behind() -> tuple[collections.Counter[str], list[str], int]:
    """Seamline objects by type, the threads, and the device arrays alive now."""
    gc.collect()
    objects: collections.Counter[str] = collections.Counter()
    for item in gc.get_objects():
        module = type(item).__module__
        if isinstance(module, str) and module.startswith("seamline."):
            objects[f"{module}.{type(item).__qualname__}"] += 1
    threads = sorted(t.name for t in threading.enumerate())
    return objects, threads, len(jax.live_arrays())


def run_once() -> None:
    MemorySink.reset()
    Pipeline.from_dict(SPEC, registry=registry()).run()
    assert len(MemorySink.records) == 3


def test_three_runs_leave_what_one_left() -> None:
    run_once()
    objects, threads, arrays = left_behind()
    for _ in range(2):
        run_once()
    later_objects, later_threads, later_arrays = left_behind()
    grown = {name: n - objects[name] for name, n in later_objects.items() if n > objects[name]}
    assert grown == {}
    assert later_threads == threads
    assert later_arrays == arrays
