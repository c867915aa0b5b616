"""``seamline components``: every installed component, and what became of it."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import usage_error
from seamline.adapters.cli.options import FormatOption, offering, output_format
from seamline.contracts.versions import KINDS

if TYPE_CHECKING:
    from seamline.core import Registry

KindOption = Annotated[
    str | None,
    typer.Option(
        "--kind",
        help=f"Only one kind: {', '.join(KINDS)}.",
        metavar=f"[{'|'.join(KINDS)}]",
        autocompletion=offering(*KINDS),
    ),
]
AutoOrder = Annotated[
    bool,
    typer.Option(
        "--auto-order",
        help="Instead: the order `attention: {use: auto}` tries the installed attention "
        "implementations in, for representative shapes per platform (Markdown).",
    ),
]
Distributions = Annotated[
    list[str] | None,
    typer.Option(
        "--distribution",
        help="Only the components these distributions register (repeat the option).",
        metavar="NAME",
    ),
]
TrustOf = Annotated[
    Path | None,
    typer.Option(
        "--pipeline",
        help="Apply this pipeline's trust section too (as running it would).",
        metavar="FILE",
        show_default=False,
    ),
]


def components(
    kind: KindOption = None,
    auto_order: AutoOrder = False,
    distribution: Distributions = None,
    pipeline: TrustOf = None,
    format_: FormatOption = "text",
) -> None:
    """List every installed component: its distribution, version and file; broken, refused
    and untrusted ones with the reason."""
    from seamline.adapters.cli.render import as_json, listing

    as_text = output_format(format_) == "text"
    wanted = set(distribution or ())
    if kind is not None and kind not in KINDS:
        usage_error(f"--kind must be one of {', '.join(KINDS)}")
    if auto_order and (kind is not None or not as_text):
        # It printed its Markdown whatever these said: `| jq` failed on a success.
        usage_error(
            "--auto-order prints one Markdown table of the attention implementations: it "
            "takes neither --kind nor --format json"
        )
    registry = loading.trusted_registry(pipeline) if pipeline is not None else loading.registry()
    suites = registry.conformance.listed()
    installed = sorted(
        {info.distribution for info in registry.entries()}
        | {suite.entry.distribution for suite in suites}
    )
    unknown = sorted(wanted - set(installed))
    if unknown:
        usage_error(
            f"--distribution {', '.join(unknown)}: no installed component comes from "
            f"{'it' if len(unknown) == 1 else 'them'}; the distributions that register "
            f"components: {', '.join(installed)}"
        )
    if auto_order:
        _auto_order(registry, wanted)
        return
    infos = [info for info in registry.entries(kind) if not wanted or info.distribution in wanted]
    trusted = registry.trust.describe() if registry.trust.restricted else None
    suites = [
        suite
        for suite in sorted(suites, key=lambda suite: (suite.entry.key, suite.entry.distribution))
        if (not wanted or suite.entry.distribution in wanted)
        and (kind is None or suite.entry.key.startswith(f"{kind}:"))
    ]
    (listing if as_text else as_json).components(
        infos, trusted, _stray(registry, kind, wanted), suites
    )


def _stray(registry: Registry, kind: str | None, wanted: set[str]) -> list[tuple[str, str, str]]:
    """The entry points in a ``seamline.*`` group seamline does not read (``seamline.monitors``,
    a plural), as ``(group, name, distribution)``: never loaded, and listed nowhere else.
    With ``--kind``, those whose group begins as the kind's does."""
    from seamline.core import group_of

    return [
        (group, name, owner)
        for group, name, owner in registry.stray
        if (not wanted or owner in wanted) and (kind is None or group.startswith(group_of(kind)))  # type: ignore[arg-type]
    ]


def _auto_order(registry: Registry, wanted: set[str]) -> None:
    """The Markdown table of the order ``auto`` tries the usable attentions in."""
    from seamline.adapters.cli.render.console import error, raw
    from seamline.core import auto_order_table

    attentions = []
    unusable = registry.unusable("attention")
    for info in registry.entries("attention"):
        if wanted and info.distribution not in wanted:
            continue
        if info.name in unusable and info.status != "untrusted":  # said, as a run says it
            error(
                f"attention {info.name!r} ({info.distribution} {info.version}) is left out: "
                f"it is {unusable.pop(info.name)}",
                label="warning",
            )
        if not info.usable:
            continue
        try:  # one whose constructor raises is left out of auto, as a run leaves it out
            attentions.append(registry.create("attention", info.name))
        except Exception as err:
            error(
                f"attention {info.name!r} ({info.distribution} {info.version}) is left out: "
                f"it failed to build ({type(err).__name__}: {str(err)[:200]})",
                label="warning",
            )
    raw(auto_order_table(attentions))  # type: ignore[arg-type]
