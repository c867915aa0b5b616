"""``seamline``: run, validate and explore pipelines from the command line.

User errors (a bad pipeline file, an unknown component, an attention that cannot
serve) print one clear message and exit with code 2, without a traceback.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn, TypeVar

import typer

# Only the light corners of seamline here: `seamline --help` must not import JAX or
# load a component. Commands import what they need when they run.
from seamline.contracts.errors import ShardFailed, UserError
from seamline.contracts.versions import KINDS

STARTED = time.perf_counter()
"""When this module was imported: the command's start, give or take Python's own."""

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from seamline.core.config import ResolvedPipeline
    from seamline.core.orchestrator import RunSummary
    from seamline.core.registry import Registry

app = typer.Typer(
    name="seamline",
    help="Compose and run JAX inference pipelines from swappable, contract-checked components.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    # Plain help: rendering it with rich costs more start-up than the rest of --help.
    rich_markup_mode=None,
)


class _Consoles:
    """Consoles made on first use, so each invocation sees its own terminal and COLUMNS."""

    @property
    def out(self) -> Console:
        from rich.console import Console

        return Console()

    @property
    def err(self) -> Console:
        from rich.console import Console

        return Console(stderr=True)


def _table(*args: Any, **kwargs: Any) -> Table:
    """A rich table, imported when a command first prints one (not for ``--help``)."""
    from rich.table import Table

    return Table(*args, **kwargs)


_consoles = _Consoles()

T = TypeVar("T")

LOG_LEVELS = ("debug", "info", "warning", "error")


def _pipeline_path(text: str) -> Path:
    """The pipeline argument as a path; an empty one is refused (``Path("")`` is ``.``)."""
    if not text:
        raise typer.BadParameter("the path is empty: name the pipeline YAML file")
    return Path(text)


PipelineArg = Annotated[
    Path,
    typer.Argument(
        help="The pipeline YAML file.",
        show_default=False,
        parser=_pipeline_path,
    ),
]
SetOption = Annotated[
    list[str] | None,
    typer.Option(
        "--set",
        "-s",
        help="Override a value: --set model.with.max_length=128 (repeatable).",
        metavar="PATH=VALUE",
    ),
]


def _registry() -> Registry:
    """Every installed component the user config trusts (this imports them, and so JAX:
    only when a command runs); a bad user config file is a user error."""
    from seamline.core.config.user import user_trust
    from seamline.core.registry import Registry

    return _user_errors(lambda: Registry.discover(user_trust()))


def _load(pipeline: Path, overrides: list[str] | None) -> tuple[ResolvedPipeline, Registry]:
    """The pipeline, resolved against the components its ``trust`` (and the user's) allows.

    Discovery waits for the pipeline's trust section, so the entry points of a
    distribution it leaves out are never imported.
    """
    from seamline.core.config import load_trusted

    return _user_errors(lambda: load_trusted(pipeline, overrides or ()))


def _print_untrusted(registry: Registry) -> None:
    """Say which installed components trust shut out (they were not imported)."""
    untrusted = [info for info in registry.entries() if info.status == "untrusted"]
    if not untrusted:
        return
    names = ", ".join(f"{i.kind} {i.name} ({i.distribution} {i.version})" for i in untrusted)
    _consoles.out.print(
        f"  untrusted, not imported: {names}; trusted distributions: {registry.trust.describe()}",
        highlight=False,
        soft_wrap=True,
    )


def _plain(error: BaseException) -> str:
    """An error's message with rich markup escaped (``[ray]`` in a message is text, not a
    tag) and control characters shown: a message may quote a file anyone could edit."""
    from rich.markup import escape

    from seamline.contracts.untrusted import visible

    return escape(visible(str(error), keep="\n\t"))


def _user_errors(action: Callable[[], T]) -> T:
    """Run ``action``; a user error becomes a message on stderr and exit code 2."""
    try:
        return action()
    except UserError as error:
        _consoles.err.print(f"[bold red]error:[/] {_plain(error)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except ShardFailed as error:  # a component failed for good: the reason, not a traceback
        _consoles.err.print(
            f"[bold red]failed:[/] {_plain(error)}", highlight=False, soft_wrap=True
        )
        raise typer.Exit(1) from None
    except KeyboardInterrupt:
        _consoles.err.print("[bold yellow]interrupted:[/] nothing was published", highlight=False)
        raise typer.Exit(130) from None


def _environment_errors(action: Callable[[], T], kept: str) -> T:
    """Run ``action``; a failure of the machine around it becomes one line and exit code 1.

    A full disk, a read-only or forbidden directory, a failing device: the message
    says what happened, to which file, what was kept (``kept``) and what to do.
    """
    try:
        return action()
    except OSError as error:
        _environment_failure(error, kept)
    except ShardFailed as failed:
        # A shard run in this process keeps the machine's error as its cause: say that, as
        # for an unsharded run, rather than blame the component whose call it interrupted.
        # Only an error the system reported (it has an errno): an OSError a component
        # raised of its own is the component's failure, named as such.
        cause = failed.__cause__
        if not isinstance(cause, OSError) or cause.errno is None:
            raise
        _environment_failure(cause, kept)


def _environment_failure(error: OSError, kept: str) -> NoReturn:
    what = error.strerror or type(error).__name__
    where = f" ({error.filename})" if error.filename else ""
    _consoles.err.print(
        f"[bold red]error:[/] {what}{where}: {kept}", highlight=False, soft_wrap=True
    )
    raise typer.Exit(1) from None


@app.command()
def run(
    pipeline: PipelineArg,
    overrides: SetOption = None,
    log_format: Annotated[
        str, typer.Option("--log-format", help="auto (console on a terminal), json or console.")
    ] = "auto",
    log_level: Annotated[
        str | None,
        typer.Option(
            "--log-level",
            help="debug, info or warning (default: warning on a terminal, where the progress "
            "bar reports, else info).",
        ),
    ] = None,
    compile_cache: Annotated[
        bool,
        typer.Option(
            "--compile-cache/--no-compile-cache",
            help="Reuse compiled shapes across runs (JAX persistent cache in "
            "$SEAMLINE_CACHE_DIR or ~/.cache/seamline/jax).",
        ),
    ] = True,
    resume: Annotated[
        bool,
        typer.Option(
            "--resume",
            help="Continue an interrupted run from the sink's last checkpoint instead of "
            "starting over (the sink must be resumable, as jsonl and npy are). It refuses "
            "when the model, the pipeline file or the input changed since that checkpoint.",
        ),
    ] = False,
    restart: Annotated[
        bool,
        typer.Option(
            "--restart",
            help="With --resume: when the checkpoint cannot be resumed because the model, the "
            "pipeline file or the input changed, start over instead of refusing. Alone: start "
            "over (as without --resume).",
        ),
    ] = False,
) -> None:
    """Run a pipeline: load, embed and write every document."""
    from seamline.adapters import telemetry_setup
    from seamline.adapters.cli.progress import ProgressMonitor
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core.pipeline import Pipeline

    interactive = _consoles.err.is_terminal
    json_logs = {"auto": None, "json": True, "console": False}.get(log_format)
    if log_format not in ("auto", "json", "console"):
        _consoles.err.print("[bold red]error:[/] --log-format must be auto, json or console")
        raise typer.Exit(2)
    if log_level is not None and log_level not in LOG_LEVELS:
        _consoles.err.print(
            f"[bold red]error:[/] --log-level must be one of {', '.join(LOG_LEVELS)}"
        )
        raise typer.Exit(2)
    # On a terminal the progress bar reports; per-batch lines would only scroll it away.
    level = log_level or ("warning" if interactive else "info")
    configure_logging(json=json_logs, level=level)
    if compile_cache:
        from seamline.adapters.compile_cache import enable_compile_cache

        _user_errors(enable_compile_cache)
    loaded = _user_errors(lambda: Pipeline.from_yaml(pipeline, overrides or ()))
    # The pipeline's telemetry: section wins over the OTEL_* variables.
    _user_errors(lambda: telemetry_setup.configure_telemetry(loaded.resolved.spec.telemetry))
    try:
        extra = [ProgressMonitor(_consoles.err)] if interactive else []
        run_started = time.perf_counter()
        summary = _user_errors(
            lambda: _environment_errors(
                lambda: loaded.run(extra_monitors=extra, resume=resume, restart=restart),
                "the output was not published, and what the sink last committed is kept: "
                "fix that, then run again with --resume",
            )
        )
    finally:
        telemetry_setup.shutdown_telemetry()
    out, work = summary.output, summary.counts
    _consoles.out.print(
        f"[green]done[/] {summary.pipeline}: {out.documents} documents "
        f"({out.failed_documents} set aside), {out.examples} outputs, "
        f"{out.tokens:,} tokens ({out.positions:,} positions computed) "
        f"in {summary.seconds:.1f}s "
        f"({work.documents / max(summary.seconds, 1e-9):.1f} docs/s, "
        f"{summary.tokens_per_second:,.0f} tokens/s); {out.batches} batches, "
        f"{summary.compilations} compilations",
        highlight=False,
    )
    _consoles.out.print(f"  {out.reconciliation()}", highlight=False)
    _print_earlier_work(summary)
    if out.failed_documents or out.skipped_documents:
        _consoles.out.print(
            "  set-aside documents are listed, one JSON object each, in the errors file "
            "beside the output ('<stem>.errors.jsonl')",
            highlight=False,
        )
    if summary.first_output_seconds is not None:
        since_start = run_started - STARTED + summary.first_output_seconds
        _consoles.out.print(
            f"  first output after {summary.first_output_seconds:.1f}s of the run, "
            f"{since_start:.1f}s after the command started",
            highlight=False,
        )
    if summary.resumed_from is not None:
        _consoles.out.print(f"  resumed after cursor {summary.resumed_from!r}", highlight=False)
    if summary.shard_count > 1 or summary.executor != "local":
        kept = list(summary.finished_before)
        ran = [s.shard.index for s in summary.shards if s.shard.index not in kept]
        _consoles.out.print(
            f"  executor {summary.executor}: {summary.shard_count} shards, {len(ran)} run on "
            f"{summary.workers} workers"
            + (f"; shards {kept} were finished before and not redone" if kept else ""),
            highlight=False,
        )
    for signature, chosen in summary.attention.items():
        _consoles.out.print(f"  attention {chosen} for {signature}", highlight=False)
    _print_provenance(summary.provenance)


def _print_earlier_work(summary: RunSummary) -> None:
    """Where the counts above include work committed before this run, or cannot."""
    before = summary.committed_before
    if before is None:
        _consoles.out.print(
            "  the counts are this run's work only: what shards finished earlier (or a "
            "checkpoint from an older seamline) hold is not known here",
            highlight=False,
        )
    elif before.read:
        _consoles.out.print(
            f"  {before.documents} of these documents ({before.examples} outputs) were "
            "committed before this run or before an attempt it retried; this run computed "
            f"{summary.counts.documents} (the rates are this run's)",
            highlight=False,
        )


def _print_provenance(record: Mapping[str, Any]) -> None:
    """The provenance lines: each component's distribution and version, the pipeline's hashes."""
    from seamline.core.provenance import describe

    for line in describe(dict(record)):
        _consoles.out.print(f"  {_plain(Exception(line))}", highlight=False, soft_wrap=True)


@app.command()
def validate(pipeline: PipelineArg, overrides: SetOption = None) -> None:
    """Check a pipeline file without running it (every error is reported with its location)."""
    from seamline.core.config import AttentionMode

    resolved, registry = _load(pipeline, overrides)
    spec = resolved.spec
    _consoles.out.print(f"[green]ok[/] {pipeline}: pipeline {spec.pipeline!r}", highlight=False)
    _consoles.out.print(f"  loader    {resolved.loader.name}", highlight=False)
    _consoles.out.print(f"  model     {resolved.model.name}", highlight=False)
    attention = ", ".join(a.name for a in resolved.attention.candidates)
    mode = (
        "explicit"
        if resolved.attention.mode is AttentionMode.EXPLICIT
        else f"{spec.attention.use!s} → candidates"
    )
    _consoles.out.print(f"  attention {mode}: {attention}", highlight=False)
    _consoles.out.print(
        f"  monitors  {', '.join(m.name for m in resolved.monitors) or '-'}", highlight=False
    )
    _consoles.out.print(f"  sink      {resolved.sink.name}", highlight=False)
    executor = resolved.executor
    named = spec.run.executor is not None
    _consoles.out.print(
        f"  executor  {executor.name if executor else '-'}{'' if named else ' (default)'}",
        highlight=False,
    )
    from seamline.core.provenance import provenance

    _print_provenance(provenance(resolved))
    _print_untrusted(registry)


@app.command()
def explain(pipeline: PipelineArg, overrides: SetOption = None) -> None:
    """Show which attention would serve each shape bucket, and why the others would not.

    Nothing runs and, for models that can describe their parameters, no weights are read.
    """
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core.attention.plan import explain as make_plan
    from seamline.core.config import Selection

    configure_logging(level="warning")
    resolved, registry = _load(pipeline, overrides)
    plan = _user_errors(lambda: make_plan(resolved, registry))
    console = _consoles.out
    console.print(
        f"[bold]{plan.pipeline}[/]: attention {plan.mode}"
        + ("; select: measure (tuning cache)" if plan.select is Selection.MEASURE else "")
        + "; reference "
        f"{plan.reference or '(none installed)'}; verify on first use: "
        f"{'yes' if plan.verify else 'no'}; on compile failure: {plan.on_failure}; shadow: "
        f"{f'every {plan.shadow_every} batches' if plan.shadow_every else 'off'}"
        + ("; conformance required" if plan.require_conformance else "")
        + ("; [yellow]weights were loaded to learn their shapes[/]" if plan.weights_loaded else ""),
        highlight=False,
    )
    for bucket in plan.buckets:
        table = _table(
            title=f"length {bucket.length} × batch {bucket.batch_size}: {bucket.signature}",
            title_justify="left",
        )
        table.add_column("candidate", no_wrap=True)
        table.add_column("verdict", no_wrap=True)
        table.add_column("why", overflow="fold")
        reasons = {r.candidate: r.reasons for r in (*bucket.refusals, *bucket.spare)}
        measured = bucket.measured.seconds if bucket.measured is not None else {}
        if plan.select is Selection.MEASURE:
            table.add_column("measured", justify="right", no_wrap=True)
        for name in bucket.order:
            timing = [f"{measured[name] * 1e3:.3g} ms" if name in measured else "-"]
            extra = timing if plan.select is Selection.MEASURE else []
            if name == bucket.chosen:
                table.add_row(name, "[green]chosen[/]", bucket.reason, *extra)
            elif reasons.get(name):
                table.add_row(name, "[red]cannot serve[/]", "; ".join(reasons[name]), *extra)
            elif name in measured:
                table.add_row(name, "[dim]could serve[/]", "slower, as measured", *extra)
            else:
                table.add_row(
                    name, "[dim]could serve[/]", "a candidate before it was chosen", *extra
                )
        console.print(table)
        if plan.select is Selection.MEASURE:
            console.print(
                f"  tuning cache: {bucket.measured.key}"
                if bucket.measured is not None
                else "  not measured yet: the first run measures it, or run `seamline tune`",
                highlight=False,
            )
    from seamline.core.provenance import provenance

    _print_provenance(provenance(resolved))
    _print_untrusted(registry)
    if any(bucket.chosen is None for bucket in plan.buckets):
        raise typer.Exit(2)


@app.command()
def tune(
    pipeline: PipelineArg,
    overrides: SetOption = None,
    again: Annotated[
        bool, typer.Option("--again", help="Measure even what the tuning cache already holds.")
    ] = False,
) -> None:
    """Time every attention candidate on every shape bucket; fill the tuning cache.

    A pipeline with `attention: {select: measure}` then picks the fastest from the
    cache on its first run instead of measuring. No weights are read for models
    that describe their parameter shapes.
    """
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core.attention.plan import tune as run_tuning
    from seamline.core.attention.tuning import TuningCache

    configure_logging(level="warning")
    resolved, registry = _load(pipeline, overrides)
    cache = TuningCache()
    results = _user_errors(lambda: run_tuning(resolved, registry, cache, again=again))
    console = _consoles.out
    console.print(f"tuning cache: {cache.directory}", highlight=False)
    for bucket in results:
        table = _table(
            title=f"length {bucket.length} × batch {bucket.batch_size}: {bucket.signature}",
            title_justify="left",
        )
        for column in ("candidate", "median ms", "fastest ms", "slowest ms", "calls"):
            table.add_column(column, justify="left" if column == "candidate" else "right")
        entry = bucket.entry
        if entry is not None:
            for name in entry.ranking:
                timing = entry.timings[name]
                table.add_row(
                    name,
                    f"{timing.median * 1e3:.3f}",
                    f"{timing.fastest * 1e3:.3f}",
                    f"{timing.slowest * 1e3:.3f}",
                    str(timing.calls),
                )
        for refusal in bucket.refusals:
            table.add_row(f"[dim]{refusal.candidate}[/]", "cannot serve", "", "", "")
        console.print(table)
        if entry is None:
            console.print("  [red]no candidate serves this shape[/]")
        else:
            source = "from the cache (--again measures anew)" if bucket.cached else "measured"
            console.print(f"  {source}; key {entry.key}", highlight=False)


@app.command()
def profile(
    pipeline: PipelineArg,
    overrides: SetOption = None,
    out: Annotated[
        Path, typer.Option("--out", "-o", help="Directory the profiler writes its trace to.")
    ] = Path("seamline-profile"),
) -> None:
    """Run a pipeline under the JAX profiler: a trace for Perfetto or TensorBoard.

    Inside the compiled code each seam is a named scope: look for
    seamline/model/<name> and seamline/attention/<name>.
    """
    import jax

    from seamline.adapters import telemetry_setup
    from seamline.adapters.logging_setup import configure_logging
    from seamline.core.pipeline import Pipeline

    configure_logging(level="warning")
    loaded = _user_errors(lambda: Pipeline.from_yaml(pipeline, overrides or ()))
    _user_errors(lambda: telemetry_setup.configure_telemetry(loaded.resolved.spec.telemetry))
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.rglob("*"))
    try:
        with jax.profiler.trace(str(out), create_perfetto_trace=True):
            summary = _user_errors(lambda: loaded.run())
    finally:
        telemetry_setup.shutdown_telemetry()
    written = sorted(p for p in set(out.rglob("*")) - before if p.is_file())
    console = _consoles.out
    console.print(
        f"[green]done[/] {summary.pipeline}: {summary.counts.documents} documents, "
        f"{summary.counts.batches} batches in {summary.seconds:.1f}s, profiled",
        highlight=False,
    )
    console.print(f"  trace in {out}/", highlight=False)
    for path in written:
        console.print(f"    {path}", highlight=False)
    perfetto = [p for p in written if p.name.startswith("perfetto_trace")]
    if perfetto:
        console.print(
            f"  Perfetto: open https://ui.perfetto.dev and drop {perfetto[0]} on it",
            highlight=False,
        )
    console.print(
        f"  TensorBoard: pip install tensorboard tensorboard-plugin-profile; "
        f"tensorboard --logdir {out} (Profile tab)",
        highlight=False,
    )
    attention = ", ".join(sorted(set(summary.attention.values()))) or "<name>"
    console.print(
        f"  search the trace for seamline/attention/ ({attention}) and seamline/model/",
        highlight=False,
    )


trace_app = typer.Typer(
    help="Read traces written by the jsonl span exporter.", no_args_is_help=True
)
app.add_typer(trace_app, name="trace")


@trace_app.command("summarize")
def trace_summarize(
    file: Annotated[
        Path, typer.Argument(help="A jsonl trace (OTEL_TRACES_EXPORTER=jsonl).", show_default=False)
    ],
) -> None:
    """Per span name (seam): count, total, median, p95 and share of the run."""
    from seamline.adapters.trace_summary import summarize

    summary = _user_errors(lambda: summarize(file))
    _consoles.out.print(
        f"{file}: {summary.spans} spans, run {summary.run_seconds:.3f}s", highlight=False
    )
    table = _table()
    table.add_column("span", no_wrap=True)
    for column in ("count", "total s", "median ms", "p95 ms", "share"):
        table.add_column(column, justify="right", no_wrap=True)
    for row in summary.rows:
        errors = f" [red]({row.errors} failed)[/]" if row.errors else ""
        table.add_row(
            row.name + errors,
            str(row.count),
            f"{row.total:.3f}",
            f"{row.median * 1e3:.2f}",
            f"{row.p95 * 1e3:.2f}",
            f"{row.share:.1%}",
        )
    _consoles.out.print(table)


bench = typer.Typer(help="Benchmarks, side by side in one run.", no_args_is_help=True)
app.add_typer(bench, name="bench")


@bench.command(
    "attention",
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def bench_attention(ctx: typer.Context) -> None:
    """Every installed attention over sequence lengths: time and peak memory, ratios to native.

    Options are the benchmark's own (see `seamline bench attention --help`). Exit code 0
    when at least one cell was measured, 1 when nothing was, 2 on a usage error.
    """
    from seamline.adapters.bench_attention import main as run_benchmark

    raise typer.Exit(run_benchmark(list(ctx.args)))


@app.command()
def components(
    kind: Annotated[
        str | None, typer.Option("--kind", "-k", help=f"Only one kind: {', '.join(KINDS)}.")
    ] = None,
    auto_order: Annotated[
        bool,
        typer.Option(
            "--auto-order",
            help="Instead: the order `attention: {use: auto}` tries the installed attention "
            "implementations in, for representative shapes per platform (Markdown).",
        ),
    ] = False,
    distribution: Annotated[
        list[str] | None,
        typer.Option(
            "--distribution",
            help="Only the components these distributions register (repeat the option).",
        ),
    ] = None,
    pipeline: Annotated[
        Path | None,
        typer.Option(
            "--pipeline",
            help="Apply this pipeline's trust section too (as running it would).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """List every installed component: its distribution, version and file; broken, refused
    and untrusted ones with the reason."""
    wanted = set(distribution or ())
    if kind is not None and kind not in KINDS:
        _consoles.err.print(f"[bold red]error:[/] --kind must be one of {', '.join(KINDS)}")
        raise typer.Exit(2)
    registry = _trusted_registry(pipeline) if pipeline is not None else _registry()
    if auto_order:
        from seamline.core.attention.order import auto_order_table

        attentions = [
            registry.create("attention", info.name)
            for info in registry.entries("attention")
            if info.usable and (not wanted or info.distribution in wanted)
        ]
        sys.stdout.write(auto_order_table(attentions))  # type: ignore[arg-type]
        return
    table = _table(title="seamline components")
    for column in ("kind", "name", "distribution", "version", "contract", "status"):
        table.add_column(column, no_wrap=True)
    table.add_column("reason", overflow="fold")
    table.add_column("file", overflow="fold")
    colours = {
        "ok": "green",
        "broken": "red",
        "refused": "yellow",
        "conflict": "red",
        "untrusted": "magenta",
    }
    for info in registry.entries(kind):
        if wanted and info.distribution not in wanted:
            continue
        table.add_row(
            info.kind,
            info.name,
            info.distribution,
            info.version,
            info.contract_version or "-",
            f"[{colours[info.status]}]{info.status}[/]",
            _plain(Exception(info.reason)),
            info.module_file or "-",
        )
    _consoles.out.print(table)
    if registry.trust.restricted:
        _consoles.out.print(
            f"trusted distributions: {_plain(Exception(registry.trust.describe()))}",
            highlight=False,
            soft_wrap=True,
        )


def _trusted_registry(pipeline: Path) -> Registry:
    """The registry a run of ``pipeline`` would see: discovered under its ``trust`` too."""
    from seamline.core.config import pipeline_trust, prepare_located, read_pipeline_text
    from seamline.core.config.user import user_trust
    from seamline.core.registry import Registry

    def discover() -> Registry:
        source = str(pipeline)
        located = prepare_located(read_pipeline_text(source), source)
        return Registry.discover(pipeline_trust(located, user_trust()))

    return _user_errors(discover)


@app.command(name="check")
def check_command(
    target: Annotated[
        str, typer.Argument(help="KIND:NAME, e.g. attention:blockwise.", show_default=False)
    ],
    with_: Annotated[
        list[str] | None,
        typer.Option(
            "--with",
            "-w",
            help="A config field of the component: --with interpret=true (repeatable).",
            metavar="KEY=VALUE",
        ),
    ] = None,
    record: Annotated[
        bool, typer.Option("--record", help="Write a conformance record of the result.")
    ] = False,
    record_dir: Annotated[
        Path | None,
        typer.Option(
            "--record-dir",
            help="Where records go (default: $SEAMLINE_CONFORMANCE_DIR or the user data dir).",
        ),
    ] = None,
    max_examples: Annotated[
        int | None,
        typer.Option("--max-examples", min=1, help="Generated cases per property check (8)."),
    ] = None,
    select: Annotated[
        str | None, typer.Option("-k", help="Only checks matching this pytest -k expression.")
    ] = None,
    verbose: Annotated[bool, typer.Option("--verbose", "-v", help="Show pytest's output.")] = False,
) -> None:
    """Run the conformance suite against an installed component and report what it found."""
    from seamline.adapters.cli.check import check, report

    outcome = _user_errors(
        lambda: check(
            _registry(),
            target,
            with_values=with_ or [],
            max_examples=max_examples,
            select=select,
            record=record,
            record_dir=record_dir,
            verbose=verbose,
        )
    )
    raise typer.Exit(report(_consoles.out, target, outcome))


@app.command()
def schema(
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write to a file instead of stdout.")
    ] = None,
) -> None:
    """Print the JSON Schema of pipeline files, with every installed component's config."""
    from seamline.core.schema import pipeline_schema

    text = json.dumps(pipeline_schema(_registry()), indent=2)
    if output:
        output.write_text(text + "\n", encoding="utf-8")
        _consoles.err.print(f"wrote {output}")
    else:
        sys.stdout.write(text + "\n")


