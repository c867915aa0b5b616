"""``seamline serve PIPELINE``: the pipeline's model over HTTP (see docs/serving.md).

Only typer and the CLI's helpers at import time: the server (uvicorn, JAX, the
components) is imported when the command runs.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.commands.run import LOG_FORMATS, LOG_LEVELS
from seamline.adapters.cli.errors import usage_error, user_errors
from seamline.adapters.cli.options import (
    CompileCache,
    PipelineArg,
    SetOption,
    compile_cache_on,
    offering,
    whole_number,
)
from seamline.adapters.otel_environment import check_otel_environment
from seamline.adapters.serve.extra import check_serve_installed, import_server
from seamline.adapters.serve.limits import MAX_PORT

if TYPE_CHECKING:
    from seamline.adapters.serve.limits import Limits

Host = Annotated[str, typer.Option("--host", help="The address to listen on.", metavar="ADDRESS")]
Port = Annotated[
    int,
    typer.Option(
        "--port",
        help="The port to listen on, 0 to 65535 (0: any free port, printed).",
        metavar="PORT",
        parser=whole_number("--port", "from 0 to 65535 (0: any free port)"),
    ),
]
MaxWaitMs = Annotated[
    float,
    typer.Option(
        "--max-wait-ms",
        help="How long a batch waits for more requests after the oldest arrived (0 to 1000 ms; "
        "0: never waits).",
        metavar="MS",
    ),
]
MaxInputs = Annotated[
    int,
    typer.Option(
        "--max-inputs",
        help="Texts in one request, at most.",
        metavar="N",
        parser=whole_number("--max-inputs"),
    ),
]
MaxInputChars = Annotated[
    int,
    typer.Option(
        "--max-input-chars",
        help="Characters in one text, at most.",
        metavar="N",
        parser=whole_number("--max-input-chars"),
    ),
]
MaxRequestBytes = Annotated[
    int,
    typer.Option(
        "--max-request-bytes",
        help="Bytes in one request body, at most.",
        metavar="BYTES",
        parser=whole_number("--max-request-bytes"),
    ),
]
MaxBodyBytesHeld = Annotated[
    int,
    typer.Option(
        "--max-body-bytes-held",
        help="Bytes of request bodies read and not yet parsed, across all requests, at most; "
        "past it: 429 (at least --max-request-bytes).",
        metavar="BYTES",
        parser=whole_number("--max-body-bytes-held"),
    ),
]
MaxQueueTexts = Annotated[
    int,
    typer.Option(
        "--max-queue-texts",
        help="Texts accepted and not yet answered, across all clients; past it: 429.",
        metavar="N",
        parser=whole_number("--max-queue-texts"),
    ),
]
MaxQueueChars = Annotated[
    int,
    typer.Option(
        "--max-queue-chars",
        help="Characters of those texts, at most; past it: 429.",
        metavar="N",
        parser=whole_number("--max-queue-chars"),
    ),
]
MaxQueueWait = Annotated[
    float | None,
    typer.Option(
        "--max-queue-wait",
        help="Seconds a new request may be expected to wait behind the texts queued, by the "
        "engine's measured pace; past it: 429 (above 0, at most 3600). Default: not bounded.",
        metavar="SECONDS",
        show_default=False,
    ),
]
MaxConnections = Annotated[
    int,
    typer.Option(
        "--max-connections",
        help="Connections and requests in progress at once (bodies being read included); "
        "past it: 503.",
        metavar="N",
        parser=whole_number("--max-connections"),
    ),
]
MaxConcurrentSearches = Annotated[
    int | None,
    typer.Option(
        "--max-concurrent-searches",
        help="/v1/search requests searched at once, each until its search ends (a client "
        "that leaves does not stop it); more wait their turn, and past eight waiting per "
        "place: 429. Default: twice the CPUs.",
        metavar="N",
        parser=whole_number("--max-concurrent-searches"),
        show_default=False,
    ),
]
HeaderTimeout = Annotated[
    float,
    typer.Option(
        "--header-timeout",
        help="Seconds a connection has to send a request's head, from its opening and "
        "from each answer; past it, it is closed (above 0, at most 3600).",
        metavar="SECONDS",
    ),
]
KeepAliveTimeout = Annotated[
    float,
    typer.Option(
        "--keep-alive-timeout",
        help="Seconds an idle connection is kept open after an answer, for its next "
        "request; set it above a load balancer's idle timeout (above 0, at most 3600).",
        metavar="SECONDS",
    ),
]
LongTextOption = Annotated[
    str,
    typer.Option(
        "--long-text",
        metavar="[truncate|mean]",
        autocompletion=offering("truncate", "mean"),
        help="Texts longer than the model's window: truncate (the first window, as "
        "sentence-transformers does) or mean (every window, averaged).",
    ),
]
IndexOption = Annotated[
    Path | None,
    typer.Option(
        "--index",
        help="The output /v1/search searches (default: the pipeline's sink path).",
        metavar="PATH",
        show_default=False,
    ),
]
GracefulTimeout = Annotated[
    float,
    typer.Option(
        "--graceful-timeout",
        help="Seconds a SIGTERM waits for the requests in flight before cutting them off "
        "(0 or more).",
        metavar="SECONDS",
    ),
]
LogLevel = Annotated[
    str,
    typer.Option(
        "--log-level",
        help="debug, info, warning or error.",
        metavar="[debug|info|warning|error]",
        autocompletion=offering(*LOG_LEVELS),
    ),
]
LogFormat = Annotated[
    str,
    typer.Option(
        "--log-format",
        help="auto (console on a terminal), json or console.",
        metavar="[auto|json|console]",
        autocompletion=offering(*LOG_FORMATS),
    ),
]
AllowedHost = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-host",
        help="A Host name requests may carry besides loopback ones (repeatable; *.example.com "
        "for its subdomains, * for any). Listening on a loopback address, other names are "
        "refused (403: DNS rebinding); elsewhere the Host is checked only if this is given.",
        metavar="NAME",
        show_default=False,
    ),
]
AllowedOrigin = Annotated[
    list[str] | None,
    typer.Option(
        "--allowed-origin",
        help="A web page origin whose requests are answered (repeatable; * for any); "
        "requests with another Origin header are refused (403). Default: none.",
        metavar="ORIGIN",
        show_default=False,
    ),
]
AccessLog = Annotated[
    bool, typer.Option("--access-log/--no-access-log", help="Log one line per request.")
]


def serve(
    pipeline: PipelineArg,
    overrides: SetOption = None,
    host: Host = "127.0.0.1",
    port: Port = 8000,
    max_wait_ms: MaxWaitMs = 2.0,
    max_inputs: MaxInputs = 2048,
    max_input_chars: MaxInputChars = 32_768,
    max_request_bytes: MaxRequestBytes = 16 * 1024 * 1024,
    max_body_bytes_held: MaxBodyBytesHeld = 256 * 1024 * 1024,
    max_queue_texts: MaxQueueTexts = 4096,
    max_queue_chars: MaxQueueChars = 16 * 1024 * 1024,
    max_queue_wait: MaxQueueWait = None,
    max_connections: MaxConnections = 1024,
    max_concurrent_searches: MaxConcurrentSearches = None,
    header_timeout: HeaderTimeout = 10.0,
    keep_alive_timeout: KeepAliveTimeout = 65.0,
    long_text: LongTextOption = "truncate",
    index: IndexOption = None,
    graceful_timeout: GracefulTimeout = 30.0,
    log_level: LogLevel = "info",
    log_format: LogFormat = "auto",
    access_log: AccessLog = False,
    allowed_host: AllowedHost = None,
    allowed_origin: AllowedOrigin = None,
    compile_cache: CompileCache = True,
) -> None:
    """Serve the pipeline's model over HTTP: OpenAI-compatible /v1/embeddings, /v1/search
    over its output, /healthz and /metrics; concurrent requests are batched together."""
    from seamline.adapters.cli.render.console import records_on_stderr

    # --log-format json: each line on stderr a JSON record, the one that says why it ended too
    with records_on_stderr(log_format == "json"):
        from seamline.adapters.serve.limits import Limits, default_searches

        limits = Limits(
            max_inputs=max_inputs,
            max_input_chars=max_input_chars,
            max_request_bytes=max_request_bytes,
            max_body_bytes_held=max_body_bytes_held,
            max_queue_texts=max_queue_texts,
            max_queue_chars=max_queue_chars,
            max_queue_wait_s=max_queue_wait,
            max_connections=max_connections,
            max_concurrent_searches=(
                default_searches() if max_concurrent_searches is None else max_concurrent_searches
            ),
            header_timeout_s=header_timeout,
            keep_alive_timeout_s=keep_alive_timeout,
            max_wait_ms=max_wait_ms,
            long_text=long_text,  # type: ignore[arg-type]  # checked by problems()
        )
        wrong = limits.problems()
        if not 0 <= port <= MAX_PORT:  # the kernel would take it modulo 65,536: another port
            wrong.append(f"--port must be from 0 to {MAX_PORT} (0: any free port), not {port}")
        if not 0 <= graceful_timeout < math.inf:  # nan and inf too
            wrong.append(f"--graceful-timeout must be 0 seconds or more, not {graceful_timeout:g}")
        if log_level not in LOG_LEVELS:
            wrong.append(f"--log-level must be one of {', '.join(LOG_LEVELS)}")
        if log_format not in LOG_FORMATS:
            wrong.append("--log-format must be auto, json or console")
        from seamline.adapters.serve.allowed import option_problems

        wrong += option_problems(allowed_host or (), allowed_origin or ())
        if wrong:
            usage_error("; ".join(wrong))
        guard = (tuple(allowed_host or ()), tuple(allowed_origin or ()))
        _serve(pipeline, overrides, limits, host, port, index, graceful_timeout, access_log,
               log_level, log_format, compile_cache, guard)  # fmt: skip


def _serve(
    pipeline: Path,
    overrides: list[str] | None,
    limits: Limits,
    host: str,
    port: int,
    index: Path | None,
    graceful_timeout: float,
    access_log: bool,
    log_level: str,
    log_format: str,
    compile_cache: bool,
    guard: tuple[tuple[str, ...], tuple[str, ...]] = ((), ()),
) -> None:
    user_errors(check_serve_installed)  # before the pipeline is read or the model loaded
    user_errors(lambda: check_otel_environment(os.environ))  # before the SDK reads it
    from seamline.adapters import telemetry_setup
    from seamline.adapters.logging_setup import configure_logging

    serve_pipeline = user_errors(import_server)

    configure_logging(json=LOG_FORMATS[log_format], level=log_level)
    compile_cache_on(compile_cache)
    resolved, registry = loading.pipeline(pipeline, overrides)
    if index is not None:  # validation checked the traces file against the sink's path only
        traces = user_errors(lambda: telemetry_setup.resolve(resolved.spec.telemetry))
        if "jsonl" in traces.traces and _is_a_file_of(index, traces.traces_file):
            usage_error(
                f"the traces file {str(traces.traces_file)!r} (telemetry.traces_file or "
                f"SEAMLINE_TRACES_FILE) is one of the files of the index --index names "
                f"({str(index)!r}): opening it for spans would overwrite what /v1/search "
                "serves. Name another traces file"
            )
    user_errors(
        lambda: telemetry_setup.configure_telemetry(
            resolved.spec.telemetry,
            no_metrics="seamline serve's metrics are not exported (OTEL_METRICS_EXPORTER, "
            "telemetry.metrics): scrape them from GET /metrics (Prometheus' text format)",
        )
    )

    def announce(url: str) -> None:
        print(f"seamline serve: {resolved.spec.pipeline} on {url} (GET {url}/healthz: ready?)")
        sys.stdout.flush()

    try:
        user_errors(
            lambda: serve_pipeline(
                resolved,
                registry,
                limits,
                host=host,
                port=port,
                index=index,
                announce=announce,
                graceful_timeout=graceful_timeout,
                access_log=access_log,
                allowed=guard,
            )
        )
    finally:
        telemetry_setup.shutdown_telemetry()


def _is_a_file_of(index: Path, candidate: Path) -> bool:
    """Whether ``candidate`` is ``index``, lies inside it (a LanceDB table), or is one of its
    companions beside it (``emb.manifest.json``, ``emb.errors.jsonl``: named ``emb.*``)."""
    target = Path(os.path.realpath(os.path.expanduser(index)))  # no home: as it is
    other = Path(os.path.realpath(os.path.expanduser(candidate)))
    stem = target.stem
    if target.name.endswith(".manifest.json"):  # --index given as the manifest itself
        stem = target.name.removesuffix(".manifest.json")
    return (
        other == target
        or other.is_relative_to(target)
        or (other.parent == target.parent and other.name.startswith(f"{stem}."))
    )
