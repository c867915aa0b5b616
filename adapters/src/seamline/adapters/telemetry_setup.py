"""Telemetry set-up at the edge: where a command-line run's spans and metrics go.

Core only emits through ``opentelemetry-api``; this module installs the SDK: a
tracer provider with span exporters and, when metric exporters are asked for, a
meter provider (so the instruments of ``metrics`` monitors are exported).

Exporters are chosen by the standard variables, and by the ``telemetry:`` section
of a pipeline file, whose fields win over the environment:

* ``traces`` / ``OTEL_TRACES_EXPORTER``: ``console``, ``otlp``, ``jsonl``, ``none``
  (a list; default none);
* ``traces_file`` / ``SEAMLINE_TRACES_FILE``: the jsonl exporter's file (default
  ``seamline-trace.jsonl``);
* ``metrics`` / ``OTEL_METRICS_EXPORTER``: ``console``, ``otlp``, ``none``;
* ``otlp_endpoint`` / ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a base URL; ``/v1/traces``
  and ``/v1/metrics`` are added to its path over HTTP, before its query), or the
  per-signal ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``_METRICS_ENDPOINT`` (used as
  given); an ``http://`` or ``https://`` URL with a host and a port, checked when an
  ``otlp`` exporter is chosen (:mod:`seamline.core.config.otlp`);
* ``otlp_protocol`` / ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`` (``_METRICS_``), then
  ``OTEL_EXPORTER_OTLP_PROTOCOL``: ``http/protobuf`` (default) or ``grpc``, checked
  when an ``otlp`` exporter is chosen;
* ``service_name`` / ``OTEL_SERVICE_NAME`` (default ``seamline``).

Unlike the OpenTelemetry default (``otlp``), nothing is exported unless asked
for; spans are still recorded, so trace ids reach the logs.

What a pipeline file may send to a receiver is decided before this module runs, when
the pipeline is resolved (:mod:`seamline.core.config.network`): a ``${VAR}`` in
``otlp_endpoint`` or ``service_name``, or the environment's
``OTEL_EXPORTER_OTLP_HEADERS`` beside a receiver the pipeline file names (the OTLP
exporters read those headers themselves and send them to any receiver), is refused
unless the user config lists the variable in ``trust.network_variables``.

One tracer provider serves the whole process (OpenTelemetry allows one global
provider); each :func:`configure_telemetry` swaps the exporters behind it, so
the service name is that of the first configuration in a process. A meter
provider, likewise, is installed once, by the first configuration that asks for
metric exporters.
"""

from __future__ import annotations

import atexit
import json
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any
from urllib.parse import unquote, urlsplit

from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import SERVICE_NAME, SERVICE_VERSION, Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    ConsoleSpanExporter,
    SpanExporter,
    SpanExportResult,
)

from seamline.adapters import traces_lock
from seamline.adapters.exporter_secrets import hide_endpoint
from seamline.contracts import UserError
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import cut
from seamline.contracts.versions import installed_version
from seamline.core import (
    TRACES_FILE,
    TelemetrySettings,
    otlp_endpoint_problem,
    otlp_signal_url,
    telemetry_applied,
    traces_file_problem,
    traces_file_status_problem,
    traces_file_unusable,
)

log = get_logger("seamline.adapters.telemetry")

TRACES_EXPORTERS = ("console", "otlp", "jsonl", "none")
METRICS_EXPORTERS = ("console", "otlp", "none")
PROTOCOLS = ("http/protobuf", "grpc")
ENDPOINT = "OTEL_EXPORTER_OTLP_ENDPOINT"
DEFAULT_TRACES_FILE = TelemetrySettings.default_traces_file
DEFAULT_SERVICE_NAME = "seamline"


@dataclass(frozen=True, slots=True)
class TelemetryConfig:
    """Where spans and metrics go, resolved from a ``telemetry:`` section and the environment."""

    traces: tuple[str, ...] = ()
    metrics: tuple[str, ...] = ()
    traces_file: Path = Path(DEFAULT_TRACES_FILE)
    traces_endpoint: str | None = None
    """The full URL the OTLP span exporter sends to (None: the exporter's default)."""
    metrics_endpoint: str | None = None
    traces_protocol: str = "http/protobuf"
    metrics_protocol: str = "http/protobuf"
    service_name: str = DEFAULT_SERVICE_NAME


