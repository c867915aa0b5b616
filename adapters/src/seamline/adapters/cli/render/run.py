"""What ``run`` and ``profile`` print when the run is over."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.adapters.cli.render.console import consoles, line
from seamline.adapters.cli.render.pipeline import provenance
from seamline.contracts.untrusted import NotRegularFile, count_lines, visible
from seamline.core import PrecisionDecision

if TYPE_CHECKING:
    from rich.console import Console

    from seamline.adapters.cli.outputs import OutputPlace
    from seamline.core import RunSummary


def run_summary(
    summary: RunSummary, before_run: float, place: OutputPlace, verbose: bool = False
) -> None:
    """The run in a few lines: what was made, how fast, where it is and how to search it.

    Set-aside documents are always named (they are work the user must look at), and so
    is work an earlier run committed (it explains the counts). ``verbose`` adds the
    details: the reconciliation of every item read, tokens and batches, when the first
    output came, how shards were spread, which attention served which shape, and the
    provenance (each component's distribution, the pipeline's hashes). ``before_run``:
    seconds from the command's start to the run's."""
    out = consoles.out
    counts = summary.output
    line(
        ("done", "green"),
        f" {summary.pipeline}: {counts.documents} documents, {counts.examples} outputs "
        f"in {summary.seconds:.1f}s ({docs_per_second(summary):.1f} docs/s)",
        console=out,
    )
    _set_aside(out, summary, place)
    if not counts.reconciles or verbose:
        line(f"  {counts.reconciliation()}", console=out)
    _earlier_work(out, summary)
    if summary.changes:
        line(f"  documents in the output: {_changes(summary.changes)}", console=out, soft_wrap=True)
    _older_versions(out, summary)
    _precision(out, summary, verbose)
    if summary.resumed_from is not None:
        line(f"  resumed after cursor {summary.resumed_from!r}", console=out)
    if place.path is not None:
        line(f"  output: {shown(place.path)}", console=out, soft_wrap=True)
    if place.search_command is not None:
        line(f"  search it: {place.search_command}", console=out, soft_wrap=True)
    if verbose:
        _details(out, summary, before_run)
        _shards(out, summary)
        for signature, chosen in summary.attention.items():
            names = chosen if isinstance(chosen, str) else " and ".join(chosen)
            line(f"  attention {names} for {signature}", console=out)
        provenance(summary.provenance)


def _precision(out: Console, summary: RunSummary, verbose: bool) -> None:
    """The precision, whenever the pipeline asked for anything but float32 (or with -v)."""
    record = summary.precision
    if record.get("candidates") is None:
        return
    decision = PrecisionDecision.from_record(dict(record))
    if decision.mode == "explicit" and decision.chosen == "float32" and not verbose:
        return
    line(f"  precision: {decision.describe()}", console=out, soft_wrap=True)


def docs_per_second(summary: RunSummary) -> float:
    """This run's documents (not those committed before it) per second of its wall time."""
    return summary.counts.documents / max(summary.seconds, 1e-9)


def _set_aside(out: Console, summary: RunSummary, place: OutputPlace) -> None:
    """The documents set aside, and where they are listed: shown whenever there are any.

    When the counts are this run's alone (shards an earlier run finished are not in them),
    the published errors files are counted too: a resumed sharded run whose finished parts
    held every set-aside document once printed no ``set aside`` line at all."""
    counts = summary.output
    held = None if summary.committed_before is not None else _published_lines(place)
    if not (counts.failed_documents or counts.skipped_documents or held):
        return
    published = "" if held is None else f" by this run, {held} in the published output"
    line(
        "  ",
        ("set aside", "yellow"),
        f": {counts.failed_documents} failed, {counts.skipped_documents} skipped by rule"
        f"{published}; listed, one JSON object each, in {_errors_files(place)}",
        console=out,
        soft_wrap=True,
    )


def _published_lines(place: OutputPlace) -> int | None:
    """The records of the published errors file(s): one document set aside a line; None
    when they cannot be read. Read in chunks, so memory stays bounded."""
    errors = place.errors_path
    if errors is None:
        return None
    try:  # files a manifest names: never a FIFO waited on, nor read through a link
        paths = (errors,) if isinstance(errors, str) else errors
        return sum(count_lines(path) for path in paths)
    except (OSError, NotRegularFile):
        return None


SHOWN_PARTS = 3
"""The parts' errors files the summary names; ``--format json`` lists every one."""


def _errors_files(place: OutputPlace) -> str:
    """Where the set-aside documents are listed: the errors file, or each part's.

    An output published as parts (a sharded ``jsonl`` or ``npy`` run) has no errors file
    of its own: its manifest lists one per part, and the summary says so rather than name
    a file that does not exist."""
    errors = place.errors_path
    if errors is None:
        return "the errors file beside the output ('<stem>.errors.jsonl')"
    if isinstance(errors, str):
        return shown(errors)
    named = ", ".join(map(shown, errors[:SHOWN_PARTS]))
    more = f" and {len(errors) - SHOWN_PARTS} more" if len(errors) > SHOWN_PARTS else ""
    return (
        f"the errors files of the output's {len(errors)} parts, as "
        f"{shown(place.manifest or 'its manifest')} lists "
        f"them ({named}{more}); seamline.contracts.readback.read_errors reads them all"
    )


