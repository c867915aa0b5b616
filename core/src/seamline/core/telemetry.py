"""The core's handles on tracing and logging: API only, never an SDK.

Like any well-behaved library, core emits through ``opentelemetry-api`` and
structlog (``seamline.contracts.logs.get_logger``, which never configures it); the
application (the CLI in ``seamline.adapters``, or whoever embeds seamline) decides
where spans and log lines go.

Spans and their attributes
==========================

Every span is started by the tracer named ``seamline.core``. A run is one trace:

* ``seamline.run`` (root): ``seamline.pipeline``, ``seamline.run_id``, and
  ``seamline.executor`` for a run placed by an executor (``Pipeline.run``), or
  ``seamline.platform``, ``seamline.device_kind`` for a bare orchestrator run;
* ``seamline.shard`` (one per shard of an executor's run, wherever it ran, child of
  the driver's root through the task's trace context): ``seamline.shard.index``,
  ``seamline.shard.count``, ``seamline.worker`` (``host:pid``), platform and device
  kind; the seam spans below are its children;
* seam calls: ``seamline.loader.read`` (one per chunk of up to ``batch_size`` loaded
  items, with ``seamline.loader.items``), ``seamline.model.prepare`` (one per
  document, ``seamline.document.id``), ``seamline.model.apply`` (one per batch; it
  ends when the device result is on the host), ``seamline.sink.write`` (one per
  batch, ``seamline.records``) and ``seamline.sink.commit`` (``seamline.cursor``);
* the executor's and the sink's run-level calls, seam calls too:
  ``seamline.executor.execute`` and ``.close`` (children of the driver's root), the
  sink's ``staged_run`` and ``begin_parts`` (inside ``execute``, where the executor
  plans), ``part`` and ``finished`` (in the worker, children of the root through the
  task's trace context) and ``publish_parts``; with ``seamline.run_id``, and
  ``seamline.shard.count`` (``.index`` for a part's);
* the orchestrator's own steps: ``seamline.model.load``, ``seamline.plan``,
  ``seamline.verify``, ``seamline.compile`` and ``seamline.shadow``.

The loader and ``prepare`` spans are started in the producer thread
(``thread.name`` = ``seamline-host``); their parent is still the run.

One attribute scheme, the constants below:

============================================  ==================================================
attribute                                     value
============================================  ==================================================
``seamline.component.kind``                   ``loader``, ``model``, ``attention``, ``sink``, ...
``seamline.component.name``                   the registered name (``use:``)
``seamline.component.version``                version of the distribution that registers it
``seamline.component.distribution``           that distribution's name
``seamline.component.contract_version``       the contract version the component declares
``seamline.batch.size`` / ``.length``         the batch shape (rows, padded length)
``seamline.dtype``                            the attention's dtype for the batch
``seamline.platform`` / ``.device_kind``      ``jax.devices()[0]``'s platform and device kind
``seamline.attention.name`` / ``.reason``     the attention serving the batch, and why it was chosen
============================================  ==================================================

Fallbacks, verifications, shadow comparisons and alerts are also *span events*
(``seamline.fallback``, ``seamline.verified``, ``seamline.shadow_compared``,
``seamline.alert``) on the span current when they happen, with the monitor event's
fields as ``seamline.<field>`` attributes. An exception leaving a seam call is
recorded on its span (``record_exception``) and sets the status to ERROR, once
(:func:`owned_span`, :func:`record_failure`).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import socket
from collections.abc import Mapping
from contextlib import AbstractContextManager
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Status, StatusCode
from opentelemetry.util.types import Attributes
from pydantic import BaseModel

from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import for_telemetry
from seamline.contracts.versions import installed_version

TRACER_NAME = "seamline.core"

COMPONENT_PREFIX = "seamline.component."
COMPONENT_KIND = "seamline.component.kind"
COMPONENT_NAME = "seamline.component.name"
COMPONENT_VERSION = "seamline.component.version"
COMPONENT_DISTRIBUTION = "seamline.component.distribution"
CONTRACT_VERSION = "seamline.component.contract_version"
BATCH_SIZE = "seamline.batch.size"
BATCH_LENGTH = "seamline.batch.length"
DTYPE = "seamline.dtype"
PLATFORM = "seamline.platform"
DEVICE_KIND = "seamline.device_kind"
ATTENTION_NAME = "seamline.attention.name"
ATTENTION_REASON = "seamline.attention.reason"
ATTENTION_REFUSED = "seamline.attention.refused"
SHARD_INDEX = "seamline.shard.index"
SHARD_COUNT = "seamline.shard.count"
EXECUTOR = "seamline.executor"
WORKER = "seamline.worker"
THREAD_NAME = "thread.name"  # OpenTelemetry semantic convention


def worker_name() -> str:
    """``host:pid`` of this process: the value of :data:`WORKER`, and how workers are named."""
    return f"{socket.gethostname()}:{os.getpid()}"


def event_name(event_type: type) -> str:
    """A monitor event's span event name: ``seamline.`` and its class's name in snake case
    (``AttentionChosen`` -> ``seamline.attention_chosen``), one rule for every event, as
    OpenTelemetry's semantic conventions name events."""
    return "seamline." + re.sub(r"(?<!^)(?=[A-Z])", "_", event_type.__name__).lower()


