"""Conformance classes: how ``seamline check`` builds a component, found as components are.

A distribution registers the suite's class for a component under the entry-point
group ``seamline.conformance``, named ``KIND:NAME``. Importing that class runs the
distribution's code, exactly as importing a component does, so it is found by the
same rules (:meth:`seamline.core.registry.Registry.discover` builds this index from
the same reading of the dist-info folders):

* each entry point is bound to its distribution by the file its module would be
  imported from (:mod:`seamline.core.trust.binding`), and one the trust policy
  refuses is *untrusted*: listed with the reason, never imported;
* two trusted distributions registering a class for one ``KIND:NAME`` are a conflict:
  neither is used, and asking for it names both (no silent first-one-wins);
* nothing is imported until a class is asked for (:meth:`ConformanceClasses.load`),
  so discovery stays as cheap as reading metadata, and ``seamline check`` imports
  only the one class it runs; listing reads each module's source for what would make
  its import fail (:mod:`seamline.core.trust.targets`), without running it.
"""

from __future__ import annotations

import importlib.metadata as metadata
from collections.abc import Iterable
from dataclasses import dataclass, replace

from seamline.contracts import KINDS, ComponentLoadError, DuplicateComponentError, Kind
from seamline.core.plugin_imports import (
    MalformedEntryPoint,
    check_value,
    import_failure,
    logging_kept,
    stdout_to_stderr,
    stopped_as_failures,
)
from seamline.core.trust.binding import Distributions
from seamline.core.trust.policy import TrustPolicy
from seamline.core.trust.targets import import_problem

CONFORMANCE_GROUP = "seamline.conformance"
"""The entry-point group of conformance classes, named ``KIND:NAME``."""


@dataclass(frozen=True, slots=True)
class ConformanceEntry:
    """One ``seamline.conformance`` entry point, and whether trust allows it."""

    key: str
    """The entry point's name: ``KIND:NAME`` of the component it checks."""
    target: str
    """``module:Class``, as the entry point names it."""
    distribution: str
    version: str
    untrusted: str = ""
    """Why trust refuses it ("" when it does not): it is then never imported."""
    module_file: str = ""
    """The file its module would be imported from ("" when it cannot be found)."""
    doubt: str = ""
    """Why the distribution's name cannot be believed for it ("" when it can)."""

    def described(self) -> str:
        return f"{self.distribution} {self.version} ({self.target})"

    @property
    def registration(self) -> tuple[str, str]:
        """What one registration is: a distribution *and* its target, so that two of one
        distribution name (a folder on ``PYTHONPATH`` that calls itself
        ``seamline-components``) are two, not one."""
        return (self.distribution, self.target)


@dataclass(frozen=True, slots=True)
class ListedConformance:
    """A conformance entry as ``seamline components`` lists it, judged without importing."""

    entry: ConformanceEntry
    status: str
    """``ok``, ``broken``, ``conflict`` or ``untrusted``, as components are listed."""
    reason: str = ""