@app.command()
def search(
    index: Annotated[
        Path,
        typer.Argument(
            help="An index a pipeline wrote: a LanceDB table (out/emb.lance), a Parquet, JSON "
            "Lines or .npy file, or its .manifest.json.",
            show_default=False,
        ),
    ],
    query: Annotated[str, typer.Argument(help="The text to search for.", show_default=False)],
    k: Annotated[int, typer.Option("-k", help="How many results (1 to 10,000).")] = 5,
    attention: Annotated[
        str | None,
        typer.Option(
            "--attention",
            help="Embed the query with this attention instead of the index's recorded choice.",
        ),
    ] = None,
    exact: Annotated[
        bool,
        typer.Option(
            "--exact", help="Compare with every vector even where the table has a vector index."
        ),
    ] = False,
    where: Annotated[
        str | None,
        typer.Option(
            "--where",
            help="A SQL filter on a LanceDB table's rows, applied before the nearest are "
            'chosen: "metadata.bytes > 1000".',
            metavar="SQL",
        ),
    ] = None,
) -> None:
    """Embed QUERY with the index's own model and attention; print the nearest documents.

    INDEX is what a sink published (or its .manifest.json): the manifest beside it
    names the model, the attention and where every file or table is. A LanceDB
    table is searched through its vector index when it has one; files are scanned.
    """
    from seamline.adapters.logging_setup import configure_logging
    from seamline.adapters.search import find
    from seamline.contracts.untrusted import visible

    configure_logging(level="warning")
    found = _user_errors(
        lambda: find(_registry(), index, query, k, attention, exact=exact, where=where)
    )
    from rich.text import Text

    # What the output stores is data, printed as written: never as markup ("[/]") or
    # emoji codes (":x:"), and never a control character (visible() shows each as "�").
    table = _table(title=Text(f"nearest to {query!r}"), caption=Text(found.how))
    for column in ("score", "document", "window", "text"):
        table.add_column(column, overflow="fold")
    for hit in found.hits:
        text = Text(hit.snippet()) if hit.text is not None else Text("(no text stored)", "dim")
        table.add_row(f"{hit.score:.3f}", Text(visible(hit.doc_id)), str(hit.window), text)
    _consoles.out.print(table)


def main(argv: list[str] | None = None) -> Any:
    """Entry point of the ``seamline`` command."""
    return app(args=argv, prog_name="seamline")


if __name__ == "__main__":
    main()