# Made once: a proxy until the application installs a tracer provider, then that
# provider's tracer. Asking the provider on every span would double a span's cost.
_TRACER = trace.get_tracer(TRACER_NAME, installed_version("seamline-core", missing="") or None)


def tracer() -> trace.Tracer:
    """The core's tracer; a no-op until the application installs a tracer provider."""
    return _TRACER


_applied: list[object] = []
"""The last pipeline ``telemetry`` section the application set its exporters up from."""


def telemetry_applied(section: object) -> None:
    """Say that the application set its exporters up from ``section`` (a pipeline's
    ``telemetry``): the ``seamline`` command does, before it runs the pipeline, so that
    ``Pipeline.run`` does not warn that the section went unread."""
    _applied[:] = [section]


def telemetry_unread(section: object, default: object) -> bool:
    """Whether ``section`` asks for something (it differs from ``default``, the section left
    out) that no application set up: core emits through ``opentelemetry-api`` only."""
    return section != default and not any(section == applied for applied in _applied)


def unread_telemetry_warning(
    pipeline: str, section: BaseModel, default: BaseModel, reader: str
) -> str | None:
    """The warning for a pipeline whose ``telemetry`` section ``reader`` (``Pipeline.run()``,
    ``Embedder.from_pipeline()``) does not read, or None where there is nothing to say.

    The ``seamline`` command sets the section's exporters up; a library never configures
    its application's telemetry, and a ``traces_file`` nobody writes was a silent loss.
    """
    if not telemetry_unread(section, default):
        return None
    asked = ", ".join(sorted(section.model_dump(exclude_defaults=True)))
    return (
        f"pipeline {pipeline!r}: its telemetry section ({asked}) is read by the seamline "
        f"command only; {reader} exports no spans or metrics itself. In an application, "
        "configure an OpenTelemetry TracerProvider (and MeterProvider) with the exporters "
        "you want: see docs/python.md#traces-and-metrics"
    )


_unread_told: set[str] = set()
"""The unread-telemetry warnings already said in this process."""


def warn_unread_telemetry(
    pipeline: str, section: BaseModel, default: BaseModel, reader: str
) -> None:
    """Log :func:`unread_telemetry_warning` once per process for each pipeline and reader.

    A notebook cell run again makes a new ``Pipeline`` (or ``Embedder``) from the same
    file: it was warned again at every run of the cell, as Python's own warnings are not
    (they are said once per place). The advice does not change between the runs.
    """
    warning = unread_telemetry_warning(pipeline, section, default, reader)
    if warning is not None and warning not in _unread_told:
        _unread_told.add(warning)
        get_logger("seamline.core").warning(warning)


