"""The propagators ``OTEL_PROPAGATORS`` names, checked before OpenTelemetry loads them.

``opentelemetry.propagate`` builds its propagators from ``OTEL_PROPAGATORS`` when it is
*imported*, and raises a bare ``ValueError`` for a name no installed package provides:
``OTEL_PROPAGATORS=tracecontext,baggage,b3`` (a cluster-wide default in many Kubernetes
deployments, the b3 package not installed here) stopped ``seamline run`` and ``seamline
serve`` with an 80-line traceback and exit code 1, and made ``import seamline.api``
raise. So core imports that module only here, in :func:`inject` and :func:`extract`, after
:func:`check_propagators` has compared the variable with the installed propagators (the
entry points OpenTelemetry looks them up in) and, for a name none provides, raised a
``UserError`` naming the variable, the unknown names, the installed ones and the fix.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, MutableMapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from seamline.contracts import UserError
from seamline.contracts.untrusted import cut

if TYPE_CHECKING:
    from opentelemetry.context import Context

VARIABLE = "OTEL_PROPAGATORS"
GROUP = "opentelemetry_propagator"
"""The entry-point group ``opentelemetry.propagate`` loads each named propagator from."""

_PACKAGES = {
    "b3": "opentelemetry-propagator-b3",
    "b3multi": "opentelemetry-propagator-b3",
    "jaeger": "opentelemetry-propagator-jaeger",
    "xray": "opentelemetry-propagator-aws-xray",
    "ottrace": "opentelemetry-propagator-ot-trace",
}
"""The package that provides each propagator the specification lists beside the defaults."""


def _unknown(configured: str, installed: set[str]) -> list[str]:
    """The names OpenTelemetry would not find, read as it reads them: comma-separated,
    stripped, and nothing after a ``none`` (which turns propagation off)."""
    unknown: list[str] = []
    for name in (part.strip() for part in configured.split(",")):
        if name.lower() == "none":
            break
        if name not in installed:
            unknown.append(name)
    return unknown


def propagators_problem(environ: Mapping[str, str]) -> str | None:
    """What is wrong with ``OTEL_PROPAGATORS`` (None: nothing), without importing
    ``opentelemetry.propagate``, which would raise on it."""
    configured = environ.get(VARIABLE)
    if not configured:
        return None  # OpenTelemetry's default, tracecontext,baggage
    installed = {point.name for point in entry_points(group=GROUP)}
    unknown = _unknown(configured, installed)
    if not unknown:
        return None
    names = ", ".join(repr(name) for name in unknown)
    which = f"no propagator named {names} is" if len(unknown) == 1 else f"none of {names} is"
    packages = [f"{name}: pip install {_PACKAGES[name]}" for name in unknown if name in _PACKAGES]
    them = "it" if len(packages) == 1 else "them"
    install = f"install {them} ({'; '.join(packages)})" if packages else "install the one it names"
    return (
        f"${VARIABLE}={cut(configured, 80)!r}: {which} installed (installed: "
        f"{', '.join(sorted(installed)) or 'none'}). Unset it ('unset {VARIABLE}') for "
        f"OpenTelemetry's default tracecontext,baggage, name installed ones only, or {install}"
    )


def check_propagators(environ: Mapping[str, str] | None = None) -> None:
    """Refuse (``UserError``) an ``OTEL_PROPAGATORS`` that names a propagator not installed.

    Once ``opentelemetry.propagate`` is imported its propagators are built, so the
    variable is no longer read: nothing to check then.
    """
    if "opentelemetry.propagate" in sys.modules:
        return
    problem = propagators_problem(os.environ if environ is None else environ)
    if problem is not None:
        raise UserError(problem)


def inject(carrier: MutableMapping[str, str]) -> None:
    """The current span's context written into ``carrier``, as ``propagate.inject`` does."""
    check_propagators()
    from opentelemetry import propagate

    propagate.inject(carrier)


def extract(carrier: Mapping[str, str]) -> Context:
    """The context ``carrier`` holds, as ``propagate.extract`` reads it."""
    check_propagators()
    from opentelemetry import propagate

    return propagate.extract(carrier)
