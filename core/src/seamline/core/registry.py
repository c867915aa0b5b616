"""Discovery of components through entry points, with every failure kept visible.

Each kind of component has an entry-point group (``seamline.attention``,
``seamline.model``, ...). The registry loads every entry point with stevedore and
records, for each, the distribution that registered it and whether it is usable:

* a plugin that fails to import is *broken*: it is listed with the reason and
  every other component stays usable;
* a plugin that imports but does not honour the component rules (wrong base
  class, name, config model, a contract major version this seamline cannot
  host, or abstract methods of its contract left unimplemented) is *refused*, with
  the reason;
* two distributions registering the same name are a *conflict*, even two that
  declare one distribution name: neither is used and asking for the name is an
  error naming both (no silent last-one-wins);
* an entry point of a distribution the trust policy does not allow
  (:mod:`seamline.core.trust`) is *untrusted*: it is listed with the reason and
  never imported, so its import-time code never runs, and it cannot conflict with
  a trusted component of the same name (an allowlist is how a squatter is shut out).

Every entry records where its code lives (``module_file``), found on disk without
importing anything for the entries that were not loaded, and is bound to its
distribution by that file, not by the name a dist-info folder declares
(:mod:`seamline.core.trust.binding`): under an allowlist, an entry whose
distribution's name cannot be believed is untrusted too.

The policy is the caller's to give (:meth:`Registry.discover` takes it): the registry
never reads the user's config to learn what to trust. The same reading of the
dist-info folders finds the conformance classes (``registry.conformance``,
:mod:`seamline.core.trust.classes`), judged by the same policy and imported only
when ``seamline check`` asks for one.
"""

from __future__ import annotations

import importlib.metadata as metadata
import inspect
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any, Literal

from stevedore import ExtensionManager

from seamline.contracts import (
    KINDS,
    Component,
    ComponentConfig,
    ComponentLoadError,
    ComponentNotFoundError,
    ContractVersionError,
    ContractViolation,
    DuplicateComponentError,
    Kind,
)
from seamline.contracts.versions import a_kind, compatibility_problem
from seamline.core.plugin_imports import (
    check_value,
    described,
    import_failure,
    logging_kept,
    stdout_to_stderr,
    stopped_as_failures,
)
from seamline.core.suggest import did_you_mean
from seamline.core.trust.binding import Binding, Distributions, module_file
from seamline.core.trust.classes import CONFORMANCE_GROUP, ConformanceClasses, ConformanceEntry
from seamline.core.trust.policy import EVERYONE, NotInstalled, TrustPolicy

GROUP_PREFIX = "seamline."

Status = Literal["ok", "broken", "refused", "conflict", "untrusted"]

RESERVED: dict[tuple[str, str], str] = {
    ("attention", "auto"): "choosing among the installed implementations"
}
"""Names a pipeline gives a meaning of its own: a component registered under one was
listed ``ok`` and named as the pipeline's attention in its provenance, yet ``use: auto``
never meant it."""


def allowlist_fix(keep: str = "") -> str:
    """The third way out of a conflict, for every message that names one (``keep``: the
    distribution to list first): an allowlist shuts a squatter out, without uninstalling
    anything or waiting for its author to rename the entry point."""
    listed = f"{keep}, ..." if keep else "..."
    return (
        "trust only the distributions you mean (an allowlist that leaves the other out: "
        f"trust: {{distributions: [{listed}]}}, in the pipeline or ~/.config/seamline/config.yaml)"
    )


def group_of(kind: Kind) -> str:
    """The entry-point group of a kind of component."""
    return f"{GROUP_PREFIX}{kind}"


