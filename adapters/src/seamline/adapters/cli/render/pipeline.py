"""What ``validate`` prints, and the lines several commands end with: where each component
comes from (provenance) and which installed ones trust kept out."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamline.adapters.cli.render.console import consoles, line

if TYPE_CHECKING:
    from seamline.core import Registry, ResolvedPipeline


def validated(pipeline: Path, resolved: ResolvedPipeline, registry: Registry) -> None:
    """The components a valid pipeline resolved to, one stage a line."""
    from seamline.core import AttentionMode, pipeline_provenance

    spec = resolved.spec
    out = consoles.out
    line(("ok", "green"), f" {pipeline}: pipeline {spec.pipeline!r}", console=out)
    line(f"  loader    {resolved.loader.name}", console=out)
    line(f"  model     {resolved.model.name}", console=out)
    attention = ", ".join(a.name for a in resolved.attention.candidates)
    mode = (
        "explicit"
        if resolved.attention.mode is AttentionMode.EXPLICIT
        else f"{spec.attention.use!s} → candidates"
    )
    line(f"  attention {mode}: {attention}", console=out)
    line(f"  monitors  {', '.join(m.name for m in resolved.monitors) or '-'}", console=out)
    line(f"  sink      {resolved.sink.name}", console=out)
    executor = resolved.executor
    named = spec.run.executor is not None
    shown = f"{executor.name if executor else '-'}{'' if named else ' (default)'}"
    line(f"  executor  {shown}", console=out)
    provenance(pipeline_provenance(resolved))
    untrusted(registry)


def provenance(record: Mapping[str, Any]) -> None:
    """The provenance lines: each component's distribution and version, the pipeline's hashes."""
    from seamline.core import describe_provenance

    out = consoles.out
    for text in describe_provenance(dict(record)):
        line(f"  {text}", console=out, soft_wrap=True)


def untrusted(registry: Registry) -> None:
    """Say which installed components trust shut out (they were not imported)."""
    shut_out = [info for info in registry.entries() if info.status == "untrusted"]
    if not shut_out:
        return
    names = ", ".join(f"{i.kind} {i.name} ({i.distribution} {i.version})" for i in shut_out)
    line(
        f"  untrusted, not imported: {names}; trusted distributions: {registry.trust.describe()}",
        soft_wrap=True,
    )
