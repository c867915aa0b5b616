"""Outputs that would overwrite what the run reads: refused while the pipeline is validated.

A sink publishes by renaming over its path, and a traces file is opened for writing,
so an output named like an input destroys it: ``--set sink.with.path=victim.yaml``
replaced the pipeline file with JSON lines, ``sink.with.path=corpus/d1.txt`` one of the
documents being embedded, and both runs exited 0. An output inside a loader's input
folder is refused too, whether or not the loader's pattern matches it today: the next
run would read it as a document where it does (and a resume find the input changed),
and a pattern is one ``--set`` away from matching it.

What a run reads is found as the input fingerprint finds it, from the types of the
loader's configuration (a ``Path`` field, a field typed ``InputGlob``), plus the
pipeline file; what it writes, from the sink's configuration (its ``Path`` fields and,
for a sink built on the sink kit, the errors file and manifest it derives) and the
traces file. So a third party's loader or sink is covered as far as its
configuration's types say, and core names no component.

The traces file is checked wherever it is named: ``telemetry.traces_file``, or, when the
jsonl exporter is chosen, its default ``$SEAMLINE_TRACES_FILE`` or
``seamline-trace.jsonl`` (:meth:`TelemetrySettings.traces_file_in`, the exporter's own
answer). ``SEAMLINE_TRACES_FILE=docs/a.txt`` emptied an input document and filled it with
spans, and ``=p.yaml`` replaced the pipeline file, both runs exiting 0, while the same
name given to the field was refused. A file is compared by what it is as well as by its
name: a hard link to the pipeline file, named as the traces file, emptied it too.

Nor may the traces file be one of the hidden files a sink keeps beside each name it
publishes (``out/.emb.jsonl.lock``, ``.emb.jsonl.checkpoint``, the partial and staging
files and folders, every one named ``.<name>.*``): ``SEAMLINE_TRACES_FILE=out/.emb.jsonl.lock``
took the sink's lock first, and the run was refused with "another run (pid ?) is writing
to out/emb.jsonl", naming a run that did not exist.

And what stands at the traces file's name is asked as the exporter asks it before the run
(:func:`seamline.core.traces_file.traces_file_problem`): a directory, a FIFO, a file with
other names, or a name under a file (``afile/t.jsonl``) passed ``validate``, and only the
run refused it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import BaseModel

from seamline.contracts import ConfigError
from seamline.contracts.input_files import named_input_paths
from seamline.contracts.loader import input_glob_files
from seamline.contracts.sink_kit import OutputConfig
from seamline.contracts.sink_kit import located as on_disk
from seamline.contracts.untrusted import cut
from seamline.core.config.pattern import would_match
from seamline.core.traces_file import traces_file_problem

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
    outside: str = ""
    """Where it is set outside the document (an environment variable), else ""."""
    fix: str = "Write the output elsewhere"
    """What the message asks of the user."""
    traces: bool = False
    """Whether it is the traces file (compared with the other outputs too)."""

    def where(self, located: Located) -> str:
        """The error's location: the environment variable, or the place in the document."""
        return self.outside or located.where(self.place)


_TRACES_FIX = "Name another traces file (telemetry.traces_file or SEAMLINE_TRACES_FILE)"


def _traces(located: Located, spec: PipelineSpec, environ: Mapping[str, str]) -> _Entry | None:
    """The traces file, placed where it is named; None when nothing names one and the jsonl
    exporter, which would write the default, is not chosen."""
    settings = spec.telemetry
    if settings.traces_file:
        at = ("telemetry", "traces_file")
        return _Entry("telemetry.traces_file", Path(settings.traces_file), at, traces=True)
    if not settings.exports_jsonl(environ):
        return None
    path = Path(settings.traces_file_in(environ))
    if environ.get(settings.traces_file_variable):
        variable = f"${settings.traces_file_variable}"
        return _Entry("the traces file", path, (), outside=variable, fix=_TRACES_FIX, traces=True)
    # The default name: placed where the jsonl exporter was chosen.
    chosen = ("telemetry", "traces")
    by = located.where(chosen) if settings.traces is not None else "$OTEL_TRACES_EXPORTER"
    label = "the default traces file"
    return _Entry(label, path, chosen, outside=by, fix=_TRACES_FIX, traces=True)


def _outputs(
    located: Located, spec: PipelineSpec, sink_config: BaseModel, environ: Mapping[str, str]
) -> list[_Entry]:
    entries = [
        _Entry(f"sink.with.{name}", value, ("sink", "with", name))
        for name in type(sink_config).model_fields
        if isinstance(value := getattr(sink_config, name), Path)
    ]
    if isinstance(sink_config, OutputConfig):
        at = ("sink", "with", "path")
        entries.append(_Entry("the manifest", sink_config.manifest_path(), at))
        fields = type(sink_config).model_fields
        entries.extend(  # derived files (the npy sink's default index), placed at path
            _Entry(label, path, at)
            for label, path in sink_config.other_outputs()
            if label not in fields
        )
        if sink_config.errors_path is None:
            entries.append(_Entry("the errors file", sink_config.resolved_errors_path(), at))
    traces = _traces(located, spec, environ)
    if traces is not None:
        entries.append(traces)
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
    named: list[tuple[str, Path | str, str]] = [
        (e.label, e.path, e.where(located)) for e in outputs
    ]
    named += [(label, path, located.where(place)) for label, path, place in reads if label]
    return [
        ConfigError(
            f"{label} ({cut(repr(str(path)))}) holds a NUL byte, which no file or folder "
            "name may hold: remove it",
            where,
        )
        for label, path, where in named
        if "\0" in str(path)
    ]


