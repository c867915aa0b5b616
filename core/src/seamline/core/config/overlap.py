"""Outputs that would overwrite what the run reads: refused while the pipeline is validated.

A sink publishes by renaming over its path, and a traces file is opened for writing,
so an output named like an input destroys it: ``--set sink.with.path=victim.yaml``
replaced the pipeline file with JSON lines, ``sink.with.path=corpus/d1.txt`` one of the
documents being embedded, and both runs exited 0. An output inside a loader's input
folder is refused too: the next run would read it as a document, and a resume would
find the input changed (the input's fingerprint covers every file under the folder).

What a run reads is found as the input fingerprint finds it, from the types of the
loader's configuration (a ``Path`` field, a field typed ``InputGlob``), plus the
pipeline file; what it writes, from the sink's configuration (its ``Path`` fields and,
for a sink built on the sink kit, the errors file and manifest it derives) and the
``telemetry.traces_file``. So a third party's loader or sink is covered as far as its
configuration's types say, and core names no component.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from seamline.contracts import ConfigError
from seamline.contracts.loader import input_glob_files
from seamline.contracts.sink_kit import OutputConfig
from seamline.contracts.sink_kit import located as on_disk
from seamline.contracts.untrusted import cut
from seamline.core.fingerprint import named_input_paths

if TYPE_CHECKING:
    from seamline.core.config.located import Located
    from seamline.core.config.located import Path as DataPath
    from seamline.core.config.spec import PipelineSpec


@dataclass(frozen=True, slots=True)
class _Entry:
    label: str
    """How the message names it (``sink.with.path``, ``the manifest``)."""
    path: Path
    place: DataPath
    """Where in the pipeline document it is set (the error's location)."""


def _outputs(spec: PipelineSpec, sink_config: BaseModel) -> list[_Entry]:
    entries = [
        _Entry(f"sink.with.{name}", value, ("sink", "with", name))
        for name in type(sink_config).model_fields
        if isinstance(value := getattr(sink_config, name), Path)
    ]
    if isinstance(sink_config, OutputConfig):
        at = ("sink", "with", "path")
        entries.append(_Entry("the manifest", sink_config.manifest_path(), at))
        if sink_config.errors_path is None:
            entries.append(_Entry("the errors file", sink_config.resolved_errors_path(), at))
    traces = spec.telemetry.traces_file
    if traces:
        entries.append(_Entry("telemetry.traces_file", Path(traces), ("telemetry", "traces_file")))
    return entries


_Read = tuple[str, "Path | str", "DataPath"]
"""An input: how the message names it ("" for the pipeline file), its path or glob
pattern, and where in the pipeline document it is set."""


def _reads(located: Located, loader_config: BaseModel) -> list[_Read]:
    """``(label, input, place)``: the pipeline file, then each input of the loader's config."""
    reads: list[_Read] = []
    if os.path.isfile(located.source):
        reads.append(("", Path(located.source), ()))
    reads.extend(
        (f"loader.with.{name}", v, ("loader", "with", name))
        for name, v in named_input_paths(loader_config)
    )
    return reads


def _unnameable(located: Located, outputs: list[_Entry], reads: list[_Read]) -> list[ConfigError]:
    """A problem for each path holding a NUL byte, which no file may have.

    A field typed ``NamedPath`` or ``InputGlob`` refuses one where it is given; a plain
    ``Path`` in a third party's configuration does not, and ``os.path`` raised
    ``ValueError: embedded null byte`` on it here, as a traceback. Such paths are
    refused at their place and left out of the comparisons.
    """
    named = [(e.label, e.path, e.place) for e in outputs] + [r for r in reads if r[0]]
    return [
        ConfigError(
            f"{label} ({cut(repr(str(path)))}) holds a NUL byte, which no file or folder "
            "name may hold: remove it",
            located.where(place),
        )
        for label, path, place in named
        if "\0" in str(path)
    ]


def _collision(output: Path, label: str, read: Path | str) -> str:
    """How ``output`` meets the input ``read`` (named ``label``; "" for the pipeline
    file), or "" when it does not."""
    shown = repr(str(read))
    if isinstance(read, str):  # a glob pattern: the files it matches today
        if any(on_disk(Path(name)) == output for name in input_glob_files(read)):
            return f"is one of the files {label} matches ({shown})"
        return ""
    real = Path(os.path.realpath(read))
    if not label:
        return f"is the pipeline file ({shown})" if output == real else ""
    if real.is_dir():
        return (
            f"is inside the folder {label} names ({shown})" if output.is_relative_to(real) else ""
        )
    return f"is the file {label} names ({shown})" if output == real else ""


def overlap_problems(
    located: Located, spec: PipelineSpec, loader_config: BaseModel, sink_config: BaseModel
) -> list[ConfigError]:
    """Every output that is, or lies inside, something the run reads; or is another output."""
    outputs = _outputs(spec, sink_config)
    reads = _reads(located, loader_config)
    problems = _unnameable(located, outputs, reads)
    outputs = [entry for entry in outputs if "\0" not in str(entry.path)]
    reads = [read for read in reads if "\0" not in str(read[1])]
    reported: set[DataPath] = set()  # a path's derived files add nothing to its own problem
    for entry in outputs:
        output = on_disk(entry.path)
        for label, read, _ in reads:
            if entry.place in reported:
                break
            how = _collision(output, label, read)
            if how:
                problems.append(
                    ConfigError(
                        f"{entry.label} ({str(entry.path)!r}) {how}: the run would overwrite "
                        "what it reads, or read its own output. Write the output elsewhere",
                        located.where(entry.place),
                    )
                )
                reported.add(entry.place)
                break
    traces = [e for e in outputs if e.label == "telemetry.traces_file"]
    for trace in traces:
        for entry in outputs:
            if entry is not trace and on_disk(entry.path) == on_disk(trace.path):
                problems.append(
                    ConfigError(
                        f"telemetry.traces_file ({str(trace.path)!r}) is {entry.label} "
                        f"({str(entry.path)!r}): one would overwrite the other. Give it "
                        "another name",
                        located.where(trace.place),
                    )
                )
    return problems