def resolve(
    section: TelemetrySettings | None = None, environ: Mapping[str, str] | None = None
) -> TelemetryConfig:
    """The telemetry configuration: the pipeline file's values, else the environment's.

    The OTLP settings of a signal are checked only when its OTLP exporter is chosen: an
    ``OTEL_EXPORTER_OTLP_PROTOCOL`` the exporters cannot use (``http/json``) stopped every
    run, exporter or not, and an endpoint no exporter can reach stops one that uses it.
    """
    env = os.environ if environ is None else environ
    section = section or TelemetrySettings()
    traces = _exporters(section.traces, env, "OTEL_TRACES_EXPORTER", TRACES_EXPORTERS)
    metric_exporters = _exporters(section.metrics, env, "OTEL_METRICS_EXPORTER", METRICS_EXPORTERS)
    traces_endpoint, traces_protocol = _otlp(section, env, "TRACES", "otlp" in traces)
    metrics_endpoint, metrics_protocol = _otlp(section, env, "METRICS", "otlp" in metric_exporters)
    return TelemetryConfig(
        traces=traces,
        metrics=metric_exporters,
        traces_file=Path(section.traces_file_in(env)),  # the file validation checked
        traces_endpoint=traces_endpoint,
        metrics_endpoint=metrics_endpoint,
        traces_protocol=traces_protocol,
        metrics_protocol=metrics_protocol,
        service_name=section.service_name
        or env.get("OTEL_SERVICE_NAME")
        or _resource_attribute(env, SERVICE_NAME)
        or DEFAULT_SERVICE_NAME,
    )


def _resource_attribute(env: Mapping[str, str], attribute: str) -> str:
    """``attribute`` (``service.name``, ``service.version``) as ``OTEL_RESOURCE_ATTRIBUTES``
    sets it ("" if it does not).

    The specification lets ``OTEL_SERVICE_NAME`` override it, not a default: given as the
    provider's own attribute, "seamline" replaced it (``service.name=fromres`` arrived as
    ``seamline``). Read as the SDK's resource detector reads the variable.
    """
    named = ""
    for pair in env.get("OTEL_RESOURCE_ATTRIBUTES", "").split(","):
        key, equals, value = pair.partition("=")
        if equals and key.strip() == attribute:
            named = unquote(value.strip())  # the last one, as the detector's dict keeps
    return named


def resource(service_name: str, environ: Mapping[str, str] | None = None) -> Resource:
    """The providers' resource: ``service.name``, and ``service.version`` (seamline's
    version) unless ``OTEL_RESOURCE_ATTRIBUTES`` gives one: a backend could not tell the
    spans of two seamline releases apart."""
    env = os.environ if environ is None else environ
    attributes = {SERVICE_NAME: service_name}
    version = installed_version("seamline-adapters", missing="")
    if version and not _resource_attribute(env, SERVICE_VERSION):
        attributes[SERVICE_VERSION] = version
    return Resource.create(attributes)


def _exporters(
    chosen: Sequence[str] | None, env: Mapping[str, str], variable: str, allowed: Sequence[str]
) -> tuple[str, ...]:
    if chosen is None:
        names = [n.strip() for n in env.get(variable, "").split(",") if n.strip()]
        unknown = [n for n in names if n not in allowed]
        if unknown:
            raise UserError(
                f"{variable}={env[variable]!r}: unknown exporter {unknown[0]!r}; "
                f"choose from {', '.join(allowed)} (comma-separated)"
                + (PROMETHEUS if unknown[0] == "prometheus" else "")
            )
        chosen = names
    return tuple(dict.fromkeys(n for n in chosen if n != "none"))


PROMETHEUS = (
    ". Prometheus needs no exporter: seamline serve's metrics are scraped from its "
    "GET /metrics; a run's are exported with otlp or console"
)
"""Said to ``OTEL_METRICS_EXPORTER=prometheus``: the SDK's name for a scrape endpoint, which
seamline serve already is; "unknown exporter" alone sent the user looking for one."""

OTLP_ENDPOINT_FIELD = "telemetry.otlp_endpoint"


def _otlp(
    section: TelemetrySettings, env: Mapping[str, str], signal: str, used: bool
) -> tuple[str | None, str]:
    """One signal's OTLP endpoint (its full URL, None for the exporter's default) and
    protocol, both checked if ``used`` (its OTLP exporter is chosen): exit code 2 naming
    the setting, before the run, rather than a run that loses every span."""
    protocol = _protocol(section, env, signal, used)
    given = _given_endpoint(section, env, signal)
    if given is None:
        return None, protocol
    where, url, base = given
    bare = protocol == "grpc" and where != OTLP_ENDPOINT_FIELD
    problem = otlp_endpoint_problem(url, bare_host_port=bare)
    if problem is not None:
        if used:
            raise UserError(f"{where} {problem}")
        return None, protocol  # no exporter sends to it
    if base and protocol != "grpc":  # a base URL gets /v1/<signal> over HTTP
        return otlp_signal_url(url, signal.lower()), protocol
    return url, protocol