def shown(path: str) -> str:
    """``path`` as the summary names it: as it is, or, when it holds a line break, a tab
    or another control character, quoted as a shell reads it (:func:`shell_quoted`).

    A newline in an output's name was printed as one: ``output: out/a`` on one line and
    ``b.jsonl`` on the next, and the errors file's name likewise, where the search
    command beside them quoted it (``$'out/a\\x0ab.jsonl'``).
    """
    from seamline.adapters.cli.outputs import shell_quoted

    return path if visible(path) == path else shell_quoted(path)


def _details(out: Console, summary: RunSummary, before_run: float) -> None:
    """Tokens, batches and compilations, and when the first output came (``-v``)."""
    counts = summary.output
    line(
        f"  {counts.tokens:,} tokens ({counts.positions:,} positions computed, "
        f"{summary.tokens_per_second:,.0f} tokens/s); {counts.batches} batches, "
        f"{summary.compilations} compilations",
        console=out,
    )
    if summary.first_output_seconds is not None:
        since_start = before_run + summary.first_output_seconds
        line(
            f"  first output after {summary.first_output_seconds:.1f}s of the run, "
            f"{since_start:.1f}s after the command started",
            console=out,
        )


_CHANGES = {
    "kept": "set aside (their rows kept)",
    "held": "not in the input but kept (a failure names no document: see the errors file)",
}
_ORDER = ("added", "replaced", "deleted", "unchanged", "kept", "held")


def _changes(changes: Mapping[str, int]) -> str:
    """``1 added, 2 replaced, ...``: what publishing did, in a fixed order, as the sink said."""
    ordered = sorted(changes, key=lambda k: (_ORDER.index(k) if k in _ORDER else len(_ORDER), k))
    return ", ".join(f"{changes[k]} {_CHANGES.get(k, k)}" for k in ordered)


DISK_DOCS = "docs/pipelines.md#sink-lancedb, Disk over republishes"


def _older_versions(out: Console, summary: RunSummary) -> None:
    """What the output's older versions keep on disk, whenever it keeps any: a daily
    ``sync`` of a few edits kept a full copy of the table and its indexes each day,
    and nothing the run printed said so. Where the newest version still holds deleted
    rows in its files (an ``upsert`` leaving others in place), pruning frees them too,
    by an amount known only once it has: the bytes are then "at least"."""
    older = summary.older_versions
    if older is None:
        return
    masked = f", and {older.masked_rows:,} deleted rows in the newest version's files"
    line(
        f"  older versions: {older.kept} kept, {'at least ' * older.at_least}"
        f"{older.bytes / 1e6:,.2f} MB{masked * older.at_least} (prune: true removes them: "
        f"{DISK_DOCS})",
        console=out,
        soft_wrap=True,
    )


def _earlier_work(out: Console, summary: RunSummary) -> None:
    """Where the counts above include work committed before this run, or cannot."""
    before = summary.committed_before
    if before is None:
        line(
            "  the counts are this run's work only: what shards finished earlier (or a "
            "checkpoint from an older seamline) hold is not known here",
            console=out,
        )
    elif before.read:
        line(
            f"  {before.documents} of these documents ({before.examples} outputs) were "
            "committed before this run or before an attempt it retried; this run computed "
            f"{summary.counts.documents} (the rates are this run's)",
            console=out,
        )


def _shards(out: Console, summary: RunSummary) -> None:
    """How a sharded run (or one on another executor) was spread, and what it did not redo."""
    if summary.shard_count <= 1 and summary.executor == "local":
        return
    kept = list(summary.finished_before)
    ran = [s.shard.index for s in summary.shards if s.shard.index not in kept]
    line(
        f"  executor {summary.executor}: {summary.shard_count} shards, {len(ran)} run on "
        f"{summary.workers} workers"
        + (f"; shards {kept} were finished before and not redone" if kept else ""),
        console=out,
    )


def profile_summary(summary: RunSummary, out_dir: Path, written: list[Path]) -> None:
    """The files the profiler wrote, and how to open them (Perfetto, TensorBoard).

    The precision line is ``run``'s: a profile's timings mean little without the
    precision they were computed in, and the choice is never silent."""
    out = consoles.out
    line(
        ("done", "green"),
        f" {summary.pipeline}: {summary.counts.documents} documents, "
        f"{summary.counts.batches} batches in {summary.seconds:.1f}s, profiled",
        console=out,
    )
    _precision(out, summary, verbose=False)
    line(f"  trace in {out_dir}/", console=out)
    for path in written:
        line(f"    {path}", console=out)
    perfetto = [p for p in written if p.name.startswith("perfetto_trace")]
    if perfetto:
        line(f"  Perfetto: open https://ui.perfetto.dev and drop {perfetto[0]} on it", console=out)
    line(
        f"  TensorBoard: pip install tensorboard tensorboard-plugin-profile; "
        f"tensorboard --logdir {out_dir} (Profile tab)",
        console=out,
    )
    served = summary.attention.values()
    names = {name for c in served for name in ([c] if isinstance(c, str) else c)}
    attention = ", ".join(sorted(names)) or "<name>"
    line(
        f"  search the trace for seamline/attention/ ({attention}) and seamline/model/",
        console=out,
    )