@dataclass(frozen=True, slots=True)
class ComponentInfo:
    """One registered entry point and what became of it."""

    kind: Kind
    name: str
    target: str
    distribution: str
    version: str
    status: Status
    reason: str = ""
    cls: type[Component[Any]] | None = None
    contract_version: str = ""
    """The contract version the plugin declares (shown even when it is refused)."""
    module_file: str = ""
    """The file its module is (or would be) imported from ("" when it cannot be found)."""
    doubt: str = ""
    """Why the distribution's name cannot be believed for this entry point ("" when it
    can): another dist-info folder declares the name, or the module's file is not one
    that distribution installed (:mod:`seamline.core.trust.binding`). An allowlist
    refuses such an entry, whatever names it lists."""
    declared_name: str = ""
    """The name its class declares, kept when it differs from the entry point's (the entry
    is refused then): a user asking for the class's name is told where it went."""

    @property
    def usable(self) -> bool:
        return self.status == "ok" and self.cls is not None

    def registers(self, target: str) -> bool:
        """Whether this entry's class is the one named ``module:QualName``: the entry point's
        own text, or where the class it loaded is defined (a package may re-export it)."""
        wanted = target.replace(" ", "")
        loaded = self.cls
        return self.target.replace(" ", "") == wanted or (
            loaded is not None and _defined_at(loaded) == wanted
        )

    @property
    def module(self) -> str:
        """The module its class is defined in (else the one its entry point names)."""
        loaded = self.cls
        return loaded.__module__ if loaded is not None else self.target.partition(":")[0].strip()


def refusal_reason(kind: Kind, name: str, plugin: object) -> str | None:
    """Why a loaded entry point cannot serve as a component of ``kind``, or None."""
    if not isinstance(plugin, type) or not issubclass(plugin, Component):
        return (
            f"entry point does not name a seamline component class (it names {described(plugin)})"
        )
    if getattr(plugin, "kind", None) != kind:
        declared = a_kind(str(getattr(plugin, "kind", "?")))
        return f"is {declared} component registered as {a_kind(kind)}"
    if (kind, name) in RESERVED:
        return (
            f"is registered as {name!r}, which a pipeline's '{kind}: {{use: {name}}}' reserves "
            f"for {RESERVED[kind, name]}; rename the entry point and the class's name"
        )
    for attribute, example in (("name", '"my-loader"'), ("contract_version", '"1.0"')):
        value = getattr(plugin, attribute, None)
        if value is None:
            return f"does not declare {attribute!r} (every component must)"
        if not isinstance(value, str):
            return (
                f"declares {attribute!r} as the {type(value).__name__} {value!r}; it must be "
                f"a string, such as {example}"
            )
    if plugin.name != name:
        return (
            f"declares name {plugin.name!r} but is registered as {name!r}; make the entry "
            "point's name and the class's name the same"
        )
    config: object = getattr(plugin, "Config", None)
    if not (isinstance(config, type) and issubclass(config, ComponentConfig)):
        return "its Config is not a seamline ComponentConfig (pydantic) model"
    if config.model_config.get("extra") != "forbid":
        return 'its Config must forbid unknown fields (model_config extra="forbid")'
    return compatibility_problem(kind, plugin.contract_version) or _unimplemented(plugin)


def _unimplemented(plugin: type) -> str | None:
    """What an abstract class leaves out of its contract, or None.

    An attention without ``supports`` and ``__call__`` was listed ``ok``, and every
    ``auto`` pipeline, naming it or not, then failed building it with a bare
    ``TypeError: Can't instantiate abstract class``.
    """
    if not inspect.isabstract(plugin):
        return None
    missing = sorted(getattr(plugin, "__abstractmethods__", ()))
    return f"does not implement {', '.join(missing)} (the contract's abstract methods)"