def _given_endpoint(
    section: TelemetrySettings, env: Mapping[str, str], signal: str
) -> tuple[str, str, bool] | None:
    """Where one signal's endpoint is set, its value, and whether it is a base URL; None
    when nothing sets it."""
    if section.otlp_endpoint is not None:
        return OTLP_ENDPOINT_FIELD, section.otlp_endpoint, True
    for variable, base in ((f"OTEL_EXPORTER_OTLP_{signal}_ENDPOINT", False), (ENDPOINT, True)):
        value = env.get(variable)
        if value:  # a per-signal variable is used as given, as the specification says
            return variable, value, base
    return None


def _protocol(section: TelemetrySettings, env: Mapping[str, str], signal: str, used: bool) -> str:
    """The signal's protocol; an unsupported one is refused when ``used``, else left."""
    if section.otlp_protocol is not None:
        return section.otlp_protocol
    for variable in (f"OTEL_EXPORTER_OTLP_{signal}_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"):
        value = env.get(variable)
        if value:
            if used and value not in PROTOCOLS:
                raise UserError(_unsupported_protocol(variable, value))
            return value
    return "http/protobuf"


def _unsupported_protocol(variable: str, value: str) -> str:
    if value == "http/json":  # valid in the specification: say why it is not taken here
        return (
            f"{variable}=http/json is not supported: the OpenTelemetry Python exporters "
            f"seamline uses send OTLP as protobuf only; set {variable} to http/protobuf "
            "or grpc, or unset it"
        )
    return f"{variable}={value!r} is not supported: use {' or '.join(PROTOCOLS)}"


def _warn_grpc_tls(
    config: TelemetryConfig, section: TelemetrySettings | None, env: Mapping[str, str]
) -> None:
    """One warning per signal whose gRPC exporter will use TLS for a bare ``HOST:PORT``.

    The gRPC exporter connects with TLS unless its endpoint says ``http://`` or
    ``OTEL_EXPORTER_OTLP_[SIGNAL_]INSECURE`` is set: ``127.0.0.1:4317`` against a plain
    receiver (a local collector's default) lost every span, the run still exited 0, and
    only gRPC's own log lines (a TLS handshake failure) hinted why. The SDK's choice is
    kept, and said: TLS will be used, and how to turn it off. Setting the variable
    either way, or a certificate (TLS meant), says nothing.
    """
    for signal, exporters, protocol in (
        ("TRACES", config.traces, config.traces_protocol),
        ("METRICS", config.metrics, config.metrics_protocol),
    ):
        if "otlp" not in exporters or protocol != "grpc":
            continue
        given = _given_endpoint(section or TelemetrySettings(), env, signal)
        if given is None or "://" in given[1]:
            continue
        chosen = (f"OTEL_EXPORTER_OTLP_{signal}_{name}" for name in ("INSECURE", "CERTIFICATE"))
        said = [*chosen, "OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_CERTIFICATE"]
        if any(env.get(variable) for variable in said):
            continue
        log.warning(
            f"{given[0]} has no scheme, so the OTLP gRPC exporter of {signal.lower()} "
            "connects with TLS: a receiver without TLS gets nothing. For a plain receiver "
            f"set OTEL_EXPORTER_OTLP_INSECURE=true (or give http://HOST:PORT in {given[0]}); "
            "to keep TLS and silence this, set OTEL_EXPORTER_OTLP_INSECURE=false",
            variable=given[0],
        )


def _warn_sdk_disabled(config: TelemetryConfig, env: Mapping[str, str]) -> None:
    """One warning when ``OTEL_SDK_DISABLED=true`` and exporters are asked for.

    The variable is OpenTelemetry's kill switch, honoured by the SDK's providers: no span
    or metric is recorded at all. It beats even a pipeline file's ``telemetry:`` section,
    so a ``traces_file`` it named was left empty, and the logs without trace ids, without
    a word.
    """
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() != "true":
        return
    asked = [*config.traces, *config.metrics]
    if asked:
        file = f" ({config.traces_file} stays empty)" if "jsonl" in config.traces else ""
        log.warning(
            "OTEL_SDK_DISABLED=true turns OpenTelemetry off: no span or metric is recorded, "
            f"so the exporters asked for export nothing{file} and log lines carry no "
            "trace ids; unset it to export",
            asked=asked,
        )