class ConformanceClasses:
    """Every conformance class the installed distributions register, none imported yet."""

    def __init__(self, entries: Iterable[ConformanceEntry] = ()) -> None:
        self._entries = list(entries)

    @classmethod
    def discover(cls, index: Distributions, trust: TrustPolicy) -> ConformanceClasses:
        """The entries of ``index``'s dist-info folders, each bound and judged by ``trust``."""
        entries: list[ConformanceEntry] = []
        seen: set[tuple[str, str, str]] = set()
        for ep in index.entry_points(CONFORMANCE_GROUP):
            bound = index.bind((CONFORMANCE_GROUP, ep.name, ep.value))
            key = (ep.name, ep.value, bound.origin.name)
            if key in seen:  # the same distribution found twice on sys.path
                continue
            seen.add(key)
            entry = ConformanceEntry(
                ep.name,
                ep.value,
                bound.origin.name,
                bound.origin.version,
                module_file=bound.module_file,
                doubt=bound.doubt,
            )
            entries.append(_judged(entry, trust))
        return cls(entries)

    def narrowed(self, trust: TrustPolicy) -> ConformanceClasses:
        """These entries with every one ``trust`` refuses marked untrusted."""
        return ConformanceClasses(_judged(e, trust) for e in self._entries)

    def entries(self) -> list[ConformanceEntry]:
        """Every entry, trusted or not, in the order found (for listings and workers)."""
        return list(self._entries)

    def listed(self) -> list[ListedConformance]:
        """Every entry with a status, as ``seamline components`` lists it, none imported.

        They were listed nowhere, though the docs said ``components`` lists every entry
        point of the ``seamline.*`` groups: a suite registered under a name ``seamline
        check`` never asks for (not ``KIND:NAME``), or naming a module that is not
        there, went unnoticed until someone ran ``check``. Nor did one whose class is
        misspelt, whose module does not parse or imports a package that is not
        installed: each is ``broken`` with the import error its source predicts
        (:mod:`.targets`, which reads it and runs nothing).
        """
        return [self._judged_for_listing(entry) for entry in self._entries]

    def _judged_for_listing(self, entry: ConformanceEntry) -> ListedConformance:
        if entry.untrusted:
            return ListedConformance(entry, "untrusted", entry.untrusted)
        kind, _, name = entry.key.partition(":")
        if kind not in KINDS or not name:
            return ListedConformance(
                entry,
                "broken",
                f"its name {entry.key!r} is not KIND:NAME (KIND one of {', '.join(KINDS)}), "
                "so seamline check never finds it",
            )
        try:
            check_value(metadata.EntryPoint(entry.key, entry.target, CONFORMANCE_GROUP))
        except MalformedEntryPoint as err:
            return ListedConformance(entry, "broken", str(err))
        if not entry.module_file:
            module = entry.target.split(":", 1)[0]
            return ListedConformance(
                entry, "broken", f"no module named {module!r} is installed (entry point "
                f"target {entry.target!r})"
            )  # fmt: skip
        problem = import_problem(entry.module_file, entry.target)
        if problem is not None:
            return ListedConformance(entry, "broken", problem)
        others = sorted(
            other.described()
            for other in self._entries
            if other.key == entry.key
            and not other.untrusted
            and other.registration != entry.registration
        )
        if others:
            return ListedConformance(entry, "conflict", f"also registered by {', '.join(others)}")
        return ListedConformance(entry, "ok")

    def problem(self, kind: Kind, name: str) -> str | None:
        """Why no conformance class can be used for ``kind:name``; None when one can."""
        key = f"{kind}:{name}"
        mine = [e for e in self._entries if e.key == key]
        trusted = [e for e in mine if not e.untrusted]
        if len({e.registration for e in trusted}) > 1:
            owners = " and ".join(e.described() for e in trusted)
            return f"{CONFORMANCE_GROUP} entry point {key!r} is registered by {owners}"
        if trusted:
            return None
        refused = "; ".join(f"{e.described()} is untrusted: {e.untrusted}" for e in mine)
        return f"no {CONFORMANCE_GROUP} entry point {key!r}" + (
            f" of a distribution trust allows ({refused})" if refused else ""
        )

    def load(self, kind: Kind, name: str) -> object | None:
        """The class registered for ``kind:name``, imported now; None when trust allows none.

        Two trusted distributions registering one is a ``DuplicateComponentError``; an
        import that fails is a ``ComponentLoadError`` (both user errors, naming the entry).
        """
        key = f"{kind}:{name}"
        trusted = [e for e in self._entries if e.key == key and not e.untrusted]
        if not trusted:
            return None
        problem = self.problem(kind, name)
        if problem is not None:
            raise DuplicateComponentError(
                f"{problem}; uninstall one of them or ask its author to rename the entry point"
            )
        entry = trusted[0]
        ep = metadata.EntryPoint(key, entry.target, CONFORMANCE_GROUP)
        try:
            check_value(ep)
            with stdout_to_stderr(), logging_kept(entry.distribution), stopped_as_failures():
                loaded: object = ep.load()
        except Exception as err:
            reason = import_failure(CONFORMANCE_GROUP, ep, entry.distribution, err)
            raise ComponentLoadError(
                f"the conformance entry point {key!r} of {entry.distribution} {entry.version} "
                f"cannot be loaded: {reason}"
            ) from None
        return loaded


def _judged(entry: ConformanceEntry, trust: TrustPolicy) -> ConformanceEntry:
    """``entry`` marked untrusted when ``trust`` refuses its distribution (never unmarked)."""
    if entry.untrusted:
        return entry
    reason = trust.refusal(entry.distribution, entry.doubt)
    return replace(entry, untrusted=reason) if reason else entry
