"""Conformance records on this host: where they are kept, whose they are, what they vouch for.

The record *schema* is in the contracts (:mod:`seamline.contracts.conformance`);
everything that depends on this installation lives here:

* the **store**: one JSON file per record key in ``$SEAMLINE_CONFORMANCE_DIR``, else
  the user's data directory;
* **attribution**: which distribution registers the component a record is about,
  as the registry found it (the registry is the one place that maps entry points
  to distributions);
* the **trust policy**: a component is trusted when a passing record exists for
  exactly its version, its configuration, and this JAX, jaxlib, platform and device
  kind. Nothing else counts, so a JAX upgrade withdraws a kernel's trust until the
  suite passes again, and the reason says what changed and the command that fixes it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from seamline.contracts import Component, Kind
from seamline.contracts.conformance import (
    ConformanceRecord,
    Environment,
    config_of,
    record_key,
)
from seamline.core.directories import data_home, named_directory
from seamline.core.registry import ComponentInfo, Registry

STORE_VARIABLE = "SEAMLINE_CONFORMANCE_DIR"
"""Environment variable naming the directory records are kept in."""


CONFORMANCE_GROUP = "seamline.conformance"
"""The entry-point group of conformance classes, named ``KIND:NAME``."""


def has_conformance_class(kind: Kind, name: str) -> bool:
    """Whether an installed distribution registers a conformance class for ``kind:name``.

    Reads entry-point metadata only: nothing is imported.
    """
    return any(ep.name == f"{kind}:{name}" for ep in entry_points(group=CONFORMANCE_GROUP))


def store_directory() -> Path:
    """Where records live: ``$SEAMLINE_CONFORMANCE_DIR``, else the user's data directory (a
    variable that names something other than a directory is a user error:
    :mod:`seamline.core.directories`)."""
    return named_directory(STORE_VARIABLE, data_home() / "seamline" / "conformance")


def save(record: ConformanceRecord, directory: Path | None = None) -> Path:
    """Write ``record`` into the store (replacing an older one with the same key), atomically."""
    target_dir = directory if directory is not None else store_directory()
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{record.kind}-{record.name}-{record.key()}.json"
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def load_records(directory: Path | None = None) -> list[ConformanceRecord]:
    """Every readable record in the store; a damaged file or another format proves nothing."""
    source = directory if directory is not None else store_directory()
    if not source.is_dir():
        return []
    records = []
    for path in sorted(source.glob("*.json")):
        try:
            records.append(ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8")))
        except ValueError:
            continue
    return records


def attribute(record: ConformanceRecord, registry: Registry) -> ConformanceRecord:
    """``record`` with the distribution that registers its component, as the registry found it.

    The suite itself runs without a host and cannot know which distribution an
    entry point belongs to; a record about a class no entry point registers (a test
    double, say) keeps ``None``.
    """
    info = registry.info_for_target(record.kind, record.component_class)
    if info is None:
        return record
    return record.model_copy(
        update={"distribution": info.distribution, "distribution_version": info.version}
    )


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
    wanted = record_key(kind, name, version, config, environment)
    fix = f"run 'seamline check {kind}:{name} --record'"
    if any(record.key() == wanted and record.passed for record in records):
        return None
    same = [r for r in records if r.key() == wanted]
    if same:
        return f"its conformance record for these versions fails ({same[-1].summary()}); {fix}"
    mine = [r for r in records if r.kind == kind and r.name == name]
    if not mine:
        return f"no conformance record; {fix}"
    latest = max(mine, key=lambda r: r.created)
    return (
        f"its conformance record is for {_differences(latest, version, config, environment)}; {fix}"
    )


def _differences(
    record: ConformanceRecord,
    version: str | None,
    config: Mapping[str, Any] | None,
    environment: Environment,
) -> str:
    parts = []
    if record.distribution_version != version:
        parts.append(f"version {record.distribution_version} (installed: {version})")
    if record.config != (dict(config) if config is not None else None):
        parts.append("another configuration")
    for field in ("jax", "jaxlib", "platform", "device_kind"):
        then, now = getattr(record.environment, field), getattr(environment, field)
        if then != now:
            parts.append(f"{field} {then} (now: {now})")
    return ", ".join(parts) or "other versions"