def _warn_logs_exporter(env: Mapping[str, str]) -> None:
    """One warning when ``OTEL_LOGS_EXPORTER`` asks for an exporter: none is made.

    seamline's logs go to standard error only; ``OTEL_LOGS_EXPORTER=otlp`` was ignored
    without a word (an unknown ``OTEL_TRACES_EXPORTER`` exits with code 2), so a user
    waited for logs in a collector that never came. ``none`` asks for nothing.
    """
    value = env.get("OTEL_LOGS_EXPORTER", "")
    names = [name.strip() for name in value.split(",") if name.strip()]
    if any(name != "none" for name in names):
        log.warning(
            "OTEL_LOGS_EXPORTER is set, but seamline exports no logs: they are written to "
            "standard error (JSON lines when it is not a terminal; --log-format); collect "
            "them from there, or unset OTEL_LOGS_EXPORTER",
            OTEL_LOGS_EXPORTER=cut(value, 80),
        )


# -- exporters -------------------------------------------------------------------------------


class JsonlSpanExporter(SpanExporter):
    """Writes each finished span as one JSON object per line (``seamline trace summarize``).

    Fields: ``name``, ``trace_id``, ``span_id``, ``parent_span_id`` (null for a root),
    ``start_ns``, ``end_ns`` (Unix epoch nanoseconds), ``attributes``, ``events``
    (``name``, ``time_ns``, ``attributes``), ``status`` (``code``: UNSET, OK or ERROR,
    ``description``) and ``service``. The file is truncated when the exporter is made,
    unless ``append`` (a worker process adding its spans to its driver's file), and
    written in append mode either way, so several processes can share one file: each
    export is one write at the end of the file.
    """

    def __init__(self, path: str | os.PathLike[str], *, append: bool = False) -> None:
        self.path = Path(path)
        self._file: IO[str] | None = open_traces_file(self.path, append=append)
        self._lock = threading.Lock()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans)
        with self._lock:
            if self._file is None:
                return SpanExportResult.FAILURE
            self._file.write(lines)
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def open_traces_file(path: Path, *, append: bool = False) -> IO[str]:
    """``path`` opened to append spans to (emptied first unless ``append``), or a
    ``UserError``, raised before the run starts: a name that is a directory, a FIFO (whose
    opening would wait for a reader forever), a device or a symbolic link is refused, and
    so is a file that cannot be opened. The file is opened without following a link
    (``O_NOFOLLOW``) nor waiting (``O_NONBLOCK``), and checked on the open descriptor, so
    what is written to is what was checked. A file with other names (hard links) is
    refused too: a name compared with the run's inputs says nothing of the file's others.
    """
    problem = traces_file_problem(path)  # what validation asked too
    if problem is not None:
        raise UserError(problem)
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    flags |= getattr(os, "O_CLOEXEC", 0)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, flags, 0o666)
    except OSError as err:  # ELOOP: a link planted since the check; ENXIO: a FIFO; EACCES...
        raise _unusable(path, err) from None
    try:
        problem = traces_file_status_problem(path, os.fstat(fd))
        if problem is not None:
            raise UserError(problem)
        if hasattr(os, "set_blocking"):
            os.set_blocking(fd, True)
        if not append:  # the run's own file: held while it runs, then emptied
            traces_lock.hold(path, fd, TRACES_FILE)
            os.ftruncate(fd, 0)
        return os.fdopen(fd, "a", encoding="utf-8")
    except BaseException:
        os.close(fd)
        raise


def _unusable(path: Path, err: OSError) -> UserError:
    return UserError(traces_file_unusable(path, err))


def span_record(span: ReadableSpan) -> dict[str, Any]:
    """One span as the jsonl exporter writes it."""
    context = span.get_span_context()
    parent = span.parent
    return {
        "name": span.name,
        "trace_id": format(context.trace_id, "032x") if context else None,
        "span_id": format(context.span_id, "016x") if context else None,
        "parent_span_id": format(parent.span_id, "016x") if parent else None,
        "start_ns": span.start_time,
        "end_ns": span.end_time,
        "attributes": dict(span.attributes or {}),
        "events": [
            {"name": e.name, "time_ns": e.timestamp, "attributes": dict(e.attributes or {})}
            for e in span.events
        ],
        "links": [
            {
                "trace_id": format(link.context.trace_id, "032x"),
                "span_id": format(link.context.span_id, "016x"),
                "attributes": dict(link.attributes or {}),
            }
            for link in span.links
        ],
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "service": span.resource.attributes.get(SERVICE_NAME),
    }


