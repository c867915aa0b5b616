"""Trust: which installed code may run, and which components have earned their place.

Installing a package is not choosing to run it: any distribution can register an
entry point in a ``seamline.*`` group. Everything that decides what may run lives
in this package, and the registry applies it before importing anything:

========================  =========================================================
module                    its one job
========================  =========================================================
:mod:`.policy`            the policy as data: allowlists (never widened), whether
                          conformance is required, which variables may leave
                          the machine; ``TrustPolicy.refusal`` is the rule
:mod:`.settings`          the ``trust`` sections of a pipeline and of the user
                          config, and the policy each field asks for
:mod:`.binding`           which distribution an entry point belongs to, checked
                          on disk (a name is believed only when nothing contradicts it)
:mod:`.classes`           conformance classes, found and judged like components
:mod:`.targets`           whether an entry point's module would import, read from
                          its source without running it (for listing the classes)
:mod:`.records`           the conformance record store, and attribution
:mod:`.earned`            whether a component has earned trust: a conformance class
                          and a passing record for exactly what is installed now
========================  =========================================================

The policy is always handed in by the caller: the CLI and ``Pipeline.from_yaml``
read the user config (:func:`seamline.core.config.user.user_trust`) and pass it to
:meth:`seamline.core.registry.Registry.discover`; the registry never reads a file
to learn what to trust. This package imports nothing of core above it (the
registry's types are for annotations only), so the registry can depend on it.
"""

from seamline.core.trust.classes import CONFORMANCE_GROUP, ConformanceClasses, ConformanceEntry
from seamline.core.trust.earned import (
    ConformanceCheck,
    config_trust_problem,
    failing_record_warning,
    trust_problem,
    untrusted_candidates,
)
from seamline.core.trust.policy import EVERYONE, Allowlist, NotInstalled, TrustPolicy, canonical
from seamline.core.trust.records import (
    STORE_VARIABLE,
    attribute,
    load_records,
    save,
    store_directory,
    unattributed,
)
from seamline.core.trust.settings import (
    TrustSettings,
    UserTrustSettings,
    pipeline_policy,
    user_policy,
)

__all__ = [
    "CONFORMANCE_GROUP",
    "EVERYONE",
    "STORE_VARIABLE",
    "Allowlist",
    "ConformanceCheck",
    "ConformanceClasses",
    "ConformanceEntry",
    "NotInstalled",
    "TrustPolicy",
    "TrustSettings",
    "UserTrustSettings",
    "attribute",
    "canonical",
    "config_trust_problem",
    "failing_record_warning",
    "load_records",
    "pipeline_policy",
    "save",
    "store_directory",
    "trust_problem",
    "unattributed",
    "untrusted_candidates",
    "user_policy",
]
