"""What ``validate`` and ``explain`` print with ``--format json``: one JSON document each.

The two share a frame, so that a script checks a pipeline the same way whichever it
asked: ``schema`` (``seamline.validate/1``, ``seamline.explain/1``), ``pipeline`` (the
file as given), ``ok``, ``name``, ``provenance``, ``untrusted``, ``trusted``,
``allowlists`` and ``errors``, every key present whatever the outcome (null or empty
when it does not apply). A pipeline that does not validate is still one document on stdout, its
``errors`` each with ``file``, ``line``, ``column``, ``override``, ``message`` and
``fix``, and the exit code is still 2. As for the other schemas (:mod:`.as_json`), a
field may be added under the same version, never renamed or removed.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from seamline.adapters.cli.render.console import json_line
from seamline.contracts.errors import ConfigError, UserError
from seamline.contracts.json_safe import json_safe
from seamline.core import Place

if TYPE_CHECKING:
    from seamline.core import BucketPlan, Plan, PrecisionCandidate, Registry, ResolvedPipeline

VALIDATE_SCHEMA = "seamline.validate/1"
EXPLAIN_SCHEMA = "seamline.explain/1"

_UNKNOWN: dict[str, dict[str, Any]] = {
    VALIDATE_SCHEMA: {"components": None},
    EXPLAIN_SCHEMA: {"attention": None, "weights_loaded": None, "buckets": [], "precision": None},
}
"""Each schema's own keys, as a document that could not check the pipeline has them."""

_PLACE = re.compile(
    r"^(?P<file>.*):(?P<line>\d+):(?P<column>\d+)(?: \(with (?P<override>--set .*)\))?$"
)
"""A place in the file; a section's place names the overrides that changed a value inside
it (``p.yaml:3:34 (with --set model.with.max_length=16)``)."""
_NOWHERE: dict[str, Any] = {"file": None, "line": None, "column": None, "override": None}
"""An error's place when it has none."""
_SUGGESTION = re.compile(r"\((did you mean [^)]*\?)\)")
_CHOICES = re.compile(r"; ((?:allowed fields|available[\w ]*|candidates): .*)$")
_CLAUSE = re.compile(r"(?:; |: |\. )(?=[A-Za-z])")
_IMPERATIVE = frozenset(
    [
        "add",
        "ask",
        "change",
        "check",
        "choose",
        "convert",
        "create",
        "delete",
        "fix",
        "give",
        "install",
        "keep",
        "lower",
        "make",
        "move",
        "name",
        "pass",
        "point",
        "put",
        "quote",
        "raise",
        "register",
        "reinstall",
        "remove",
        "rename",
        "replace",
        "restart",
        "run",
        "set",
        "shorten",
        "start",
        "uninstall",
        "unset",
        "upgrade",
        "use",
        "write",
    ]
)
"""The verbs seamline's messages begin their advice with (``...: set it, or give a default``,
``: quote it for YAML inside the shell's quotes: --set ...``)."""
_IMPERATIVE_IT = frozenset(["end", "leave", "open", "close", "empty"])
"""Verbs that begin advice only with an object after them (``end it with a space``, ``leave it
out``): alone they may be a noun or an adjective (``end of stream``, ``empty segment``)."""
_PURPOSE = re.compile(r"^to [^,;:]*, (?:or )?([a-z-]+)")
"""Advice that says what it is for first: ``to pass it as a string, quote it ...``."""


def validated(pipeline: Path, resolved: ResolvedPipeline, registry: Registry) -> None:
    """A valid pipeline: the component each stage resolved to, and where they come from."""
    from seamline.core import AttentionMode

    executor = resolved.executor
    _print(
        _frame(VALIDATE_SCHEMA, pipeline, resolved, registry)
        | {
            "components": {
                "loader": resolved.loader.name,
                "model": resolved.model.name,
                "attention": {
                    "mode": str(resolved.attention.mode),
                    "explicit": resolved.attention.mode is AttentionMode.EXPLICIT,
                    "candidates": [choice.name for choice in resolved.attention.candidates],
                },
                "monitors": [monitor.name for monitor in resolved.monitors],
                "sink": resolved.sink.name,
                "executor": {
                    "name": executor.name if executor is not None else None,
                    "default": resolved.spec.run.executor is None,
                },
            }
        }
    )


