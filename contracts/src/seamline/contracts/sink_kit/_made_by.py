"""What made an output, against this run, in words: one comparison for every sink.

An output records what computed its vectors: the manifest's ``model``, ``precision``
and ``versions`` (a checkpoint keeps the model and the versions, and the precision
among its ``inputs``). Two ways of adding to it must refuse a run that would compute
them otherwise, by the same rule: ``--resume`` (the checkpoint) and the lancedb sink's
``append``, ``upsert`` and ``sync`` into a published table. The merge modes once
compared the model alone and took vectors of another precision or another seamline
into a table whose manifest then described only the last run's (a query embedded in
bfloat16 against float32 rows). :func:`made_by_another` is that rule.

A checkpoint and a staged run's record keep ``environment`` too: the variables that change
what the compiled steps compute (``XLA_FLAGS``, ...: the manifest's
``provenance.environment``). A resume under ``--xla_cpu_enable_fast_math=true`` was once
taken, and the published manifest said the whole output was computed so.

A pipeline's settings are compared as hashes (:func:`changed_inputs`): one per
section, and, since 2026-12-05, one per setting, so that a refusal names the setting
that changed (``run.batch_size``) without a checkpoint ever holding a value, which may
be a secret filled from the environment.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, NamedTuple

from seamline.contracts.sink_kit._input_change import input_changed

UNRECORDED = "a seamline that did not record its versions (from before 2026-12-05)"
"""Who made an output or a checkpoint without ``versions``: they were first recorded
then (a staged run's record began a day later: its caller says so)."""

MAX_NAMED = 6
"""The most settings a refusal names; the rest are counted."""


def json_value(value: Any) -> Any:
    """``value`` as it reads back from JSON, so a stored value compares equal to a fresh one."""
    return json.loads(json.dumps(value, sort_keys=True, default=str))


class Maker(NamedTuple):
    """Why an output may not take this run's vectors: who ``made`` it, and the ``harm``
    of adding to it (``mix vectors of two models``); ``reinstall``: the command that puts
    back the versions it was made with, where that alone would let it resume ("" else);
    ``finish``: the seamline that made it, where another seamline did (its code digest, as
    ``seamline --version`` says it), which can resume it ("" else)."""

    made: str
    harm: str
    reinstall: str = ""
    finish: str = ""


def made_by_another(
    recorded: Mapping[str, Any], manifest: Mapping[str, Any], *, unrecorded: str = UNRECORDED
) -> Maker | None:
    """What made an output (``recorded``: a checkpoint or a published manifest), when it is
    not what makes this run's vectors (``manifest``, the run's), else None.

    Another seamline first (:func:`_another_seamline`), then the model, then the precision
    (where ``recorded`` has one: a checkpoint compares it among its ``inputs``), then the
    versions of what computes the vectors: all of the manifest's ``versions``, as
    ``--resume`` has compared them since they were recorded (an output that recorded none,
    from before 2026-12-05, is another's too).
    """
    model = json_value(manifest.get("model"))
    versions = json_value(manifest.get("versions"))
    another = _another_seamline(recorded, model, versions, unrecorded)
    if another is not None:
        return another
    if recorded.get("model") != model:
        changes = model_changes(recorded.get("model"), model)
        return Maker(f"another model configuration ({changes})", "mix vectors of two models")
    precision = manifest.get("precision")
    if "precision" in recorded and recorded["precision"] != precision:
        return Maker(
            f"a run computing in {recorded['precision']!r} precision (this run computes in "
            f"{precision!r})",
            "mix vectors of two precisions",
        )
    if versions is not None and recorded.get("versions") != versions:
        return Maker(
            versions_changed(recorded.get("versions"), versions, unrecorded=unrecorded),
            "mix vectors of two versions",
            reinstall_command(recorded.get("versions"), versions),
        )
    return _environment_changed(recorded.get("environment"), environment_of(manifest))


CODE = "seamline-code"
"""The digest of seamline's code among the ``versions`` (``seamline --version`` says it)."""


def _another_seamline(
    recorded: Mapping[str, Any], model: Any, versions: Any, unrecorded: str
) -> Maker | None:
    """Who made an output, where another seamline did (its code digest differs, or it
    recorded no versions), else None; any difference of its model record is said too.

    Compared before the model: a seamline records a model's settings as it knows them, so
    an older one's record differs from this one's (a setting it did not have) for the
    same model. A resume of an older seamline's checkpoint was refused as "another model
    configuration (model.with.window_edges was not recorded ...)", offering only
    ``--restart``, which throws the committed work away; finishing it with the seamline
    that started it keeps it.
    """
    if not isinstance(versions, dict) or CODE not in versions:
        return None  # this run does not say which seamline it is: nothing to compare
    then = recorded.get("versions")
    if isinstance(then, dict) and then.get(CODE) == versions[CODE]:
        return None
    made = versions_changed(then, versions, unrecorded=unrecorded)
    if recorded.get("model") != model:
        made += f"; its model record: {model_changes(recorded.get('model'), model)}"
    code = then.get(CODE) if isinstance(then, dict) else None
    finish = (
        f"the seamline whose code is {code} (`seamline --version` says it; one from before "
        "2026-12-07: `python -c 'from seamline.core.code_digest import code_digest; "
        "print(code_digest())'`)"
        if isinstance(code, str) and code
        else "the seamline that started it"
    )
    return Maker(made, "mix vectors of two versions", finish=finish)


def environment_of(manifest: Mapping[str, Any]) -> dict[str, str] | None:
    """The numerics environment a run's ``manifest`` records (``provenance.environment``)."""
    provenance = manifest.get("provenance")
    found = provenance.get("environment") if isinstance(provenance, Mapping) else None
    return json_value(found) if isinstance(found, Mapping) else None


def _environment_changed(recorded: Any, current: dict[str, str] | None) -> Maker | None:
    """Who made an output under other numerics variables (``XLA_FLAGS``), or None: also when
    ``recorded`` is None (written before 2026-12-06) or this run does not say."""
    if not isinstance(recorded, dict) or current is None or recorded == current:
        return None

    def shown(values: Mapping[str, Any], name: str) -> str:
        return repr(values[name]) if name in values else "unset"

    changes = [
        f"{name} {shown(recorded, name)} then, {shown(current, name)} now"
        for name in sorted({*recorded, *current})
        if recorded.get(name) != current.get(name)
    ]
    return Maker(
        f"a run under other numerics variables ({'; '.join(changes)})",
        "mix vectors computed under two numerics environments (resume with them as they were)",
    )


def versions_changed(
    recorded: Any, current: Mapping[str, Any], *, unrecorded: str = UNRECORDED
) -> str:
    """Who made an output, against this run, in words: each version that differs."""
    if not isinstance(recorded, dict):
        return unrecorded
    changes = [
        f"{name} {recorded.get(name) or 'not recorded'} then, {current.get(name) or 'absent'} now"
        for name in sorted({*recorded, *current})
        if recorded.get(name) != current.get(name)
    ]
    return f"another version of what computes it ({'; '.join(changes)})"


def reinstall_command(recorded: Any, current: Mapping[str, Any]) -> str:
    """``pip install jax==0.10.2 jaxlib==0.10.2``: what puts back the versions an output
    was made with, where every one that differs is a third party's that it recorded
    (not seamline's own: its code's digest names no version to install); "" else.

    A resume refused for a JAX change said only "run again with --restart", which
    discards what was committed; reinstalling the versions and resuming keeps it, and
    the refusal for a changed ``XLA_FLAGS`` already said the like."""
    if not isinstance(recorded, dict):
        return ""
    differ = sorted(n for n in {*recorded, *current} if recorded.get(n) != current.get(n))
    if not differ or any(
        n.startswith("seamline") or not isinstance(recorded.get(n), str) for n in differ
    ):
        return ""
    return "pip install " + " ".join(f"{n}=={recorded[n]}" for n in differ)


def resume_or_restart(maker: Maker, resume: str, restart: str) -> str:
    """The end of a resume's refusal by ``maker``: reinstall and resume, where that is a way
    (``resume``, ``restart``: how the caller names them), else start over."""
    if maker.reinstall:
        return (
            f"To keep what was committed, reinstall the versions it was made with "
            f"({maker.reinstall}) and run again with {resume}; or run again with {restart} "
            "to start over"
        )
    if maker.finish:
        return (
            f"To keep what was committed, finish it under {maker.finish}: run again with "
            f"{resume} there (then upgrade); or run again with {restart} to start over"
        )
    return f"Run again with {restart} to start over"


_UNSET = "unset (the model's default)"
"""A setting recorded as None: the model chose it (bert-encoder's ``pooling``: from the
checkpoint's files). Not an older seamline's gap: that is a setting not recorded at all."""


def _setting(settings: Mapping[str, Any], key: str, missing: str) -> str:
    if key not in settings:
        return missing
    value = settings[key]
    return _UNSET if value is None else repr(value)


def model_changes(recorded: Any, current: Any) -> str:
    """How an output's ``model`` (``use`` and ``with``) differs from this run's, in words.

    Each setting that differs, then and now: ``model.with.sha256 was '53aa…', now
    '7f1c…'`` is the weights replaced under a run that pinned them (model contract 1.4).
    A setting the output does not record at all is an older seamline's (which had no
    such setting); one recorded as None was left to the model's default, which this
    comparison cannot resolve: it says so, never that an older seamline wrote it.
    """
    then = recorded if isinstance(recorded, dict) else {}
    now = current if isinstance(current, dict) else {}
    said: list[str] = []
    if then.get("use") != now.get("use"):
        said.append(f"model.use was {then.get('use')!r}, now {now.get('use')!r}")
    then_with, now_with = then.get("with") or {}, now.get("with") or {}
    unrecorded = not said  # so far: only settings the writer did not have
    if isinstance(then_with, dict) and isinstance(now_with, dict):
        for key in sorted({*then_with, *now_with}):
            if key in then_with and key in now_with and then_with[key] == now_with[key]:
                continue
            unrecorded = unrecorded and key not in then_with
            was = _setting(then_with, key, "not recorded")
            said.append(f"model.with.{key} was {was}, now {_setting(now_with, key, 'absent')}")
    if said and unrecorded:  # the writer recorded none of them: an older seamline's output
        said[-1] += (
            " (settings the seamline that wrote it did not record: an older seamline's "
            "output, perhaps of the same model; this version cannot tell)"
        )
    return "; ".join(said) or f"{recorded!r}, now {current!r}"


# -- the pipeline's settings and the input ------------------------------------------------


def changed_inputs(recorded: Any, current: Any) -> list[str]:
    """What differs between an output's ``inputs`` (its manifest's, or its checkpoint's) and
    this run's, in words.

    ``inputs`` (written by the core at start) holds ``pipeline``: one hash per section of
    the resolved pipeline (the file with its ``${VAR}`` and ``--set``) and one of the
    negotiated precision; ``settings``: one hash per setting (see :func:`_settings`);
    ``precision``: the negotiated precision and why; and ``input``: the loader's paths and
    a hash of their files. What an older checkpoint lacks is not compared, or said by
    section. A refusal once blamed "the pipeline file's run section" for a ``--set
    run.batch_size=8``, and for a precision ``auto`` negotiated otherwise on the same file.

    Where both hold ``resolved`` (the same hashes of the settings as they run, defaults
    left out), the sections and settings are compared by it: spelling out a default is
    no change. An output of an older seamline has none, and is compared as written.
    """
    if not isinstance(recorded, dict) or not isinstance(current, dict):
        return []
    said: list[str] = []
    then, now_ = recorded.get("resolved"), current.get("resolved")
    if not isinstance(then, dict) or not isinstance(now_, dict):
        then, now_ = recorded, current
    before, now = _hashes(then), _hashes(now_)
    sections = [s for s in before if s != "precision" and before.get(s) != now.get(s)]
    if sections:
        said.append(_settings(then.get("settings"), now_.get("settings"), sections))
    before, now = _hashes(recorded), _hashes(current)
    if "precision" in before and before.get("precision") != now.get("precision"):
        said.append(_precision(recorded.get("precision"), current.get("precision")))
    changed = input_changed(recorded.get("input"), current.get("input"))
    if changed is not None:
        said.append(changed)
    return said


def _hashes(inputs: dict[str, Any]) -> dict[str, Any]:
    """The section hashes (``pipeline``) of ``inputs``, read as untrusted: {} if not a mapping."""
    found = inputs.get("pipeline")
    return found if isinstance(found, dict) else {}


def _settings(recorded: Any, current: Any, sections: list[str]) -> str:
    """The settings of ``sections`` that differ, by name (``run.batch_size``), where both
    sides hold one hash per setting; else the sections."""
    if isinstance(recorded, dict) and isinstance(current, dict):
        names = sorted(
            name
            for name in {*recorded, *current}
            if name.split(".")[0] in sections and recorded.get(name) != current.get(name)
        )
        if names:
            shown = ", ".join(names[:MAX_NAMED])
            more = f" and {len(names) - MAX_NAMED} more" if len(names) > MAX_NAMED else ""
            return (
                f"the pipeline's setting{'s' * (len(names) > 1)} {shown}{more} (in the "
                "file or a --set)"
            )
    plural = "s" * (len(sections) > 1)
    return (
        f"the pipeline's {', '.join(sections)} section{plural} (in the file, a --set or a "
        "${VAR} it reads)"
    )


def _precision(recorded: Any, current: Any) -> str:
    """The negotiated precision, then and now, and why where this run knows it."""
    then = recorded if isinstance(recorded, dict) else {}
    now = current if isinstance(current, dict) else {}
    if "chosen" not in then or "chosen" not in now:
        return "the precision the run computes in (as negotiated)"
    said = f"the precision the run computes in: {then['chosen']!r} then, {now['chosen']!r} now"
    asked = _asked(now.get("asked"))
    if then.get("asked") != now.get("asked"):
        return f"{said} (precision: {_asked(then.get('asked'))} then, {asked} now)"
    why = now.get("why")
    said += f" (precision: {asked} is unchanged; it negotiated otherwise in this environment"
    return said + (f": {why})" if isinstance(why, str) and why != now["chosen"] else ")")


def _asked(value: Any) -> str:
    """A precision setting as a pipeline writes it (``auto``, ``[bfloat16, float32]``)."""
    if isinstance(value, list):
        return f"[{', '.join(map(str, value))}]"
    return str(value)