def span_exporters(config: TelemetryConfig, *, append: bool = False) -> list[SpanExporter]:
    """One exporter per name in ``config.traces`` (``append``: keep what the file holds)."""
    exporters: list[SpanExporter] = []
    for name in config.traces:
        if name == "console":  # stdout is the command's (--format json, search results)
            exporters.append(ConsoleSpanExporter(out=sys.stderr, formatter=_one_line_span))
        elif name == "jsonl":
            exporters.append(JsonlSpanExporter(config.traces_file, append=append))
        elif name == "otlp":
            if config.traces_protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
                    OTLPSpanExporter as GrpcSpanExporter,
                )

                exporters.append(GrpcSpanExporter(endpoint=config.traces_endpoint))
            else:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter as HttpSpanExporter,
                )

                exporters.append(HttpSpanExporter(endpoint=config.traces_endpoint))
    return exporters


def _one_line_span(span: ReadableSpan) -> str:
    """A span as one JSON line: the SDK's default, indented over some 40 lines, broke the
    JSON lines of stderr (its log lines, when piped) for a log shipper reading them."""
    return str(span.to_json(indent=None)) + "\n"


def _one_line_metrics(data: MetricsData) -> str:
    """An export of metrics as one JSON line, as :func:`_one_line_span` for spans."""
    return data.to_json(indent=None) + "\n"


def metric_exporters(config: TelemetryConfig) -> list[MetricExporter]:
    """One exporter per name in ``config.metrics``."""
    exporters: list[MetricExporter] = []
    for name in config.metrics:
        if name == "console":
            exporters.append(ConsoleMetricExporter(out=sys.stderr, formatter=_one_line_metrics))
        elif name == "otlp":
            if config.metrics_protocol == "grpc":
                from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
                    OTLPMetricExporter as GrpcMetricExporter,
                )

                exporters.append(GrpcMetricExporter(endpoint=config.metrics_endpoint))
            else:
                from opentelemetry.exporter.otlp.proto.http.metric_exporter import (
                    OTLPMetricExporter as HttpMetricExporter,
                )

                exporters.append(HttpMetricExporter(endpoint=config.metrics_endpoint))
    return exporters


# -- providers -------------------------------------------------------------------------------


class _Exporting(SpanProcessor):
    """The span processors of the current configuration, swappable behind one provider."""

    def __init__(self) -> None:
        self.processors: tuple[SpanProcessor, ...] = ()

    def replace(self, processors: Sequence[SpanProcessor]) -> None:
        old, self.processors = self.processors, tuple(processors)
        for processor in old:
            processor.shutdown()  # flushes what it holds

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        for processor in self.processors:
            processor.on_start(span, parent_context)

    def on_end(self, span: ReadableSpan) -> None:
        for processor in self.processors:
            processor.on_end(span)

    def shutdown(self) -> None:
        self.replace(())

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return all(p.force_flush(timeout_millis) for p in self.processors)


_exporting = _Exporting()
_attached_to: set[int] = set()
_meter_provider: MeterProvider | None = None
_meters_closed = False
"""The meter provider's shutdown has begun: the process's metrics are exported once."""