def _collision(output: Path, label: str, read: Path | str) -> str:
    """How ``output`` meets the input ``read`` (named ``label``; "" for the pipeline
    file), or "" when it does not."""
    shown = repr(str(read))
    if isinstance(read, str):  # a glob pattern: the files it matches today, or would
        if any(on_disk(Path(name)) == output for name in input_glob_files(read)):
            return f"is one of the files {label} matches ({shown})"
        if would_match(read, output):  # the next run would read what this one writes
            return f"would be one of the files {label} matches ({shown})"
        return ""
    real = Path(os.path.realpath(read))
    if not label:
        return f"is the pipeline file ({shown})" if _same_file(output, real) else ""
    if real.is_dir():
        return (
            f"is inside the folder {label} names ({shown})" if output.is_relative_to(real) else ""
        )
    return f"is the file {label} names ({shown})" if _same_file(output, real) else ""


def _same_file(output: Path, read: Path) -> bool:
    """Whether ``output`` names the file ``read`` names: by path, or, for a file that has
    another name (a hard link), by device and inode: a traces file hard-linked to the
    pipeline file emptied it, though their paths differ."""
    if output == read:
        return True
    try:
        return os.path.samefile(output, read)
    except (OSError, ValueError):  # either does not exist (yet): no file to share
        return False


def _sink_companion(located: Located, trace: _Entry, sink_config: BaseModel) -> list[ConfigError]:
    """A problem if the traces file is, or lies inside, a hidden file or folder the sink
    keeps beside a name it publishes (``.<name>.lock``, ``.checkpoint``, ``.partial...``,
    ``.shards``): the kit's names for its lock, checkpoint and staging, one ``.<name>.``
    prefix for all; or lies inside a folder the sink publishes (a LanceDB table, where
    ``run`` wrote its spans among the table's files)."""
    if not isinstance(sink_config, OutputConfig):
        return []
    output = on_disk(trace.path)
    for what, name in sink_config.published_names():
        published = on_disk(name)
        if output != published and output.is_relative_to(published):  # a table's folder
            return [
                ConfigError(
                    f"{trace.label} ({str(trace.path)!r}) is inside {_named(what)} "
                    f"({str(name)!r}), a folder the sink publishes (a LanceDB table), whose "
                    f"files it writes and replaces. {_TRACES_FIX}",
                    trace.where(located),
                )
            ]
        if not output.is_relative_to(published.parent) or output == published:
            continue
        first = output.relative_to(published.parent).parts[0]
        if first.startswith(f".{published.name}."):
            return [
                ConfigError(
                    f"{trace.label} ({str(trace.path)!r}) is one of the sink's own files for "
                    f"{_named(what)} ({str(name)!r}): its lock, checkpoint or staging, named "
                    f"'.{published.name}.*', which the sink writes and holds while it runs. "
                    f"{_TRACES_FIX}",
                    trace.where(located),
                )
            ]
    return []


def _what_is_there(
    located: Located, spec: PipelineSpec, trace: _Entry, environ: Mapping[str, str] | None
) -> list[ConfigError]:
    """A problem if the jsonl exporter, when chosen, would refuse what is at the traces
    file's name (a directory, a FIFO, a file with other names, a file where a folder of
    it must be): the run refused it, before its work, after ``validate`` said ok."""
    if not spec.telemetry.exports_jsonl(os.environ if environ is None else environ):
        return []
    problem = traces_file_problem(trace.path)
    return [] if problem is None else [ConfigError(problem, trace.where(located))]


def _named(what: str) -> str:
    """``published_names``' labels in a sentence: ``path`` is the sink's ``path``."""
    return "sink.with.path" if what == "path" else what


def overlap_problems(
    located: Located,
    spec: PipelineSpec,
    loader_config: BaseModel,
    sink_config: BaseModel,
    environ: Mapping[str, str] | None = None,
) -> list[ConfigError]:
    """Every output that is, or lies inside, something the run reads; or is another output.

    ``environ`` (default: this process's) is where the traces file's defaults are read,
    as the exporter will read them.
    """
    outputs = _outputs(located, spec, sink_config, os.environ if environ is None else environ)
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
                        f"what it reads, or read its own output. {entry.fix}",
                        entry.where(located),
                    )
                )
                reported.add(entry.place)
                break
    for trace in (e for e in outputs if e.traces):
        problems.extend(_what_is_there(located, spec, trace, environ))
        problems.extend(_sink_companion(located, trace, sink_config))
        for entry in outputs:
            if entry is not trace and on_disk(entry.path) == on_disk(trace.path):
                problems.append(
                    ConfigError(
                        f"{trace.label} ({str(trace.path)!r}) is {entry.label} "
                        f"({str(entry.path)!r}): one would overwrite the other. Give it "
                        "another name",
                        trace.where(located),
                    )
                )
    return problems
