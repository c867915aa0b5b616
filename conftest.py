"""The docs are tests, and the suite runs on two workers.

pytest collects README.md's and docs/*.md's console blocks, and the Python blocks of the
pages that teach the library (README.md, docs/python.md): see tests/docs/collect.py and
tests/docs/python_blocks.py for what a block must do to pass, and how a page marks a
block that is illustrative only.

``make test`` runs ``pytest -n 2 --dist loadscope`` (pytest-xdist), and the scheduler below
decides what runs whole on one worker, in collection order:

- a module's tests (a test class's, for a class), so that a module-scoped fixture is made
  once, and a docs page's console blocks run in order in the one folder that its
  ``make run`` writes;
- the modules of a group in ``SHARED``: they share a session-scoped fixture that does real
  work, so that the work is done once, as in a run on one process
  (tests/test_worker_groups.py checks that the table names every such module).

Every process of the session shares one JAX compilation cache (tests/shared_compilations.py):
compiling is about a third of the suite's time (36 % of 3,260 worker-seconds, 2026-12-08),
and much of it would compile what another test did. A
docs page's ``make run`` that another page already ran gets a copy of that run's output
(tests/docs/shared_runs.py).

(pytest-xdist's own ``xdist_group`` marks do nothing under pytest 9.2: they rename node
ids through an attribute that pytest no longer reads.)
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

import pytest

from tests.docs import shared_runs
from tests.docs.collect import documentation_tests
from tests.shared_compilations import remove, share_compilations

pytest_collect_file = documentation_tests(Path(__file__).parent).pytest()
COMPILATIONS = pytest.StashKey[str | None]()
DOCS_RUNS = pytest.StashKey[str | None]()


def pytest_configure(config: pytest.Config) -> None:
    stops_as_a_terminal_sends_them()
    config.stash[COMPILATIONS] = share_compilations()
    config.stash[DOCS_RUNS] = shared_runs.share_runs()


def stops_as_a_terminal_sends_them() -> None:
    """Take SIGINT and SIGHUP as a terminal's session does, whatever started the suite.

    ``nohup make test`` ignores SIGHUP, and a shell without job control (``make test &``
    in a script, some CI runners) ignores SIGINT in what it starts in the background; an
    ignored signal stays ignored in every process started after, and Python then installs
    no handler for SIGINT. The tests that stop a run with either signal (14 of them) saw
    nothing arrive and failed, on a checkout that passes in a terminal. The suite tests
    how seamline takes a stop, so its processes start from the dispositions a terminal
    gives; a user's own ``nohup seamline run`` keeps SIGHUP ignored, as nohup means.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    hang_up = getattr(signal, "SIGHUP", None)  # not on Windows
    if hang_up is not None and signal.getsignal(hang_up) == signal.SIG_IGN:
        signal.signal(hang_up, signal.SIG_DFL)


def pytest_unconfigure(config: pytest.Config) -> None:
    remove(config.stash.get(COMPILATIONS, None))
    shared_runs.remove(config.stash.get(DOCS_RUNS, None))


SHARED: dict[str, tuple[str, ...]] = {
    "ray_cluster": (
        "tests/scaling/test_executor_conformance.py",
        "tests/scaling/test_path_spellings.py",
        "tests/scaling/test_ray_executor.py",
        "tests/scaling/test_ray_progress.py",
    ),
    "fault_outcomes": (
        "tests/core/test_monitor_hub.py",
        "tests/faults/test_call_faults.py",
        "tests/faults/test_component_faults.py",
        "tests/faults/test_kill_resume.py",
        "tests/faults/test_outcome_table.py",
    ),
}
"""A session fixture that starts a Ray cluster or runs scenarios, and the modules using it."""
GROUP_OF = {
    module: f"shared:{fixture}" for fixture, modules in SHARED.items() for module in modules
}


def worker_scope(nodeid: str) -> str:
    """What runs whole on one worker: the test's group, class or module."""
    path, _, rest = nodeid.partition("::")
    if path in GROUP_OF:
        return GROUP_OF[path]
    parts = rest.split("[", 1)[0].split("::")  # a parameter's id may hold "::"
    return f"{path}::{parts[0]}" if len(parts) > 1 else path


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """``--dist loadscope`` with the scopes of :func:`worker_scope`."""
    if config.getoption("dist") != "loadscope":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class Scheduler(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return worker_scope(nodeid)

    return Scheduler(config, log)