class Registry:
    """Every component of every kind that the installed distributions register."""

    def __init__(
        self,
        infos: Iterable[ComponentInfo],
        *,
        discovered: bool = False,
        trust: TrustPolicy = EVERYONE,
        unmarked: Iterable[ComponentInfo] | None = None,
        conformance: ConformanceClasses | Iterable[ConformanceEntry] = (),
    ) -> None:
        infos = list(infos)
        self._by_kind: dict[Kind, dict[str, list[ComponentInfo]]] = {k: {} for k in KINDS}
        for info in infos:
            self._by_kind[info.kind].setdefault(info.name, []).append(info)
        self._unmarked = list(infos if unmarked is None else unmarked)
        """The entries before conflicts were marked: what :meth:`narrowed` starts from."""
        self.discovered = discovered
        """Whether this is what the environment's entry points register (another process
        of the same environment can discover it again), or a registry built by hand."""
        self.trust = trust
        """The allowlists this registry honours (none: every distribution is trusted)."""
        self.conformance = (
            conformance
            if isinstance(conformance, ConformanceClasses)
            else ConformanceClasses(conformance)
        )
        """The conformance classes registered (``seamline.conformance``), judged by ``trust``."""
        self.stray: list[tuple[str, str, str]] = []
        """``(group, name, distribution)`` of entry points in a ``seamline.*`` group that is
        no seamline group (a misspelling): named when a pipeline asks for one of them."""
        self.not_installed: tuple[NotInstalled, ...] = ()
        """Each name the allowlists give that no installed distribution has (found when
        discovered): warned of by whoever reads a pipeline's trust."""

    @classmethod
    def discover(cls, trust: TrustPolicy) -> Registry:
        """Load every seamline entry point of the current environment that ``trust`` allows.

        ``trust`` is the caller's: the user config's for a user's command
        (:func:`seamline.core.config.user.user_trust`), narrowed by a pipeline's own, or
        ``EVERYONE`` on purpose. Entry points of other distributions are listed as
        untrusted and not imported; conformance classes are listed, none imported.
        """
        index = Distributions(GROUP_PREFIX)  # read afresh: sees plugins installed since
        infos: list[ComponentInfo] = []
        for kind in KINDS:
            infos.extend(_load_group(kind, index, trust))
        registry = cls(
            _mark_conflicts(infos),
            discovered=True,
            trust=trust,
            unmarked=infos,
            conformance=ConformanceClasses.discover(index, trust),
        )
        registry.stray = index.stray({*map(group_of, KINDS), CONFORMANCE_GROUP})
        registry.not_installed = trust.not_installed(index.installed(), index.providers())
        return registry

    def narrowed(self, trust: TrustPolicy) -> Registry:
        """This registry with every entry ``trust`` refuses marked untrusted (none imported).

        Used when a pipeline's ``trust`` narrows the policy the registry was discovered
        with: entries it refuses become unusable, and names they shared with a trusted
        entry are no longer conflicts.
        """
        infos = []
        for info in self._unmarked:
            reason = trust.refusal(info.distribution, info.doubt)
            if reason and info.status != "untrusted":
                info = replace(info, status="untrusted", reason=reason, cls=None)
            infos.append(info)
        narrowed = Registry(
            _mark_conflicts(infos),
            discovered=self.discovered,
            trust=trust,
            unmarked=infos,
            conformance=self.conformance.narrowed(trust),
        )
        narrowed.stray = self.stray
        narrowed.not_installed = self.not_installed
        return narrowed

    def entries(self, kind: Kind | None = None) -> list[ComponentInfo]:
        """Every entry, usable or not, sorted by kind then name (for listings)."""
        kinds = [kind] if kind else list(KINDS)
        return [
            info
            for k in kinds
            for name in sorted(self._by_kind[k])
            for info in self._by_kind[k][name]
        ]

    def names(self, kind: Kind) -> list[str]:
        """The names of usable components of ``kind``."""
        return sorted(
            n
            for n, infos in self._by_kind[kind].items()
            if len(trusted := _trusted_first(infos)) == 1 and trusted[0].usable
        )

    def unusable(self, kind: Kind) -> dict[str, str]:
        """Name -> why, for each installed component of ``kind`` that cannot be used: broken,
        refused or in conflict, each as ``status: reason`` (untrusted ones are left out: the
        user's allowlist shut them out on purpose).

        ``attention: auto`` takes :meth:`names`, the usable ones: a plugin that stopped
        importing after a JAX upgrade dropped out of it in silence, though ``components``
        listed it broken. Whoever offers candidates names these too, refused for every shape.
        """
        usable = set(self.names(kind))
        found: dict[str, str] = {}
        for name, infos in sorted(self._by_kind[kind].items()):
            if name in usable:
                continue
            shown = [i for i in _trusted_first(infos) if i.status != "untrusted" and not i.usable]
            if shown:
                found[name] = f"{shown[0].status}: {shown[0].reason}"
        return found

    def get(self, kind: Kind, name: str) -> ComponentInfo:
        """The usable component ``kind:name``, or an error that says what to do instead."""
        infos = self._by_kind[kind].get(name)
        if not infos:
            available = self.names(kind)
            raise ComponentNotFoundError(
                f"no {kind} component named {name!r}{self._misnamed(kind, name)}"
                f"{self._strayed(kind, name)}"
                f"{did_you_mean(name, available)}; "
                f"available: {', '.join(available) or 'none installed'}"
            )
        infos = _trusted_first(infos)
        if len(infos) > 1 and all(i.status == "untrusted" for i in infos):
            # Not a conflict yet: trusting one of them settles it (it said "uninstall one").
            owners = " and ".join(f"{i.distribution} {i.version}" for i in infos)
            raise ComponentLoadError(
                f"{kind} component {name!r} is registered by {owners}, none of them trusted: "
                f"{infos[0].reason} (trust the one you mean; trusting both is a conflict)"
            )
        if len(infos) > 1:
            owners = " and ".join(f"{i.distribution} {i.version} ({i.target})" for i in infos)
            raise DuplicateComponentError(
                f"{kind} component {name!r} is registered by {owners}; uninstall one of "
                f"them, ask its author to rename the entry point, or {allowlist_fix()}"
            )
        info = infos[0]
        if info.status == "refused" and compatibility_problem(kind, info.contract_version):
            raise ContractVersionError(
                f"{kind} component {name!r} from {info.distribution} {info.version} is "
                f"refused: {info.reason}"
            )
        if not info.usable:
            raise ComponentLoadError(
                f"{kind} component {name!r} from {info.distribution} {info.version} is "
                f"{info.status}: {info.reason}"
            )
        return info

    def _misnamed(self, kind: Kind, name: str) -> str:
        """Where a class declaring ``name`` went: refused under another entry point's name."""
        for infos in self._by_kind[kind].values():
            for info in infos:
                if name and info.declared_name == name:
                    return (
                        f" (a class declaring that name is registered as {info.name!r} by "
                        f"{info.distribution} {info.version}, and refused: {info.reason})"
                    )
        return ""

    def _strayed(self, kind: Kind, name: str) -> str:
        """Where an entry point of ``name`` went: a group seamline never reads, or the group
        of another kind (a loader class registered in ``seamline.sink`` was listed as refused
        there, while the pipeline asking for the loader heard only "no loader named").

        ``seamline.monitors`` (a plural) was not listed by ``components`` and the pipeline
        said only "no monitor component named 'grp'".
        """
        for group, entry, distribution in self.stray:
            if entry == name:
                return (
                    f" ({distribution} registers {name!r} in the entry-point group {group!r}, "
                    f"which seamline does not read: register it in {group_of(kind)!r})"
                )
        misplaced = f"is {a_kind(kind)} component registered as "
        for other in (k for k in KINDS if k != kind):
            for info in self._by_kind[other].get(name, ()):
                if info.reason.startswith(misplaced):
                    return (
                        f" ({info.distribution} registers {name!r}, {a_kind(kind)}, in the "
                        f"entry-point group {group_of(other)!r}: register it in "
                        f"{group_of(kind)!r})"
                    )
        return ""

    def info_for_target(self, kind: Kind, target: str) -> ComponentInfo | None:
        """The entry registering the class named ``module:QualName`` as a ``kind``, if any.

        This is how records and spans learn which distribution provides a component:
        from the index discovery built once, never by scanning entry points again.
        ``target`` may be the entry point's own text or where the class it loaded is
        defined: a package that re-exports its class (``pkg:Cls`` for a class of
        ``pkg.attention``) is still found, so its conformance records carry its
        distribution and version and can earn it trust.
        """
        for infos in self._by_kind[kind].values():
            for info in infos:
                if info.registers(target):
                    return info
        return None

    def info_of(self, component: Component[Any]) -> ComponentInfo | None:
        """The entry that registers ``component``'s exact class, or None for a hand-made one."""
        cls = type(component)
        for info in self._by_kind[component.kind].get(component.name, []):
            if info.cls is cls:
                return info
        return self.info_for_target(component.kind, _defined_at(cls))

    def config_model(self, kind: Kind, name: str) -> type[ComponentConfig]:
        cls = self.get(kind, name).cls
        assert cls is not None  # get() returns usable entries only
        return cls.Config

    def create(
        self, kind: Kind, name: str, config: ComponentConfig | Mapping[str, Any] | None = None
    ) -> Component[Any]:
        """Instantiate ``kind:name`` from a validated config or a plain mapping."""
        info = self.get(kind, name)
        assert info.cls is not None
        if not isinstance(config, ComponentConfig):
            config = info.cls.Config.model_validate(dict(config or {}))
        created = info.cls(config)
        if not isinstance(getattr(created, "config", None), ComponentConfig):
            # Found here, not later in whichever seam reads it first (the sink's start, once).
            raise ContractViolation(
                f"{kind} {name!r} (from {info.distribution} {info.version}) has no config after "
                "it was built: a constructor that overrides __init__ must call "
                "super().__init__(config)"
            )
        return created


