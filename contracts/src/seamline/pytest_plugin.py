"""The pytest plugin of seamline's conformance suite (entry point ``pytest11: seamline``).

Idle unless asked: installed with seamline-contracts, it only adds options, and it
imports nothing of seamline (so JAX) until one is used, because pytest loads it in
every session of an environment that has seamline. ``--seamline-record [DIR]``
writes a conformance record for every component a contract class tested in the
session (keeping records is the host's job, so this needs seamline-core
installed): only for a contract class whose every check ran; of a selection
(a node id, ``-k``, ``-m``, under xdist too) no record is written, and the
record already kept is left as it was.
``--seamline-max-examples N`` bounds each property-based check. It
lives outside ``seamline.contracts`` so that loading it does not import that
package.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_COLLECTOR_KEY = pytest.StashKey[object]()
_LINES_KEY = pytest.StashKey[list[str]]()
"""What the records written say, for the terminal summary."""
EXAMPLES_VARIABLE = "SEAMLINE_CONFORMANCE_EXAMPLES"  # read by seamline.contracts.testing


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("seamline", "seamline conformance suite")
    group.addoption(
        "--seamline-record",
        metavar="DIR",
        nargs="?",
        const="",
        default=None,
        help="write a conformance record per component tested, into DIR "
        "(default: $SEAMLINE_CONFORMANCE_DIR or the user data directory)",
    )
    group.addoption(
        "--seamline-max-examples",
        type=int,
        default=None,
        metavar="N",
        help="generated cases per property-based conformance check",
    )


def pytest_configure(config: pytest.Config) -> None:
    examples = config.getoption("--seamline-max-examples")
    if examples:
        os.environ[EXAMPLES_VARIABLE] = str(examples)
    if config.getoption("--seamline-record") is not None:
        from seamline.contracts.testing.results import Collector

        collector = Collector()
        config.stash[_COLLECTOR_KEY] = collector
        config.pluginmanager.register(collector, "seamline-conformance-collector")


def pytest_sessionfinish(session: pytest.Session) -> None:
    config = session.config
    collector = config.stash.get(_COLLECTOR_KEY, None)
    if collector is None or hasattr(config, "workerinput"):
        return  # a pytest-xdist worker ran a share of the suite: its controller records
    from seamline.contracts.testing.results import Collector

    assert isinstance(collector, Collector)
    said = config.stash[_LINES_KEY] = []
    try:  # the host keeps records: its registry knows which distribution made what
        from seamline.core.config.user import user_trust
        from seamline.core.registry import Registry
        from seamline.core.trust import attribute, save, store_directory, unattributed
    except ImportError as err:
        said.append(
            f"seamline: --seamline-record needs seamline-core installed ({err}); no record written"
        )
        session.exitstatus = pytest.ExitCode.USAGE_ERROR
        return
    option = config.getoption("--seamline-record")
    directory = Path(option) if option else store_directory()
    registry = Registry.discover(user_trust())  # what the user trusts: nothing else imported
    records, left_out = collector.records_of_whole_suites()
    for record in records:
        why_not = unattributed(record, registry)
        record = attribute(record, registry)
        path = save(record, directory)
        verdict = "passing" if record.passed else "FAILING"
        said.append(
            f"seamline: {verdict} conformance record for {record.kind}:{record.name} "
            f"({record.summary()}) -> {path}"
        )
        if why_not is not None:
            said.append(
                f"seamline: it is credited to no distribution, so it cannot earn trust "
                f"under require_conformance: {why_not}"
            )
    for component in left_out:  # a record of part of a suite proves nothing: none replaced
        said.append(
            f"seamline: no conformance record written for {component.kind}:{component.name} "
            f"(any record already there is left as it was): {component.why}"
        )


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """What ``--seamline-record`` wrote, on lines of its own: printed when the session
    finished, they followed the progress dots on their line (``[100%]seamline: ...``),
    as pytest's terminal ends that line only after every plugin's sessionfinish. (pytest
    before 9 calls this hook only without ``--no-summary``.)"""
    for line in terminalreporter.config.stash.get(_LINES_KEY, []):
        terminalreporter.write_line(line)