def explained(
    pipeline: Path,
    plan: Plan,
    resolved: ResolvedPipeline,
    registry: Registry,
    precision: tuple[str, Sequence[PrecisionCandidate]],
) -> None:
    """The plan: its settings, then every bucket's candidates with verdicts and reasons,
    then the precision candidates."""
    mode, candidates = precision
    unserved = plan.unserved()
    _print(
        _frame(EXPLAIN_SCHEMA, pipeline, resolved, registry)
        | {
            "ok": unserved is None,
            "errors": errors_of(unserved) if unserved is not None else [],
            "attention": {
                "mode": str(plan.mode),
                "select": str(plan.select),
                "reference": plan.reference,
                "verify": plan.verify,
                "on_failure": plan.on_failure,
                "shadow_every": plan.shadow_every,
                "require_conformance": plan.require_conformance,
                "left_out": [{"name": name, "why": why} for name, why in plan.left_out.items()],
            },
            "weights_loaded": plan.weights_loaded,
            "buckets": [_bucket(bucket) for bucket in plan.buckets],
            "precision": _precision(mode, candidates),
        }
    )


def unservable(
    pipeline: Path,
    resolved: ResolvedPipeline,
    registry: Registry,
    precision: tuple[str, Sequence[PrecisionCandidate]],
    problem: UserError | str,
) -> None:
    """A valid pipeline that no precision candidate can serve: ``ok`` false with the run's
    error, and the candidates with their reasons, but no buckets: a plan would be in a
    precision the run never computes in."""
    _print(
        _frame(EXPLAIN_SCHEMA, pipeline, resolved, registry)
        | _UNKNOWN[EXPLAIN_SCHEMA]
        | {"ok": False, "errors": errors_of(problem), "precision": _precision(*precision)}
    )


def _precision(mode: str, candidates: Sequence[PrecisionCandidate]) -> dict[str, Any]:
    """The precision candidates as ``explain`` judged them, each with the gate's record."""
    return {
        "mode": mode,
        "candidates": [
            {
                "name": c.name,
                "ok": c.ok,
                "reasons": list(c.reasons),
                "figures": dataclasses.asdict(c.figures) if c.figures else None,
                "recorded": c.recorded,
            }
            for c in candidates
        ],
    }


def failed(schema: str, pipeline: Path, problem: UserError | str) -> None:
    """A pipeline that could not be checked: the frame, ``ok`` false, and every problem
    (or a component's failure, as its one line: :data:`~seamline.adapters.cli.errors.Report`)."""
    _print(
        _frame(schema, pipeline, None, None)
        | {"ok": False, "errors": errors_of(problem)}
        | _UNKNOWN[schema]
    )


def errors_of(problem: UserError | str) -> list[dict[str, Any]]:
    """Each problem a user error reports, with its place split out and the fix it proposes.

    A pipeline's errors come all at once (``PipelineConfigError.problems``); each
    ``ConfigError`` has a place: ``file:line:column`` in the file, a ``--set`` override
    or the file alone. Any other user error (an attention that cannot serve) has none.
    A rule of a whole section that fails after ``--set`` changed a value inside it has
    both: the section's place in the file, and the overrides. A component's failure (its
    one line, exit code 1: a plugin's model whose constructor raised) has no place and
    proposes no fix.
    """
    if isinstance(problem, str):
        return [_NOWHERE | {"message": problem, "fix": None}]
    problems = getattr(problem, "problems", None) or [problem]
    return [_error(one) for one in problems]


def _error(problem: UserError) -> dict[str, Any]:
    location = problem.location if isinstance(problem, ConfigError) else None
    message = problem.detail if isinstance(problem, ConfigError) else str(problem)
    place: dict[str, Any] = dict(_NOWHERE)
    if isinstance(location, Place):  # its parts, as it was made: never read back from text
        place |= {
            "file": location.file,
            "line": location.line,
            "column": location.column,
            "override": location.override,
        }
    elif location is not None:
        found = _PLACE.match(location)
        if found is not None:
            place |= {
                "file": found["file"],
                "line": int(found["line"]),
                "column": int(found["column"]),
                "override": found["override"],
            }
        elif location.startswith("--set"):
            place["override"] = location
        else:
            place["file"] = location
    return place | {"message": message, "fix": _fix(message)}


