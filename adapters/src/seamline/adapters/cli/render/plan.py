"""What ``explain`` and ``tune`` print: a table per shape bucket, or per run of buckets
that get the same verdicts.

The verdicts (chosen, cannot serve, could serve, and why) are core's
(:meth:`seamline.core.BucketPlan.verdicts`); this module gives each its colour.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.adapters.cli.render.console import Part, consoles, line, text, title
from seamline.adapters.cli.render.fit import Column, fitted

if TYPE_CHECKING:
    from rich.console import RenderableType
    from rich.text import Text

    from seamline.core import BucketPlan, BucketTuning, Plan, PrecisionCandidate

COLOURS = {"chosen": "green", "cannot serve": "red", "could serve": "dim", "left out": "yellow"}
"""A verdict's colour (keys are :class:`seamline.core.Verdict` values)."""


def plan(plan: Plan) -> None:
    """The plan's settings on one line, then every bucket's candidates with their verdicts."""
    from seamline.core import Selection

    console = consoles.out
    measure = plan.select is Selection.MEASURE
    settings: list[Part] = [
        (plan.pipeline, "bold"),
        f": attention {plan.mode}"
        + ("; select: measure (tuning cache)" if measure else "")
        + f"; reference {plan.reference or '(none installed)'}; verify on first use: "
        f"{'yes' if plan.verify else 'no'}; on compile failure: {plan.on_failure}; shadow: "
        f"{f'every {plan.shadow_every} batches' if plan.shadow_every else 'off'}"
        + ("; conformance required" if plan.require_conformance else ""),
    ]
    if plan.weights_loaded:
        settings += ["; ", ("weights were loaded to learn their shapes", "yellow")]
    line(*settings, console=console)
    for group in _alike(plan.buckets, apart=measure):
        console.print(_verdicts(group, measure))
        if measure:
            line(_tuning_line(group[0]), console=console)


def _alike(buckets: Sequence[BucketPlan], *, apart: bool) -> list[list[BucketPlan]]:
    """``buckets`` in runs of neighbours whose verdicts are the same, row for row: one
    table for each run, its buckets named above it.

    The examples' pipeline has five buckets, and ``explain`` printed five tables of nine
    identical rows: what differed (the shapes) was in the titles, and a bucket whose
    verdicts did differ was lost among them. ``apart``: a table each (``select:
    measure``, whose timings and cache entries are the bucket's own)."""
    groups: list[list[BucketPlan]] = []
    for bucket in buckets:
        if groups and not apart and groups[-1][0].verdicts() == bucket.verdicts():
            groups[-1].append(bucket)
        else:
            groups.append([bucket])
    return groups


def _tuning_line(bucket: BucketPlan) -> str:
    """Where the order came from under ``select: measure``: the cache entry, or why none is
    used (timings of other JAX versions are named: "not measured yet" alone hid them)."""
    if bucket.measured is not None:
        return f"  tuning cache: {bucket.measured.key}"
    fix = "the first run measures it, or run `seamline tune`"
    if not bucket.set_aside:
        return f"  not measured yet: {fix}"
    from seamline.contracts.versions import installed_version

    now = f"jax {installed_version('jax')}, jaxlib {installed_version('jaxlib')}"
    then = "; ".join(bucket.set_aside)
    return (
        f"  not measured under {now}: timings measured under {then} were set aside (a "
        f"timing holds for the versions it was measured under); {fix}"
    )


def precision(mode: str, candidates: Sequence[PrecisionCandidate]) -> None:
    """The precision candidates, one line each: would it serve, and why (or why not)."""
    console = consoles.out
    line(("precision", "bold"), f" ({mode}):", console=console)
    for candidate in candidates:
        verdict = ("can serve", "green") if candidate.ok else ("refused", "red")
        line(
            f"  {candidate.name}: ",
            verdict,
            f": {'; '.join(candidate.reasons)}" if candidate.reasons else "",
            _recorded(candidate),
            console=console,
            soft_wrap=True,
        )


def _recorded(candidate: PrecisionCandidate) -> str:
    """The gate's figures an earlier run recorded, and the record's path.

    explain measures nothing: what vouches for the candidate (or against it) is that
    record, so its figures are shown, and where it is, which one may delete to check
    again."""
    said = candidate.figures_described()
    if said is None:
        return ""
    where = f"; recorded in {candidate.recorded}" if candidate.recorded is not None else ""
    return f" ({said}{where})"


def _bucket(length: int, batch_size: int, signature: str) -> str:
    return f"length {length} × batch {batch_size}: {signature}"


def _verdicts(group: Sequence[BucketPlan], measure: bool) -> RenderableType:
    """The table of buckets with the same verdicts (:func:`_alike`), each named on a line of
    its title: a row per candidate, with its measured time under ``measure``."""
    bucket = group[0]
    columns = [Column("candidate"), Column("verdict"), Column("why", whole=False)]
    if measure:
        columns.append(Column("measured", justify="right"))
    rows: list[list[Text]] = []
    for row in bucket.verdicts():
        cells = [text(row.candidate), text((row.verdict, COLOURS[row.verdict])), text(row.why)]
        if measure:
            timing = f"{row.measured * 1e3:.3g} ms" if row.measured is not None else "-"
            cells.append(text(timing))
        rows.append(cells)
    named = title("\n".join(_bucket(b.length, b.batch_size, b.signature) for b in group))
    return fitted(consoles.out, columns, rows, title=named, title_justify="left")


TIMING_COLUMNS = (
    Column("candidate"),
    *(
        Column(header, justify="right")
        for header in ("median ms", "fastest ms", "slowest ms", "calls")
    ),
)
"""``tune``'s columns: names and figures kept whole, stacked where they do not fit."""


def tuning(directory: Path, results: list[BucketTuning]) -> None:
    """What ``tune`` measured (or found cached) per bucket, fastest first."""
    console = consoles.out
    line(f"tuning cache: {directory}", console=console)
    for bucket in results:
        rows: list[list[Text]] = []
        entry = bucket.entry
        if entry is not None:
            for name in entry.ranking:
                timing = entry.timings[name]
                figures = (timing.median, timing.fastest, timing.slowest)
                rows.append(
                    [
                        text(name),
                        *(text(f"{figure * 1e3:.3f}") for figure in figures),
                        text(str(timing.calls)),
                    ]
                )
        for refusal in bucket.refusals:
            refused = text((f"{refusal.candidate} (cannot serve)", "dim"))
            rows.append([refused, *[text()] * 4])  # no figures: in neither layout
        named = title(_bucket(bucket.length, bucket.batch_size, bucket.signature))
        shown = fitted(console, TIMING_COLUMNS, rows, title=named, title_justify="left")
        console.print(shown)
        if entry is None:
            line("  ", ("no candidate serves this shape", "red"), console=console)
        else:
            source = "from the cache (--again measures anew)" if bucket.cached else "measured"
            line(f"  {source}; key {entry.key}", console=console)