def _trusted_first(infos: list[ComponentInfo]) -> list[ComponentInfo]:
    """The entries of one name that trust allows, else (all untrusted) every one of them."""
    return [i for i in infos if i.status != "untrusted"] or infos


class _TrustedExtensionManager(ExtensionManager[Any]):
    """stevedore's manager over the entry points trust was decided on, asking ``admit``
    about each before importing it.

    The entry points are the ones :class:`Distributions` read and bound, not
    stevedore's own listing: that one is cached on disk per ``sys.path`` (a stale
    answer when a relative entry means another folder now) and keeps only the first
    folder of each folder name, so what is loaded could differ from what was checked.
    ``_load_one_plugin`` is where stevedore's own filtering managers (``Named``,
    ``Enabled``) decide; returning None skips the entry point without loading it.
    ``bound`` says which distribution an entry point is of, named when its import changed
    the process's logging (:func:`~seamline.core.plugin_imports.logging_kept`).
    """

    def __init__(
        self,
        namespace: str,
        entry_points: list[metadata.EntryPoint],
        admit: Callable[[metadata.EntryPoint], bool],
        bound: Callable[[metadata.EntryPoint], Binding],
        on_load_failure_callback: Callable[[Any, metadata.EntryPoint, BaseException], None],
    ) -> None:
        self._entry_points = entry_points
        self._admit = admit
        self._bound = bound
        super().__init__(namespace=namespace, on_load_failure_callback=on_load_failure_callback)

    def list_entry_points(self) -> list[metadata.EntryPoint]:
        return self._entry_points

    def _load_one_plugin(
        self,
        ep: metadata.EntryPoint,
        invoke_on_load: bool,
        invoke_args: tuple[Any, ...],
        invoke_kwds: dict[str, Any],
    ) -> Any:
        if not self._admit(ep):
            return None
        check_value(ep)
        with logging_kept(self._bound(ep).origin.name), stopped_as_failures():
            return super()._load_one_plugin(ep, invoke_on_load, invoke_args, invoke_kwds)