def _fix(message: str) -> str | None:
    """The correction a message proposes: the closest valid name, the valid choices, advice.

    seamline's messages write it as ``(did you mean 'x'?)``, a last clause
    ``; allowed fields: ...`` / ``; available: ...`` / ``; candidates: ...``, or a clause
    that begins with what to do (``: set it, or give a default as ...``, ``; lower
    stride or raise max_length``). A message that proposes none in these words gets
    null; it is always whole in ``message``.
    """
    parts = [found[1] for found in _SUGGESTION.finditer(message)]
    choices = _CHOICES.search(message)
    if choices is not None:
        parts.append(choices[1])
    else:
        clauses = _CLAUSE.split(message)[1:]
        advice = next((c for c in clauses if _advises(c)), None)
        if advice is not None:  # the advice and all that follows it
            parts.append(message[message.index(advice) :])
    return "; ".join(parts) or None


def _advises(clause: str) -> bool:
    """Whether ``clause`` (of a message, after a ``: ``, ``; `` or ``. ``) begins with what to
    do: an imperative (``quote it``, ``leave it out``), or its purpose and then one."""
    words = clause.split(" ", 2)
    verb = words[0].lower()
    if verb in _IMPERATIVE:
        return True
    if verb in _IMPERATIVE_IT:
        return len(words) > 1 and words[1] in ("it", "them")
    purpose = _PURPOSE.match(clause)
    return purpose is not None and purpose[1] in _IMPERATIVE


def _frame(
    schema: str, pipeline: Path, resolved: ResolvedPipeline | None, registry: Registry | None
) -> dict[str, Any]:
    """The keys every ``validate`` and ``explain`` document has, filled when known."""
    from seamline.core import pipeline_provenance

    shut_out = [] if registry is None else registry.entries()
    return {
        "schema": schema,
        "pipeline": str(pipeline),
        "ok": True,
        "name": resolved.spec.pipeline if resolved is not None else None,
        "provenance": dict(pipeline_provenance(resolved)) if resolved is not None else None,
        "untrusted": [
            {
                "kind": info.kind,
                "name": info.name,
                "distribution": info.distribution,
                "version": info.version,
            }
            for info in shut_out
            if info.status == "untrusted"
        ],
        "trusted": (
            registry.trust.describe()
            if registry is not None and registry.trust.restricted
            else None
        ),
        "allowlists": _allowlists(registry),
        "errors": [],
    }


def _allowlists(registry: Registry | None) -> list[dict[str, Any]] | None:
    """Each allowlist in force, for a script (``trusted`` is the same as prose): its
    names as written, where it was set, and those of its names not installed; null when
    no list applies (or the pipeline was not read far enough to know)."""
    if registry is None or not registry.trust.restricted:
        return None
    return [
        {
            "distributions": list(allowlist.names),
            "source": allowlist.source,
            "not_installed": [
                absent.name
                for absent in registry.not_installed
                if absent.source == allowlist.source
            ],
        }
        for allowlist in registry.trust.lists
    ]


def _bucket(bucket: BucketPlan) -> dict[str, Any]:
    return {
        "length": bucket.length,
        "batch_size": bucket.batch_size,
        "signature": bucket.signature,
        "chosen": bucket.chosen,
        "reason": bucket.reason,
        "tuning_key": bucket.measured.key if bucket.measured is not None else None,
        "tuning_set_aside": list(bucket.set_aside),
        "candidates": [
            {
                "name": row.candidate,
                "verdict": str(row.verdict),
                "why": row.why,
                "measured_seconds": row.measured,
            }
            for row in bucket.verdicts()
        ],
    }


def _print(document: Mapping[str, Any]) -> None:
    json_line(json_safe(dict(document)))
