"""``seamline check KIND:NAME``: run the conformance suite against an installed component.

The suite needs to know how to build the component. Attention implementations,
models and monitors are built from their ``Config`` (``--with key=value`` sets
fields). Loaders and sinks need inputs and a way to read outputs back that only
their author knows, so their distribution registers a ready-made contract class
under the ``seamline.conformance`` entry point group (``KIND:NAME``); a component
of any kind may do the same to choose how it is checked.

That class is found through the registry (:mod:`seamline.core.trust.classes`), under
the same trust policy as the components: a distribution the allowlist leaves out
cannot have its class imported by ``seamline check`` either.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from seamline.contracts import KINDS, Component, ConfigError, UserError
from seamline.contracts.home import no_home_reason
from seamline.contracts.testing import CONTRACTS
from seamline.contracts.testing.runner import SuiteRun, run
from seamline.contracts.versions import a_kind
from seamline.core import (
    CONFORMANCE_GROUP,
    Registry,
    attribute_record,
    check_jax_compile_cache,
    output_directory,
    parse_located,
    save_record,
    store_directory,
    unattributed_record,
)

BUILT_FROM_CONFIG = {
    "attention": "attention",
    "model": "model",
    "monitor": "monitor",
    "executor": "executor",
}
"""Kinds the suite can build from a Config alone, and the fixture each contract class uses.
(An executor's suite gives it a job of its own: the executor is all it needs.)"""


@dataclass(frozen=True)
class CheckOutcome:
    suite: SuiteRun
    saved: tuple[Path, ...]
    cannot_earn_trust: tuple[str, ...] = ()
    """Why each record written cannot earn trust (credited to no distribution): the suite
    tested a class no installed distribution registers. It said "conforms", exit 0, and
    ``require_conformance`` sent the user back to the same command."""
    select: str | None = None
    """The ``--select`` expression the checks were chosen by: a selection that passes says
    nothing of conformance (it printed "conforms" after 1 of 33 checks)."""

    @property
    def conforms(self) -> bool:
        """The suite ran and every record it made passed, and none that ``--record`` wrote is
        useless (``seamline check`` exits 0; with ``--select``, every selected check
        passed, which is no verdict of conformance)."""
        return bool(self.suite.results) and self.suite.passed and not self.cannot_earn_trust


def parse_target(target: str) -> tuple[Any, str]:
    kind, sep, name = target.partition(":")
    if not sep or not name or kind not in KINDS:
        raise UserError(
            f"check needs KIND:NAME (KIND one of {', '.join(KINDS)}), got {target!r}; "
            "for example: seamline check attention:blockwise"
        )
    return kind, name


def parse_with(values: Sequence[str]) -> dict[str, Any]:
    """``key=value`` pairs, each value read as YAML (so ``true``, ``16`` and ``[1, 2]`` work),
    by YAML 1.2's rules, as a pipeline file is (``--with block_q=010`` is refused, not 8)."""
    parsed: dict[str, Any] = {}
    for item in values:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise UserError(f"--with takes KEY=VALUE, got {item!r}; e.g. --with interpret=true")
        try:
            parsed[key.strip()] = parse_located(text, "--with").data if text.strip() else ""
        except ConfigError as err:
            raise UserError(f"--with {item!r}: {err.detail}") from None
    return parsed


def registered_contract_class(registry: Registry, kind: Any, name: str) -> type | None:
    """The contract class a distribution trust allows registered for ``kind:name``, if any.

    Only that one class is imported, now; another distribution's is never imported.
    """
    loaded = registry.conformance.load(kind, name)  # a conflict or a failed import: UserError
    if loaded is None:
        return None
    if not (isinstance(loaded, type) and issubclass(loaded, CONTRACTS[kind])):
        raise UserError(
            f"the conformance entry point '{kind}:{name}' names {loaded!r}, which is not a "
            f"subclass of {CONTRACTS[kind].__name__}"
        )
    return loaded


def contract_class(registry: Registry, kind: Any, name: str, with_values: dict[str, Any]) -> type:
    """The class to run: the registered one, or the kind's contract building from Config."""
    info = registry.get(kind, name)  # not installed, broken, refused: a clear UserError
    registered = registered_contract_class(registry, kind, name)
    if kind not in BUILT_FROM_CONFIG:
        if with_values:
            raise UserError(
                f"--with does not apply to {a_kind(kind)}: the suite builds {kind}s through the "
                f"contract class their distribution registers"
            )
        if registered is None:
            raise UserError(
                f"{kind} {name!r} ({info.distribution}) registers no conformance class "
                f"({registry.conformance.problem(kind, name)}): {a_kind(kind)}'s inputs and "
                f"outputs are its own, so its author must say how to make them. Register a "
                f"{CONTRACTS[kind].__name__} subclass under the '{CONFORMANCE_GROUP}' entry "
                f"point group as '{kind}:{name}' (see docs/shipping-a-component.md)"
            )
        return registered
    if registered is not None and not with_values:
        return registered
    assert info.cls is not None
    component_class: type[Component[Any]] = info.cls
    try:
        config = component_class.Config.model_validate(with_values)
    except ValidationError as err:
        fields = component_class.Config.model_fields
        problems = "; ".join(_with_problem(e, fields) for e in err.errors(include_url=False))
        raise UserError(f"{kind} {name!r}: --with gives an invalid config: {problems}") from None
    built_once(component_class, config, f"{kind} {name!r}", with_values)
    base = registered if registered is not None else CONTRACTS[kind]
    fixture_name = BUILT_FROM_CONFIG[kind]

    def build(self: Any) -> Component[Any]:
        return component_class(config)

    build.__name__ = fixture_name
    return type(f"Check_{name}", (base,), {fixture_name: pytest.fixture(build)})


def built_once(
    component_class: type[Component[Any]],
    config: Any,
    which: str,
    with_values: Mapping[str, Any],
) -> None:
    """Build the component as every check will, so that a ``UserError`` it raises (weights
    missing, not safetensors, truncated) is a usage error, exit code 2.

    Inside the suite it was each check's error and the verdict "does not conform", exit
    code 1: a typo in ``--with weights=`` read by CI as the component's regression. Any
    other exception is left for the suite to report, as the component's failure.
    """
    try:
        component_class(config)
    except UserError as err:
        given = " ".join(f"--with {key}={value}" for key, value in with_values.items())
        how = f"with {given}" if given else "with its default config"
        raise UserError(f"{which} cannot be built {how}: {err}") from None
    except Exception:  # the component's own failure: each check reports it
        pass


def _with_problem(error: Any, fields: Mapping[str, Any]) -> str:
    """One of pydantic's errors about ``--with`` as a pipeline's would say it: a missing field
    with how to give it (and its description), an unknown one with the closest name."""
    where = ".".join(str(p) for p in error["loc"]) or "(config)"
    if error["type"] == "missing" and where in fields:
        described = fields[where].description
        return f"{where} is required: give it with --with {where}=VALUE" + (
            f" ({described})" if described else ""
        )
    if error["type"] == "extra_forbidden":
        from seamline.core import did_you_mean

        hint = did_you_mean(where, fields)
        return f"unknown field {where!r}{hint}; fields: {', '.join(fields) or 'none'}"
    return f"{where}: {error['msg']}"


def check(
    registry: Registry,
    target: str,
    *,
    with_values: Sequence[str] = (),
    max_examples: int | None = None,
    select: str | None = None,
    record: bool = False,
    record_dir: Path | None = None,
    verbose: bool = False,
    progress: object | None = None,
) -> CheckOutcome:
    if record_dir is not None and not record:
        # It exited 0 having written nothing, and a file named there was not refused: the
        # user believed a record was made where require_conformance would look for it.
        raise UserError(
            f"--record-dir {str(record_dir)!r} has no effect without --record: add --record "
            "to write the suite's record there"
        )
    if record and select:
        raise UserError(
            f"--record with --select {select!r}: a record proves conformance only when the "
            "whole suite ran (one of the checks someone chose could make a failing component "
            "trusted); drop --select to record, or --record to run a selection"
        )
    check_jax_compile_cache()  # the suite runs the component's programs in this process
    kind, name = parse_target(target)
    test_class = contract_class(registry, kind, name, parse_with(with_values))
    records_to = record_directory(record_dir) if record else None
    watching = () if progress is None else (progress,)  # hooks that only watch the run
    suite = run(
        test_class, max_examples=max_examples, select=select, echo=verbose, plugins=watching
    )
    if suite.exit_code == pytest.ExitCode.INTERRUPTED:
        # pytest caught the Ctrl-C and returned: the checks that ran reported "conforms",
        # exit 0, and --record wrote a record of part of the suite that pipelines trusted.
        raise KeyboardInterrupt
    if select and not suite.results:
        refusal = selection_refused(test_class, target, select, suite)
        if refusal is not None:
            raise refusal
    skipped = every_check_skipped(target, suite)
    if skipped is not None:
        raise skipped
    why_not = [unattributed_record(r, registry) for r in suite.records]
    suite = replace(suite, records=tuple(attribute_record(r, registry) for r in suite.records))
    saved: list[Path] = []
    if records_to is not None and suite.records:
        saved = [save_record(r, records_to) for r in suite.records]
    useless = (
        f"the record of {r.kind}:{r.name} is credited to no distribution, so it cannot earn "
        f"trust under require_conformance: {why}"
        for r, why in zip(suite.records, why_not, strict=True)
        if why is not None and records_to is not None
    )
    return CheckOutcome(suite, tuple(saved), tuple(useless), select)


def record_directory(record_dir: Path | None) -> Path:
    """Where ``--record`` writes, made and tried before the suite runs: a regular file or a
    read-only place there would otherwise end in a traceback once the suite's minutes are
    spent, its table never printed."""
    if record_dir is not None:
        return output_directory(record_dir, "--record-dir names")
    store = store_directory()  # $SEAMLINE_CONFORMANCE_DIR naming a file is refused here
    if store is None:  # no home, and the variable unset
        raise UserError(
            f"--record has no default folder to write to: {no_home_reason()}; give "
            "--record-dir DIR, or point $SEAMLINE_CONFORMANCE_DIR at a directory you can write to"
        )
    return output_directory(
        store,
        "--record writes records to",
        "give --record-dir DIR, or point $SEAMLINE_CONFORMANCE_DIR at a directory you can write to",
    )


def every_check_skipped(target: str, suite: SuiteRun) -> UserError | None:
    """The user error of a suite whose every check was skipped, or None if one ran.

    Nothing was checked, so nothing is concluded: ``check model:mpnet-encoder`` from an
    installed wheel (no checkpoint beside it) printed 14 rows "skipped | no MPNet checkpoint
    here" and then "does not conform", exit code 1, which CI reads as the component's
    regression. The skips' reasons say what is missing and how to give it.
    """
    if not suite.results or any(r.outcome != "skipped" for r in suite.results):
        return None
    reasons = list(dict.fromkeys(r.message for r in suite.results))
    more = f" (and {len(reasons) - 3} more)" if len(reasons) > 3 else ""
    return UserError(
        f"every check of {target} was skipped, so nothing is concluded and no record is "
        f"written: {'; '.join(reasons[:3])}{more}"
    )


BAD_EXPRESSION = re.compile(r"Wrong expression passed to '-k': (.+)")
"""pytest's line for a ``-k`` expression it cannot parse (with ``--select`` captured)."""


def selection_refused(
    test_class: type, target: str, select: str, suite: SuiteRun
) -> UserError | None:
    """The user error of a ``--select`` that ran no check, or None if something else did.

    pytest's answer is its exit code and its own output (a warnings summary, ``13
    deselected``), which ``check`` reported as a component that does not conform (exit
    code 1): a selection that cannot be parsed or matches nothing is the user's to fix.
    """
    if suite.exit_code == pytest.ExitCode.USAGE_ERROR:
        found = BAD_EXPRESSION.search(suite.output)
        why = f" ({found[1].strip().removeprefix(f'{select}: ')})" if found else ""
        return UserError(
            f"--select {select!r} is not a pytest -k expression{why}: give names joined with "
            "and, or, not and parentheses, such as --select 'plain or config'"
        )
    if suite.exit_code == pytest.ExitCode.NO_TESTS_COLLECTED:
        count, names = collected_checks(test_class)
        listed = f"; their names: {', '.join(names)}" if names else ""
        return UserError(
            f"--select {select!r} matches none of the {count} checks of {target}{listed}"
        )
    return None


def collected_checks(test_class: type) -> tuple[int, list[str]]:
    """How many checks the suite has (a row of its table each) and their names as the table
    shows them, a parametrized check's once.

    Collected, not run (under a second), for the message of a ``--select`` that matched
    none: pytest's test ids are its own to choose.
    """
    collected = run(test_class, extra_args=["--collect-only"])
    ids = [t for t in collected.output.splitlines() if "::" in t and not t.startswith(" ")]
    names = (t.rsplit("::", 1)[-1].partition("[")[0].removeprefix("test_") for t in ids)
    return len(ids), list(dict.fromkeys(names))
