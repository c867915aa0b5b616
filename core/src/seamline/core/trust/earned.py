"""Whether a component has earned trust here and now: a conformance class and a passing record.

``require_conformance`` (a pipeline's ``trust``, or the user config's) asks every
component a pipeline uses for proof that it keeps its contract on this machine:

* its distribution, or another that trust allows, registers a **conformance class**
  for it (entry point ``seamline.conformance`` ``KIND:NAME``, found through the
  registry: :class:`~seamline.core.trust.classes.ConformanceClasses`), so that
  the proof can be made at all;
* a **passing record** exists for exactly its version, its configuration, and this
  JAX, jaxlib, platform and device kind (:mod:`seamline.core.trust.records` keeps
  them), made of the class and distribution installed now, with the code installed now
  (:func:`_not_this_code`). Nothing else counts, so a JAX upgrade withdraws a kernel's
  trust until the suite passes again, and the reason says what changed and the command
  that fixes it.

The loader, model, sink, monitors and executor are checked when the pipeline is
resolved (:class:`ConformanceCheck`); attention candidates are checked by the
planner, which refuses an untrusted one for every shape (:func:`untrusted_candidates`).
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from seamline.contracts import Attention, Component, Kind, UserError
from seamline.contracts.conformance import (
    CONFIG_FREE_KINDS,
    ConformanceRecord,
    Environment,
    config_of,
    current_environment,
    record_key,
)
from seamline.core.code_digest import code_root, component_digest
from seamline.core.trust.records import load_records

if TYPE_CHECKING:  # the registry holds the trust policy, so this package never imports it
    from seamline.core.registry import ComponentInfo, Registry


class ConformanceCheck:
    """Records and environment read once, for every component one pipeline uses."""

    def __init__(
        self,
        environment: Environment | None = None,
        records: Iterable[ConformanceRecord] | None = None,
    ) -> None:
        self.environment = environment if environment is not None else current_environment()
        self.records = list(records) if records is not None else load_records()

    def refusal(
        self, registry: Registry, kind: Kind, name: str, config: Mapping[str, Any], required: str
    ) -> str | None:
        """Why the component ``kind:name`` with ``config`` may not be used, or None.

        ``required`` says where conformance is required (the pipeline's setting or the
        user config's), for the message; ``registry`` is the one the pipeline is
        resolved with: a conformance class counts only from a distribution it trusts.
        """
        what = f"{kind} {name!r}"
        missing = registry.conformance.problem(kind, name)
        if missing is not None:
            return (
                f"{what} registers no conformance class ({missing}), and {required}: ask its "
                "author to ship one (docs/shipping-a-component.md), or choose another"
            )
        info = registry.get(kind, name)  # resolved already: usable
        problem = config_trust_problem(kind, name, config, info, self.environment, self.records)
        return None if problem is None else f"{what} is not trusted: {problem}; {required}"

    def problem(self, component: Component[Any], info: ComponentInfo | None) -> str | None:
        """:func:`trust_problem` against these records and this environment."""
        return trust_problem(component, info, self.environment, self.records)


def untrusted_candidates(
    candidates: Sequence[Attention[Any]],
    infos: Mapping[str, ComponentInfo | None],
    required: bool,
) -> dict[str, str]:
    """Attention candidate name -> why it is not trusted; empty when conformance is not required.

    ``infos`` maps each candidate's name to the registry's entry for it (None for a
    component no entry point registers), whose version a record must match.
    """
    if not required:
        return {}
    check = ConformanceCheck()
    problems = {}
    for candidate in candidates:
        problem = check.problem(candidate, infos.get(candidate.name))
        if problem is not None:
            problems[candidate.name] = problem
    return problems


def trust_problem(
    component: Component[Any],
    info: ComponentInfo | None,
    environment: Environment,
    records: Iterable[ConformanceRecord],
) -> str | None:
    """Why ``component`` is not trusted here and now (None: a passing record matches).

    ``info`` is the registry's entry for the component (its distribution version is
    part of what a record pins); None for a component no entry point registers. The
    message names what is missing — no record, a record for other versions, or a
    failing one — and the command that would produce a fresh one.
    """
    return config_trust_problem(
        component.kind, component.name, config_of(component), info, environment, records
    )


def config_trust_problem(
    kind: Kind,
    name: str,
    config: Mapping[str, Any],
    info: ComponentInfo | None,
    environment: Environment,
    records: Iterable[ConformanceRecord],
) -> str | None:
    """:func:`trust_problem` for a component not built yet: its kind, name and config data."""
    records = list(records)
    version = info.version if info is not None else None
    contract = info.contract_version if info is not None else None
    pinned = None if kind in CONFIG_FREE_KINDS else config  # as its suite records it
    wanted = record_key(kind, name, version, pinned, environment, contract)
    fix = f"run '{_check_command(kind, name, pinned, records)}'"
    same = [(r, _not_this_code(r, info)) for r in records if r.key() == wanted]
    if any(record.passed and problem is None for record, problem in same):
        return None
    if same:
        record, problem = max(same, key=lambda pair: pair[0].created)
        if problem is not None:
            return f"{problem}; {fix}"
        return (
            f"its conformance record for these versions fails {failed_checks(record)}; "
            "running the check again cannot change that: fix the "
            f"component (then '{_check_command(kind, name, pinned, records)}' again), or "
            "remove it from `use:`"
        )
    mine = [r for r in records if r.kind == kind and r.name == name]
    if not mine:
        return f"no conformance record; {fix}"
    latest = max(mine, key=lambda r: r.created)
    if (
        latest.distribution is None
        and info is not None
        and not info.registers(latest.component_class)
    ):
        return _tested_another_class(kind, name, latest, info)
    differences = _differences(latest, info, pinned, environment)
    return f"its conformance record is for {differences}; {fix}"


def failing_record_warning(
    kind: Kind, name: str, config: Mapping[str, Any], info: ComponentInfo | None
) -> str | None:
    """Why a component used *without* ``require_conformance`` deserves a warning: its newest
    record for the installed version fails (None: no such record, or it passes).

    Trust stays opt-in, so nothing is refused; but a sink whose record said it failed 5
    checks was used with a plain ``done``. Only this component's files of the store are
    read (their names start ``KIND-NAME-``), and only when a failing record is there is
    its code digested: a record made before the code was edited says nothing of it now.
    """
    if info is None:
        return None
    pinned = None if kind in CONFIG_FREE_KINDS else dict(config)
    try:
        records = load_records(pattern=f"{kind}-{name}-*.json", quiet=True)
    except UserError:  # a store variable naming no folder: refused where trust is asked for
        return None
    mine = [
        r
        for r in records
        if (r.kind, r.name, r.distribution, r.distribution_version, r.contract_version, r.config)
        == (kind, name, info.distribution, info.version, info.contract_version, pinned)
    ]
    if not mine:
        return None
    latest = max(mine, key=lambda r: r.created)
    if latest.passed or _not_this_code(latest, info) is not None:
        return None
    return (
        f"{kind} {name!r} ({info.distribution} {info.version}) is used, but its conformance "
        f"record for this version fails {failed_checks(latest)}, recorded {latest.created} "
        f"with jax {latest.environment.jax} on {latest.environment.platform}; fix the "
        f"component (then record again: '{_check_command(kind, name, pinned, records)}'), "
        "or set trust.require_conformance: true to refuse it"
    )


SHOWN_CHECKS = 5
"""The failed checks a message names; the record (``seamline check``) lists them all."""


def failed_checks(record: ConformanceRecord) -> str:
    """``(1 failed, 9 passed; failed: round_trip)``: the counts, and the checks that failed
    or errored by name (the counts alone left the user to run the suite again to learn
    them)."""
    failed = [r.check for r in record.results if r.outcome in ("failed", "error")]
    if not failed:  # none passed (all skipped), or no results at all
        return f"({record.summary()})"
    named = ", ".join(failed[:SHOWN_CHECKS])
    more = f" and {len(failed) - SHOWN_CHECKS} more" if len(failed) > SHOWN_CHECKS else ""
    return f"({record.summary()}; failed: {named}{more})"


def _not_this_code(record: ConformanceRecord, info: ComponentInfo | None) -> str | None:
    """Why ``record``, which matches the component's key, does not vouch for the code
    installed now (None: it does).

    The key names the component by its name and version only: a record earned by one
    distribution cleared another's class registered under the same name and version (an
    impostor returning zeros, trusted), and a record earned before an edit of the code
    (an editable install, another checkout, the version unchanged) cleared the edited
    code. The record's distribution, class and code digest must be what is installed.
    """
    if info is None:
        return "no entry point registers it, so no conformance record can vouch for it"
    if record.distribution != info.distribution or not info.registers(record.component_class):
        return (
            f"its conformance record is for {record.component_class} of "
            f"{record.distribution or 'no distribution'}, not the installed "
            f"{info.target} of {info.distribution} {info.version}"
        )
    if record.code_digest is None:
        return (
            "its conformance record does not pin the component's code (it was made before "
            "records did, so the code may have changed since)"
        )
    if record.code_digest != component_digest(info.module):
        package = code_root(info.module)
        return f"its code (package {package}) changed since its conformance record was made"
    return None


def _tested_another_class(
    kind: Kind, name: str, record: ConformanceRecord, info: ComponentInfo
) -> str:
    """The problem of a record credited to no distribution because its suite tested a class
    other than the one registered: ``seamline check --record`` writes the same record again,
    so it is not the fix (it was named, and the user went round in a loop)."""
    return (
        f"its conformance record tested {record.component_class}, not the class "
        f"{info.distribution} {info.version} registers ({info.target}), so it is credited to "
        f"no distribution and cannot earn trust; 'seamline check {kind}:{name} --record' "
        "writes the same again: the conformance class registered for it builds another "
        "class (ask its author to fix it)"
    )


def _check_command(
    kind: Kind, name: str, config: Mapping[str, Any] | None, records: list[ConformanceRecord]
) -> str:
    """The ``seamline check`` that records this configuration: each setting that differs
    from the last record's (every one, without a record) as ``--with``. Without them the
    command recorded the defaults, and the pipeline was refused again with the same fix."""
    mine = [r for r in records if r.kind == kind and r.name == name and r.config is not None]
    before = max(mine, key=lambda r: r.created).config if mine else None
    settings = [
        f" --with {shlex.quote(f'{key}={_shown(value)}')}"
        for key, value in sorted((config or {}).items())
        if before is None or before.get(key, _UNSET) != value
    ]
    return f"seamline check {kind}:{name}{''.join(settings)} --record"


_UNSET = object()


def _shown(value: Any) -> str:
    """A setting's value as ``--with`` reads it: a string as it is, the rest as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def _differences(
    record: ConformanceRecord,
    info: ComponentInfo | None,
    config: Mapping[str, Any] | None,
    environment: Environment,
) -> str:
    version = info.version if info is not None else None
    contract = info.contract_version if info is not None else None
    parts = []
    if record.distribution is None:  # tested from a source folder ahead of the install, say
        parts.append("no distribution (the class it tested was not imported from installed files)")
    elif info is not None and record.distribution != info.distribution:
        parts.append(f"distribution {record.distribution} (installed: {info.distribution})")
    if record.distribution is not None and record.distribution_version != version:
        parts.append(f"version {record.distribution_version} (installed: {version})")
    if record.contract_version != contract:
        parts.append(f"contract {record.contract_version} (the component's now: {contract})")
    if record.config != (dict(config) if config is not None else None):
        parts.append("another configuration")
    for field in ("jax", "jaxlib", "platform", "device_kind"):
        then, now = getattr(record.environment, field), getattr(environment, field)
        if then != now:
            parts.append(f"{field} {then} (now: {now})")
    return ", ".join(parts) or "other versions"