def _load_group(kind: Kind, index: Distributions, trust: TrustPolicy) -> list[ComponentInfo]:
    group = group_of(kind)
    failures: list[ComponentInfo] = []
    untrusted: list[ComponentInfo] = []
    bindings: dict[str, Binding] = {}

    def binding(ep: metadata.EntryPoint) -> Binding:
        """Decided once per entry point, before it is imported (the file it would load)."""
        key = f"{ep.name}={ep.value}"
        if key not in bindings:
            bindings[key] = index.bind((group, ep.name, ep.value))
        return bindings[key]

    def not_loaded(ep: metadata.EntryPoint, status: Status, reason: str) -> ComponentInfo:
        """The entry of a component that was not loaded: refused, or failed to import."""
        bound = binding(ep)
        return ComponentInfo(
            kind,
            ep.name,
            ep.value,
            bound.origin.name,
            bound.origin.version,
            status,
            reason,
            module_file=bound.module_file,
            doubt=bound.doubt,
        )

    def admit(ep: metadata.EntryPoint) -> bool:
        bound = binding(ep)
        reason = trust.refusal(bound.origin.name, bound.doubt)
        if reason is None:
            return True
        untrusted.append(not_loaded(ep, "untrusted", reason))
        return False

    def on_failure(_manager: Any, ep: metadata.EntryPoint, err: BaseException) -> None:
        reason = import_failure(group, ep, binding(ep).origin.name, err)
        failures.append(not_loaded(ep, "broken", reason))

    # A plugin that prints when imported (a debug line) wrote into the middle of a
    # command's --format json on standard output: what it prints goes to stderr.
    with stdout_to_stderr():
        found = index.entry_points(group)
        manager = _TrustedExtensionManager(group, found, admit, binding, on_failure)
    infos: list[ComponentInfo] = []
    seen: set[tuple[str, str, str]] = set()
    for ext in manager.extensions:
        bound = binding(ext.entry_point)
        key = (ext.name, ext.entry_point.value, bound.origin.name)
        if key in seen:  # the same distribution found twice on sys.path
            continue
        seen.add(key)
        reason = refusal_reason(kind, ext.name, ext.plugin)
        status: Status = "refused" if reason else "ok"
        cls = None if reason else ext.plugin
        declared = getattr(ext.plugin, "contract_version", "")
        declared_name = getattr(ext.plugin, "name", "")
        infos.append(
            ComponentInfo(
                kind,
                ext.name,
                ext.entry_point.value,
                bound.origin.name,
                bound.origin.version,
                status,
                reason or "",
                cls,
                declared if isinstance(declared, str) else "",
                module_file(ext.entry_point.value) or bound.module_file,
                bound.doubt,
                declared_name
                if reason and isinstance(declared_name, str) and declared_name != ext.name
                else "",
            )
        )
    return infos + failures + _unique(untrusted)


