"""The trust policy: which distributions may provide components (an allowlist, never
widened once set), whether components must have earned a conformance record, and which
environment variables a pipeline may send off this machine.

Installing a package is not the same as choosing to run it: any distribution in the
environment can register an entry point in a ``seamline.*`` group, and importing
that entry point runs the distribution's code. A :class:`TrustPolicy` names the
distributions allowed to provide components; the registry checks it *before* it
imports an entry point, so an untrusted plugin's import-time code never runs.

Two places may set an allowlist, and the second can only narrow the first:

* the user's config file (read by :func:`seamline.core.config.user.user_trust`, its
  fields turned into a policy by :func:`seamline.core.trust.settings.user_policy`), for
  every pipeline this user runs;
* a pipeline's ``trust: {distributions: [...]}``, for that pipeline.

A distribution is trusted only when every list that is set names it. The other two
settings come from the user's config file alone: a pipeline may ask for conformance
too (``trust.require_conformance``), never for less, and may not name variables it is
allowed to send (a pipeline file could otherwise allow itself to send any secret).
This module is plain data and checks, with no reading of files: whoever discovers
components reads the policy and hands it to the registry
(:meth:`~seamline.core.registry.Registry.discover`), which holds it (and a worker
process receives it).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace

from seamline.core.suggest import closest


def canonical(distribution: str) -> str:
    """A distribution name as packaging compares them (PEP 503): ``Seamline_Components`` →
    ``seamline-components``, so a list matches however a name is spelled."""
    return re.sub(r"[-_.]+", "-", distribution).lower()


@dataclass(frozen=True, slots=True)
class Allowlist:
    """One list of trusted distributions and where it was set (for the reasons)."""

    distributions: frozenset[str]
    """Canonical names (see :func:`canonical`)."""
    source: str
    """Where the list is: a config file's ``file:line:column``, or a pipeline's."""
    names: tuple[str, ...]
    """The names as written, in order, for messages."""

    @classmethod
    def of(cls, names: Iterable[str], source: str) -> Allowlist:
        written = tuple(names)
        return cls(frozenset(canonical(n) for n in written), source, written)

    def allows(self, distribution: str) -> bool:
        return canonical(distribution) in self.distributions


@dataclass(frozen=True, slots=True)
class TrustPolicy:
    """Every allowlist in force; a distribution must be on each of them.

    No list at all trusts every installed distribution (seamline's behaviour without
    a ``trust`` setting).
    """

    lists: tuple[Allowlist, ...] = ()
    require_conformance: str = ""
    """Where the user config requires a passing conformance record of every component
    a pipeline uses (``file:line:column``); "" when it does not."""
    network_variables: frozenset[str] = frozenset()
    """Environment variables a pipeline may put into values that leave this machine."""
    network_source: str = ""
    """Where that list is (``file:line:column``); "" when none is set."""

    @property
    def restricted(self) -> bool:
        """Whether any allowlist is set."""
        return bool(self.lists)

    def narrowed(self, names: Iterable[str], source: str) -> TrustPolicy:
        """This policy and one more list: it can only take distributions away."""
        return replace(self, lists=(*self.lists, Allowlist.of(names, source)))

    def refusal(self, distribution: str, doubt: str = "") -> str | None:
        """Why ``distribution`` may not provide a component, or None when it may.

        ``doubt`` says why the distribution's name cannot be believed for this one
        component (see :mod:`seamline.core.trust.binding`): an allowlist trusts names,
        so under one a doubted name is refused even when it is listed. Without a list
        every distribution may provide components, whatever its name.
        """
        for allowlist in self.lists:
            if not allowlist.allows(distribution):
                listed = ", ".join(allowlist.names) or "no distribution"
                return (
                    f"distribution {distribution!r} is not trusted: the allowlist at "
                    f"{allowlist.source} (trust.distributions) names only {listed}; add "
                    f"{distribution!r} there to use it"
                )
        if self.lists and doubt:
            sources = " and ".join(a.source for a in self.lists)
            return (
                f"distribution {distribution!r} is on the allowlist ({sources}), but this "
                f"entry point is not believed to be its: {doubt}"
            )
        return None

    def not_installed(
        self, installed: Collection[str], providers: Sequence[str]
    ) -> tuple[NotInstalled, ...]:
        """Each name an allowlist gives that no installed distribution has (a misspelling,
        or a distribution installed only where the pipeline runs), with the closest
        distribution that provides seamline components (``providers``) as a suggestion.

        ``installed``: the canonical names of the installed distributions. Not an error:
        the list only leaves out what is not on it, so a name it wrote wrong quietly
        left out the distribution meant (``seamline-cpu-flsh``: cpu-flash dropped out of
        ``auto``), and no one was told.
        """
        by_canonical = {canonical(name): name for name in providers}
        found: list[NotInstalled] = []
        for allowlist in self.lists:
            for name in allowlist.names:
                if canonical(name) in installed:
                    continue
                close = closest(canonical(name), by_canonical)
                suggestion = by_canonical[close] if close else None
                found.append(NotInstalled(name, allowlist.source, suggestion))
        return tuple(found)

    def describe(self) -> str:
        """One line per list, for listings (``seamline components``)."""
        return "; ".join(f"{', '.join(a.names) or 'nothing'} (from {a.source})" for a in self.lists)


@dataclass(frozen=True, slots=True)
class NotInstalled:
    """A name on an allowlist that no installed distribution has."""

    name: str
    """As written."""
    source: str
    """Where the list is (``file:line:column``)."""
    suggestion: str | None
    """The closest installed distribution that provides seamline components, if any."""

    def warning(self) -> str:
        """What to tell the user: which name, where, what it probably meant."""
        guess = f" (did you mean {self.suggestion!r}?)" if self.suggestion else ""
        return (
            f"trust.distributions at {self.source} names {self.name!r}, which is not "
            f"installed{guess}: no component of it can be used; correct the name, or leave it "
            "if that distribution is installed only where the pipeline runs"
        )


EVERYONE = TrustPolicy()
"""No setting: every installed distribution may provide components, no conformance record
is required, and no environment variable may be sent off this machine by a pipeline."""
