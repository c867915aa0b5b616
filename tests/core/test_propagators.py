"""``OTEL_PROPAGATORS`` naming a propagator not installed is a ``UserError``, not an import crash.

``opentelemetry.propagate`` builds its propagators when it is imported and raises a bare
``ValueError`` for an unknown name: core imported it at the top of ``pipeline.py``, so
``OTEL_PROPAGATORS=tracecontext,baggage,b3`` (b3 not installed) made ``import
seamline.api`` raise and stopped ``seamline run`` with an 80-line traceback.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from seamline.core.propagators import propagators_problem

PROBE = """
import sys
import seamline.api, seamline.core.pipeline, seamline.core.job, seamline.core.worker
import seamline.adapters.serve.app
assert "opentelemetry.propagate" not in sys.modules, "imported before it is used"
from seamline.contracts import UserError
from seamline.core.propagators import inject
try:
    inject({})
except UserError as refused:
    print(refused)
"""


def test_importing_seamline_does_not_load_the_propagators() -> None:
    # A process of its own: once imported, the module no longer reads the variable.
    done = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PATH": "/usr/bin:/bin", "OTEL_PROPAGATORS": "tracecontext,baggage,b3"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("$OTEL_PROPAGATORS='tracecontext,baggage,b3': no propagator")
    assert "pip install opentelemetry-propagator-b3" in done.stdout


@pytest.mark.parametrize(
    ("value", "unknown"),
    [("bogus", "named 'bogus' is"), ("b3, jaeger", "none of 'b3', 'jaeger' is")],
)
def test_the_unknown_names_are_said(value: str, unknown: str) -> None:
    problem = propagators_problem({"OTEL_PROPAGATORS": value})
    assert problem is not None
    assert unknown in problem


def test_unset_or_installed_is_no_problem() -> None:
    assert propagators_problem({}) is None
    assert propagators_problem({"OTEL_PROPAGATORS": "tracecontext,baggage"}) is None
