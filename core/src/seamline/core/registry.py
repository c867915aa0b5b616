"""Discovery of components through entry points, with every failure kept visible.

Each kind of component has an entry-point group (``seamline.attention``,
``seamline.model``, ...). The registry loads every entry point with stevedore and
records, for each, the distribution that registered it and whether it is usable:

* a plugin that fails to import is *broken*: it is listed with the reason and
  every other component stays usable;
* a plugin that imports but does not honour the component rules (wrong base
  class, name, config model or a contract major version this seamline cannot
  host) is *refused*, with the reason;
* two distributions registering the same name are a *conflict*: neither is used
  and asking for the name is an error naming both (no silent last-one-wins).
"""

from __future__ import annotations

import importlib.metadata as metadata
from collections import defaultdict
from collections.abc import Iterable, Mapping
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
    DuplicateComponentError,
    Kind,
)
from seamline.contracts.versions import compatibility_problem
from seamline.core.suggest import did_you_mean

GROUP_PREFIX = "seamline."

Status = Literal["ok", "broken", "refused", "conflict"]


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

    @property
    def usable(self) -> bool:
        return self.status == "ok" and self.cls is not None


def _distribution_index() -> dict[tuple[str, str, str], tuple[str, str]]:
    """Map ``(group, name, target)`` of each seamline entry point to ``(distribution, version)``."""
    index: dict[tuple[str, str, str], tuple[str, str]] = {}
    for dist in metadata.distributions():
        for ep in dist.entry_points:
            if ep.group.startswith(GROUP_PREFIX):
                name = dist.metadata["Name"] or "?"
                index.setdefault((ep.group, ep.name, ep.value), (name, dist.version))
    return index


def refusal_reason(kind: Kind, name: str, plugin: object) -> str | None:
    """Why a loaded entry point cannot serve as a component of ``kind``, or None."""
    if not isinstance(plugin, type) or not issubclass(plugin, Component):
        return f"entry point does not name a seamline component class (got {plugin!r})"
    if getattr(plugin, "kind", None) != kind:
        return f"is a {getattr(plugin, 'kind', '?')} component registered as a {kind}"
    for attribute in ("name", "contract_version"):
        if not isinstance(getattr(plugin, attribute, None), str):
            return f"does not declare {attribute!r} (every component must)"
    if plugin.name != name:
        return f"declares name {plugin.name!r} but is registered as {name!r}"
    config: object = getattr(plugin, "Config", None)
    if not (isinstance(config, type) and issubclass(config, ComponentConfig)):
        return "its Config is not a seamline ComponentConfig (pydantic) model"
    if config.model_config.get("extra") != "forbid":
        return 'its Config must forbid unknown fields (model_config extra="forbid")'
    return compatibility_problem(kind, plugin.contract_version)


class Registry:
    """Every component of every kind that the installed distributions register."""

    def __init__(self, infos: Iterable[ComponentInfo], *, discovered: bool = False) -> None:
        self._by_kind: dict[Kind, dict[str, list[ComponentInfo]]] = {k: {} for k in KINDS}
        for info in infos:
            self._by_kind[info.kind].setdefault(info.name, []).append(info)
        self.discovered = discovered
        """Whether this is what the environment's entry points register (another process
        of the same environment can discover it again), or a registry built by hand."""

    @classmethod
    def discover(cls) -> Registry:
        """Load every seamline entry point of the current environment."""
        # stevedore memoises entry points per process; a fresh look sees plugins installed since.
        ExtensionManager.ENTRY_POINT_CACHE.clear()
        index = _distribution_index()
        infos: list[ComponentInfo] = []
        for kind in KINDS:
            infos.extend(_load_group(kind, index))
        return cls(_mark_conflicts(infos), discovered=True)

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
        return sorted(n for n, infos in self._by_kind[kind].items() if infos[0].usable)

    def get(self, kind: Kind, name: str) -> ComponentInfo:
        """The usable component ``kind:name``, or an error that says what to do instead."""
        infos = self._by_kind[kind].get(name)
        if not infos:
            available = self.names(kind)
            raise ComponentNotFoundError(
                f"no {kind} component named {name!r}{did_you_mean(name, available)}; "
                f"available: {', '.join(available) or 'none installed'}"
            )
        if len(infos) > 1:
            owners = " and ".join(f"{i.distribution} {i.version} ({i.target})" for i in infos)
            raise DuplicateComponentError(
                f"{kind} component {name!r} is registered by {owners}; "
                "uninstall one of them or ask its author to rename the entry point"
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

    def info_for_target(self, kind: Kind, target: str) -> ComponentInfo | None:
        """The entry registering the class named ``module:QualName`` as a ``kind``, if any.

        This is how records and spans learn which distribution provides a component:
        from the index discovery built once, never by scanning entry points again.
        """
        wanted = target.replace(" ", "")
        for infos in self._by_kind[kind].values():
            for info in infos:
                if info.target.replace(" ", "") == wanted:
                    return info
        return None

    def info_of(self, component: Component[Any]) -> ComponentInfo | None:
        """The entry that registers ``component``'s exact class, or None for a hand-made one."""
        cls = type(component)
        for info in self._by_kind[component.kind].get(component.name, []):
            if info.cls is cls:
                return info
        return self.info_for_target(component.kind, f"{cls.__module__}:{cls.__qualname__}")

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
        return info.cls(config)


def _load_group(
    kind: Kind, index: Mapping[tuple[str, str, str], tuple[str, str]]
) -> list[ComponentInfo]:
    group = group_of(kind)
    failures: list[ComponentInfo] = []

    def attribution(ep: metadata.EntryPoint) -> tuple[str, str]:
        return index.get((group, ep.name, ep.value), ("unknown", "?"))

    def on_failure(_manager: Any, ep: metadata.EntryPoint, err: BaseException) -> None:
        dist, version = attribution(ep)
        reason = f"import failed: {type(err).__name__}: {err}"
        failures.append(ComponentInfo(kind, ep.name, ep.value, dist, version, "broken", reason))

    manager = ExtensionManager(namespace=group, on_load_failure_callback=on_failure)
    infos: list[ComponentInfo] = []
    seen: set[tuple[str, str, str]] = set()
    for ext in manager.extensions:
        dist, version = attribution(ext.entry_point)
        key = (ext.name, ext.entry_point.value, dist)
        if key in seen:  # the same distribution found twice on sys.path
            continue
        seen.add(key)
        reason = refusal_reason(kind, ext.name, ext.plugin)
        status: Status = "refused" if reason else "ok"
        cls = None if reason else ext.plugin
        declared = getattr(ext.plugin, "contract_version", "")
        infos.append(
            ComponentInfo(
                kind,
                ext.name,
                ext.entry_point.value,
                dist,
                version,
                status,
                reason or "",
                cls,
                declared if isinstance(declared, str) else "",
            )
        )
    return infos + failures


def _mark_conflicts(infos: list[ComponentInfo]) -> list[ComponentInfo]:
    """Mark every entry whose (kind, name) is registered by more than one distribution."""
    owners: dict[tuple[Kind, str], set[str]] = defaultdict(set)
    for info in infos:
        owners[(info.kind, info.name)].add(info.distribution)
    marked = []
    for info in infos:
        others = owners[(info.kind, info.name)] - {info.distribution}
        if others:
            reason = f"name also registered by {', '.join(sorted(others))}"
            info = replace(info, status="conflict", reason=reason)
        marked.append(info)
    return marked