def owned_span(
    name: str,
    *,
    context: Context | None = None,
    attributes: Attributes = None,
    start_time: int | None = None,
) -> AbstractContextManager[trace.Span]:
    """A current span whose failure its owner records, with :func:`record_failure`.

    OpenTelemetry's ``start_as_current_span`` records an ``Exception`` leaving it, but not
    a ``BaseException``: a Ctrl-C (``KeyboardInterrupt``) or ``SystemExit`` left the seam
    spans it went through UNSET, with no event. An owner recording every failure itself on
    a default span recorded an ``Exception`` twice (a failed run's root had two identical
    ``exception`` events). This span records nothing on its own, so each is recorded once.
    """
    return tracer().start_as_current_span(
        name,
        context=context,
        attributes=attributes,
        start_time=start_time,
        record_exception=False,
        set_status_on_exception=False,
    )


def record_failure(span: trace.Span, error: BaseException) -> None:
    """``error`` leaves ``span``: an ``exception`` event, and the status ERROR."""
    span.record_exception(error, escaped=True)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))


IDENTITY_KEYS = frozenset({"kind", "name", "contract_version"})
"""The keys of ``describe()`` that are the registry's names, never a setting's value."""


def component_attributes(
    described: Mapping[str, object],
    *,
    distribution: str | None = None,
    version: str | None = None,
    hidden: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The span attributes that identify a component (one documented scheme).

    ``described`` is the component's own ``describe()``: every key becomes
    ``seamline.component.<key>`` (``kind``, ``name`` and ``contract_version`` always,
    and whatever else the component says about itself, such as a model's weights).
    ``distribution`` and ``version`` come from the registry, which found the entry
    point, and win over anything the component claims.

    ``hidden`` maps values a span may not carry (a setting filled from an environment
    variable the user does not let leave the machine) to what it shows instead
    (``${NAME}``; :func:`seamline.core.config.redact.span_hidden`). They are replaced
    wherever they occur in what the component describes, except in its identity
    (:data:`IDENTITY_KEYS`), which a replaced piece would garble (``DOCPREFIX=bert``).
    """
    attributes = {
        f"{COMPONENT_PREFIX}{key}": str(value)
        if key in IDENTITY_KEYS
        else _hidden_in(str(value), hidden)
        for key, value in described.items()
    }
    if distribution is not None:
        attributes[COMPONENT_DISTRIBUTION] = distribution
    if version is not None:
        attributes[COMPONENT_VERSION] = version
    return attributes


def _hidden_in(text: str, hidden: Mapping[str, str] | None) -> str:
    """``text`` with each of ``hidden``'s values replaced, the longest first."""
    if not hidden:
        return text
    found = "|".join(re.escape(value) for value in sorted(hidden, key=len, reverse=True))
    return re.sub(found, lambda match: hidden[match[0]], text)


EVENT_TEXT_CHARS = 1000
"""How much of a text a span event carries (a reason, an id, a mapping as JSON)."""


def span_event(event: Any) -> None:
    """Add a monitor event (a dataclass) as an event of the current span, if one records."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    attributes: dict[str, Any] = {}
    for f in dataclasses.fields(event):
        value = getattr(event, f.name)
        if isinstance(value, str):  # it may be the input's: a document id of a megabyte
            attributes[f"seamline.{f.name}"] = for_telemetry(value, EVENT_TEXT_CHARS)
        elif isinstance(value, bool | int | float):
            attributes[f"seamline.{f.name}"] = value
        elif value is not None:  # JSON, which a trace's reader can parse, not a Python repr
            shown = json.dumps(value, default=str, ensure_ascii=False, sort_keys=True)
            attributes[f"seamline.{f.name}"] = for_telemetry(shown, EVENT_TEXT_CHARS)
    span.add_event(event_name(type(event)), attributes)