def tracer_provider(service_name: str = DEFAULT_SERVICE_NAME) -> TracerProvider:
    """The process's SDK tracer provider, installed on first use, with the exporters attached."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        provider = TracerProvider(resource=resource(service_name))
        trace.set_tracer_provider(provider)
        provider = trace.get_tracer_provider()
        assert isinstance(provider, TracerProvider)
    if id(provider) not in _attached_to:
        provider.add_span_processor(_exporting)
        _attached_to.add(id(provider))
    return provider


def configure_telemetry(
    section: TelemetrySettings | None = None,
    environ: Mapping[str, str] | None = None,
    *,
    worker: bool = False,
    no_metrics: str | None = None,
) -> TelemetryConfig:
    """Install the providers (once) and this configuration's exporters (replacing any before).

    ``worker``: this process runs shards for a driver elsewhere (an executor's worker),
    so a jsonl trace file is appended to, not started afresh.
    ``no_metrics``: the command records no OpenTelemetry metrics, and what to do instead;
    said once as a warning when a metric exporter is asked for (it exported nothing,
    without a word).
    """
    global _meter_provider, _receivers
    config = resolve(section, environ)
    telemetry_applied(section)  # read here: Pipeline.run need not warn that it went unread
    if section is not None and section.otlp_endpoint:  # the environment's are hidden already
        hide_endpoint(section.otlp_endpoint, OTLP_ENDPOINT_FIELD)
    if not worker:  # its driver said so already
        env = os.environ if environ is None else environ
        _warn_grpc_tls(config, section, env)
        _warn_logs_exporter(env)
        _warn_sdk_disabled(config, env)
        if config.metrics and no_metrics:
            log.warning(f"no metrics to export: {no_metrics}", asked=list(config.metrics))
    tracer_provider(config.service_name)
    _exporting.replace([BatchSpanProcessor(e) for e in span_exporters(config, append=worker)])
    _receivers = _receivers_of(config)
    if config.metrics:
        if _meter_provider is None:
            readers: list[MetricReader] = [
                PeriodicExportingMetricReader(e) for e in metric_exporters(config)
            ]
            _meter_provider = MeterProvider(
                metric_readers=readers,
                resource=resource(config.service_name, environ),
                shutdown_on_exit=False,  # shut down by shutdown_telemetry, or _close_meters
            )
            metrics.set_meter_provider(_meter_provider)
            atexit.register(_close_meters)
        else:
            log.warning(
                "metric exporters are set once per process; keeping the first",
                asked=list(config.metrics),
            )
    return config


def flush_telemetry() -> None:
    """Export every span finished so far (a worker does, before its driver may end it)."""
    _exporting.force_flush()


def shutdown_telemetry() -> None:
    """Flush and stop this configuration's exporters (before the process exits).

    The meter provider is shut down here, once, by the command: with the SDK's own
    ``atexit`` handler, the metrics were exported here and again at exit (10 s more each
    for a receiver that does not answer), and a Ctrl-C in the second export was a
    traceback ("Exception ignored in atexit callback"), exit code 0; a stop here is told
    by the command's block, like any other.
    """
    global _meters_closed
    owned, _meters_closed = _meters_closed, True  # stopped here or not, never again at exit
    said = threading.Timer(SLOW_EXIT_S, _say_sending, (_receivers,))
    said.daemon = True
    if _receivers:
        said.start()
    try:
        _exporting.replace(())
        traces_lock.release_all()
        if _meter_provider is not None and not owned:
            _shutdown_meters(_meter_provider)
    finally:
        said.cancel()


SLOW_EXIT_S = 2.0
"""How long the last export may take before one line says what the command waits for."""

_receivers: tuple[str, ...] = ()
"""The OTLP receivers of the current configuration, as ``scheme://host:port``."""


def _say_sending(receivers: tuple[str, ...]) -> None:
    """One line when the last export is slow: a collector that does not answer held the
    command up to a minute after its work, with nothing said until the SDK's own errors."""
    log.warning(
        f"sending telemetry to {', '.join(receivers)}: waiting for the collector (each "
        "export up to OTEL_EXPORTER_OTLP_TIMEOUT, 10 s by default; at most about 60 s)"
    )


def _receivers_of(config: TelemetryConfig) -> tuple[str, ...]:
    """Where ``config``'s OTLP exporters send, without a path, query or credentials."""
    urls = []
    if "otlp" in config.traces:
        urls.append(config.traces_endpoint or "http://localhost:4318")
    if "otlp" in config.metrics:
        urls.append(config.metrics_endpoint or "http://localhost:4318")
    found = []
    for url in urls:
        parts = urlsplit(url if "://" in url else f"http://{url}")
        found.append(
            f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
        )
    return tuple(dict.fromkeys(found))


def _close_meters() -> None:
    """At exit, for a process that never called :func:`shutdown_telemetry` (an executor's
    worker, a program using the API): export the metrics once, as the SDK would have."""
    global _meters_closed
    if _meter_provider is not None and not _meters_closed:
        _meters_closed = True
        _shutdown_meters(_meter_provider)


def _shutdown_meters(provider: MeterProvider) -> None:
    """The final export; a reader that fails is one warning, not the command's failure."""
    try:
        provider.shutdown()
    except Exception as err:  # the SDK raises a bare Exception naming each failed reader
        log.warning("metrics were not all exported", error=cut(str(err)))
