"""What a resumed run must still match: the pipeline's sections and the input's files.

A run records, in the manifest its sink receives at start (and so in every
checkpoint), one hash per section of the resolved pipeline that decides what is
written (and one per setting, by which a refusal names the setting), the negotiated
precision, and a fingerprint of the input. ``--resume`` compares them with the run's
own (the first-party sinks do, in ``components/sinks/_checkpoint.py``): a pipeline
or an input that changed since the checkpoint would splice two different outputs
into one, so the sink refuses, naming what changed.

The input fingerprint needs no help from the loader beyond the types of its
configuration: every path in it (a field typed ``Path``) is fingerprinted by the
sorted list of ``(relative path, size, mtime)`` of the regular files under it
(itself, if it is a file), every glob pattern (a field typed
:data:`~seamline.contracts.loader.InputGlob`) by the same list for the files it
matches (:func:`~seamline.contracts.loader.input_glob_files`, the loader's own
listing), and a folder that a pattern picks files from (a field marked
:class:`~seamline.contracts.loader.InputGlobUnder` names it) by the files the pattern
matches in it (:func:`~seamline.contracts.loader.input_glob_under`), all hashed.
Contents are not read, so it costs a ``stat`` per file (two for a pattern's match: the
pattern's own test that it is a file, then its size and times). Inputs named otherwise
(a list of texts in the configuration) are covered by the loader section's hash.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path, PurePath
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from seamline.contracts.input_files import Under, input_entries, input_files
from seamline.core.config.spec import AttentionMode, PipelineSpec

if TYPE_CHECKING:
    from seamline.core.config.resolve import ComponentChoice, ResolvedPipeline

SECTIONS = ("loader", "model", "attention", "sink", "run")
"""The sections that decide what a run writes (monitors and telemetry only observe it).
The precision, which decides it too, is hashed as chosen (see :func:`run_inputs`)."""


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


PACE = {"run": ("prefetch", "in_flight", "executor", "checkpoint_every")}
"""Settings that decide how fast or where a run goes and never what it writes (how far
host work and the device run ahead of the sink, which machines compute the shards, how
often a commit is made): left out of the hashes, so a resume may change them. (The
number of shards does change a staged run, and is checked on its own.)"""


def pipeline_hashes(spec: PipelineSpec | dict[str, Any]) -> dict[str, str]:
    """One short hash per section in :data:`SECTIONS` of the resolved pipeline (its spec as
    written, or :func:`settled_spec`), without the settings in :data:`PACE`."""
    dumped = _dumped(spec)
    for section, names in PACE.items():
        for name in names:
            dumped[section].pop(name, None)
    return {section: _digest(dumped.get(section)) for section in SECTIONS}


def input_fingerprint(config: BaseModel) -> dict[str, Any] | None:
    """The loader's input: its paths and one hash of their files (None without paths).

    ``listed`` says when they were listed, the newest file's time then (the later of its
    modification and change times: ``InputFile.changed_ns``), how many files there were,
    which paths are glob patterns and which folders a pattern picks files from (``under``:
    ``[index, pattern]`` pairs): not compared (every run lists at another time), but what
    a refused resume names the files changed since with
    (:mod:`seamline.contracts.input_files`).
    """
    entries = input_entries(config)
    if not entries:
        return None
    paths = [str(entry.root if isinstance(entry, Under) else entry) for entry in entries]
    at = time.time_ns()  # before the listing: a file edited while it runs counts as after
    found = [sorted(input_files(entry)) for entry in entries]
    listing = [  # names, sizes and modification times: a folder copied with its times resumes
        [path, [[file.name, file.size, file.mtime_ns] for file in files]]
        for path, files in zip(paths, found, strict=True)
    ]
    listed = {
        "at": at,
        "newest": max((file.changed_ns for files in found for file in files), default=0),
        "count": sum(len(files) for files in found),
        "patterns": [index for index, entry in enumerate(entries) if isinstance(entry, str)],
        "under": [
            [index, entry.pattern]
            for index, entry in enumerate(entries)
            if isinstance(entry, Under)
        ],
    }
    return {"paths": paths, "files": _digest(listing), "listed": listed}


def setting_hashes(spec: PipelineSpec | dict[str, Any]) -> dict[str, str]:
    """One short hash per setting of the sections in :data:`SECTIONS` (without those in
    :data:`PACE`), by its dotted name (``run.batch_size``, ``model.with.pooling``).

    So that a refused resume names the setting that changed: by section alone it said
    "the pipeline file's run section changed" for a ``--set run.batch_size=8``. Hashes,
    never values: the checkpoint and the manifest would hold a secret a value was filled
    with from the environment, and a list of texts in a loader's ``with:`` would grow
    them without bound. A list is one setting.
    """
    dumped = _dumped(spec)
    found: dict[str, str] = {}

    def walk(name: str, value: Any) -> None:
        if isinstance(value, dict) and value:
            for key, item in value.items():
                walk(f"{name}.{key}", item)
        else:
            found[name] = _digest(value)

    for section in SECTIONS:
        values = dict(dumped.get(section) or {})
        for pace in PACE.get(section, ()):
            values.pop(pace, None)
        walk(section, values)
    return found


def _dumped(spec: PipelineSpec | dict[str, Any]) -> dict[str, Any]:
    """The spec as JSON data (a copy: the hashes pop settings from it)."""
    if isinstance(spec, PipelineSpec):
        return spec.model_dump(mode="json", by_alias=True)
    copied: dict[str, Any] = json.loads(json.dumps(spec, default=str))
    return copied


def _settled(choice: ComponentChoice, written: Any) -> dict[str, Any]:
    """A component's settings as validated, those equal to its defaults left out; a text
    setting as the ``written`` ``with:`` holds it (:func:`_as_run`), a path's in one of
    its spellings (:func:`_spelled`).

    Validated, so that one value is one hash however it was typed: ``"${MAXLEN:-64}"``,
    ``'64'`` and ``64`` are the integer 64 to an integer setting, and ``128.0`` is 128,
    where hashing what was written refused a ``--resume`` of the same run ("the pipeline's
    setting model.with.max_length ... changed") and changed ``spec_sha256``.
    """
    config = choice.asked if choice.asked is not None else choice.config  # not what pinned
    settled = config.model_dump(mode="json", by_alias=True, exclude_defaults=True)
    given = written if isinstance(written, dict) else {}
    paths = _path_settings(config)
    return {
        key: _as_run(value, _spelled(given[key]) if key in paths else given[key])
        if key in given
        else value
        for key, value in settled.items()
    }


def _path_settings(config: BaseModel) -> set[str]:
    """The names (as written: aliases) of the settings ``config`` holds as paths (a ``Path``,
    or a list of them: ``NamedPath``, ``OutputPath``), whatever the field is called."""
    names: set[str] = set()
    for name, field in type(config).model_fields.items():
        value = getattr(config, name)
        values = value if isinstance(value, list | tuple) else [value]
        if values and all(isinstance(v, Path) for v in values):
            names.add(field.serialization_alias or field.alias or name)
    return names


def _spelled(written: Any) -> Any:
    """A path's text as written, in one spelling of the many that name it relatively.

    ``corpus``, ``corpus/`` (the slash a shell's completion adds), ``./corpus`` and
    ``corpus//`` name one folder, but hashed as written they were four settings: a
    ``--resume`` given ``corpus/`` was refused ("loader.with.root ... changed"). Only
    ``.``, a trailing slash and repeated slashes go, as ``Path`` drops them (so ``corpus``
    keeps its hash); ``..`` stays (through a link it is not the folder above), the text
    stays relative (a moved folder resumes) and ``~`` unexpanded. A list item by item.
    """
    if isinstance(written, str):
        return str(PurePath(written))
    if isinstance(written, list):
        return [_spelled(item) for item in written]
    return written


def _as_run(value: Any, written: Any) -> Any:
    """``value`` (validated, as JSON data), but a text written as text kept as written.

    As written, not as validated, where both are text: a configuration makes a relative
    path absolute, and a run resumed from another working directory, or after its folder
    was moved (given the same relative paths), is the same run (pipelines.md says it
    resumes). Everything else is hashed as validated: a number, a boolean, a number
    filled into text by ``${VAR}``. Mappings and lists are settled item by item.
    """
    if isinstance(value, str):
        return written if isinstance(written, str) else value
    if isinstance(value, dict) and isinstance(written, dict):
        return {
            key: _as_run(item, written[key]) if key in written else item
            for key, item in value.items()
        }
    if isinstance(value, list) and isinstance(written, list) and len(value) == len(written):
        return [_as_run(item, given) for item, given in zip(value, written, strict=True)]
    return value


def settled_spec(pipeline: ResolvedPipeline) -> dict[str, Any]:
    """The resolved spec as what runs: each component's ``with:`` without the settings
    equal to their defaults once validated (:func:`_settled`); the executor as resolved
    (``local`` when none is named); a precision list of one, that precision.

    So that spelling out a default is not a change: ``--set attention.with.isa=auto`` (the
    documented default) refused a ``--resume`` ("settings attention.with,
    attention.with.isa changed since that checkpoint"), and ``precision: [float32]``,
    ``run.executor.use=local`` or ``threads: 0`` changed ``spec_sha256``, which "changes
    when what runs changes". A list or ``auto`` attention's settings are those of the
    candidates whose settings are not all defaults.
    """
    dumped = pipeline.spec.model_dump(mode="json", by_alias=True)
    for section in ("loader", "model", "sink"):
        dumped[section]["with"] = _settled(getattr(pipeline, section), dumped[section]["with"])
    dumped["monitors"] = [
        {**ref, "with": _settled(choice, ref["with"])}
        for ref, choice in zip(dumped["monitors"], pipeline.monitors, strict=True)
    ]
    attention, written = pipeline.attention, dumped["attention"]["with"]
    if attention.mode is AttentionMode.EXPLICIT:
        dumped["attention"]["with"] = _settled(attention.candidates[0], written)
    else:
        settled = {c.name: _settled(c, written.get(c.name)) for c in attention.candidates}
        dumped["attention"]["with"] = {name: value for name, value in settled.items() if value}
    executor, named = pipeline.executor, dumped["run"]["executor"] or {}
    dumped["run"]["executor"] = (
        None
        if executor is None
        else {"use": executor.name, "with": _settled(executor, named.get("with"))}
    )
    use = dumped["precision"]["use"]
    if isinstance(use, list) and len(use) == 1:
        dumped["precision"]["use"] = use[0]
    return dumped


def run_inputs(
    spec: PipelineSpec,
    loader_config: BaseModel,
    precision: str = "float32",
    why: str | None = None,
    settled: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """What the manifest's ``inputs`` records: the pipeline's hashes, the precision, the input.

    The precision is hashed as negotiated, not as written: ``auto`` that chose float32
    wrote what ``float32`` writes, and a resume must compute in the precision the
    checkpoint's vectors were made in. It is recorded too (``chosen``, with the setting
    ``asked`` and ``why``, the decision's own words), so that a refusal says what it was
    and is: a resume under ``$SEAMLINE_CPU_FEATURES_HIDDEN`` was refused for "the
    pipeline file's precision section" of a file nobody had changed.

    With ``settled`` (:func:`settled_spec`), ``resolved`` holds the hashes of the settings
    as they run, which a resume compares when its checkpoint has them too; ``pipeline``
    and ``settings`` stay those of the spec as written, which a checkpoint of an older
    seamline is compared with (``changed_inputs`` in the sink kit).
    """
    hashes = {**pipeline_hashes(spec), "precision": _digest(precision)}
    chosen = {"chosen": precision, "asked": spec.precision.use, "why": why or precision}
    inputs: dict[str, Any] = {"pipeline": hashes, "settings": setting_hashes(spec)}
    if settled is not None:
        resolved = {"pipeline": pipeline_hashes(settled), "settings": setting_hashes(settled)}
        inputs["resolved"] = resolved
    return {**inputs, "precision": chosen, "input": input_fingerprint(loader_config)}


def resolved_inputs(pipeline: ResolvedPipeline, loader_config: BaseModel) -> dict[str, Any]:
    """:func:`run_inputs` of a resolved pipeline, in the precision it negotiated."""
    decision = pipeline.precision
    why = None if decision is None else decision.describe()
    settled = settled_spec(pipeline)
    return run_inputs(pipeline.spec, loader_config, pipeline.chosen_precision, why, settled)