def _unique(infos: list[ComponentInfo]) -> list[ComponentInfo]:
    """``infos`` without repeats (the same distribution found twice on ``sys.path``)."""
    seen: set[tuple[str, str, str]] = set()
    unique = []
    for info in infos:
        key = (info.name, info.target, info.distribution)
        if key not in seen:
            seen.add(key)
            unique.append(info)
    return unique


def _mark_conflicts(infos: list[ComponentInfo]) -> list[ComponentInfo]:
    """Mark every entry whose (kind, name) another registration shares.

    A registration is a distribution *and* its entry point's target, not a
    distribution's name alone: a folder on ``PYTHONPATH`` declaring itself
    ``seamline-components`` and registering ``npy`` was listed ``ok`` beside the real
    ``npy`` (a pipeline asking for it was refused, rightly, as registered twice).
    """
    owners: dict[tuple[Kind, str], list[ComponentInfo]] = defaultdict(list)
    for info in infos:
        if info.status != "untrusted":  # never a candidate, so never in the way
            owners[(info.kind, info.name)].append(info)
    marked = []
    for info in infos:
        others = {
            _owner(other, same_name=other.distribution == info.distribution)
            for other in owners[(info.kind, info.name)]
            if (other.distribution, other.target) != (info.distribution, info.target)
        }
        if others and info.status != "untrusted":
            reason = f"name also registered by {', '.join(sorted(others))}"
            info = replace(info, status="conflict", reason=reason)
        marked.append(info)
    return marked


def _owner(info: ComponentInfo, *, same_name: bool) -> str:
    """The distribution of a conflicting entry, told apart from one of the same name."""
    if not same_name:
        return info.distribution
    return (
        f"{info.distribution} {info.version} ({info.target}), another distribution of the same name"
    )


def _defined_at(cls: type) -> str:
    """``module:QualName`` of the module that defines ``cls``."""
    return f"{cls.__module__}:{cls.__qualname__}"
