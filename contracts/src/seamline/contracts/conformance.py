"""Conformance records: proof that a component passed the contract suite, and where.

A record is written by ``seamline check KIND:NAME --record`` (or by pytest with
``--seamline-record``) and read by the host when a pipeline sets
``require_conformance: true``. It pins everything a passing result depends on: the
component's distribution and version, its configuration, the contract version,
and the JAX, jaxlib, platform and device kind it ran on. A record for other
versions does not count, so upgrading JAX withdraws a kernel's trust until the
suite passes again on the new versions — the upgrade breakage seamline exists to
catch happens in a check, not in production.

This module has no test-framework dependency: the host reads records with it.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform as host_platform
from collections.abc import Mapping
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seamline.contracts.component import Component
from seamline.contracts.versions import KINDS, Kind

RECORD_FORMAT = 1
STORE_VARIABLE = "SEAMLINE_CONFORMANCE_DIR"
"""Environment variable naming the directory records are kept in."""

Outcome = Literal["passed", "failed", "skipped", "error"]


class CheckResult(BaseModel):
    """One check of the suite and how it went."""

    model_config = ConfigDict(frozen=True)

    check: str
    outcome: Outcome
    message: str = ""


class Environment(BaseModel):
    """What a result depends on besides the component: library versions and hardware."""

    model_config = ConfigDict(frozen=True)

    jax: str
    jaxlib: str
    platform: str
    device_kind: str
    python: str
    contracts: str


class ConformanceRecord(BaseModel):
    """The outcome of the suite for one component, configuration and environment."""

    model_config = ConfigDict(frozen=True)

    format: int = RECORD_FORMAT
    kind: Kind
    name: str
    component_class: str
    distribution: str | None = Field(
        description="The distribution whose entry point registers the component, if any."
    )
    distribution_version: str | None
    contract_version: str
    config: dict[str, Any] | None = Field(
        description="The configuration checked; None for kinds built per test over "
        "temporary paths (loaders, sinks)."
    )
    environment: Environment
    created: str
    results: tuple[CheckResult, ...]

    @property
    def passed(self) -> bool:
        """No check failed or errored, and at least one passed (all-skipped proves nothing)."""
        outcomes = {result.outcome for result in self.results}
        return "passed" in outcomes and not outcomes & {"failed", "error"}

    def key(self) -> str:
        """What a record is about, as a short hash: one file per key in the store."""
        return record_key(
            self.kind,
            self.name,
            self.distribution_version,
            self.config,
            self.environment,
        )

    def summary(self) -> str:
        counts: dict[str, int] = {}
        for result in self.results:
            counts[result.outcome] = counts.get(result.outcome, 0) + 1
        return ", ".join(f"{n} {outcome}" for outcome, n in sorted(counts.items()))


def record_key(
    kind: str,
    name: str,
    version: str | None,
    config: Mapping[str, Any] | None,
    environment: Environment,
) -> str:
    env = environment.model_dump(exclude={"python", "contracts"})
    pinned = dict(config) if config is not None else None
    text = json.dumps([kind, name, version, pinned, env], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def current_environment() -> Environment:
    """The environment of this process (importing JAX to ask for the device)."""
    import jax

    device = jax.devices()[0]
    return Environment(
        jax=_version("jax"),
        jaxlib=_version("jaxlib"),
        platform=jax.default_backend(),
        device_kind=str(device.device_kind),
        python=host_platform.python_version(),
        contracts=_version("seamline-contracts"),
    )


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "not installed"


def distribution_of(component_class: type[Component[Any]]) -> tuple[str, str] | None:
    """The (distribution, version) whose entry point registers exactly this class, if any."""
    target = f"{component_class.__module__}:{component_class.__qualname__}"
    return distribution_of_path(component_class.kind, target)


def distribution_of_path(kind: str, class_path: str) -> tuple[str, str] | None:
    """Like :func:`distribution_of`, for a class named ``module:QualName``."""
    if kind not in KINDS:
        return None
    for entry_point in metadata.entry_points(group=f"seamline.{kind}"):
        if entry_point.value.replace(" ", "") == class_path and entry_point.dist is not None:
            return entry_point.dist.name, entry_point.dist.version
    return None


def config_of(component: Component[Any]) -> dict[str, Any]:
    """The component's configuration as JSON data (what a record pins)."""
    dumped: dict[str, Any] = component.config.model_dump(mode="json")
    return dumped


def store_directory() -> Path:
    """Where records live: ``$SEAMLINE_CONFORMANCE_DIR``, else the user's data directory."""
    explicit = os.environ.get(STORE_VARIABLE)
    if explicit:
        return Path(explicit).expanduser()
    data_home = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(data_home) / "seamline" / "conformance"


def save(record: ConformanceRecord, directory: Path | None = None) -> Path:
    """Write ``record`` into the store (replacing an older one with the same key)."""
    target_dir = directory if directory is not None else store_directory()
    target_dir.mkdir(parents=True, exist_ok=True)
    path = target_dir / f"{record.kind}-{record.name}-{record.key()}.json"
    temporary = path.with_name(f".{path.name}.tmp")
    temporary.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    temporary.replace(path)
    return path


def load_records(directory: Path | None = None) -> list[ConformanceRecord]:
    """Every readable record in the store; unreadable files are skipped by the caller's choice."""
    source = directory if directory is not None else store_directory()
    if not source.is_dir():
        return []
    records = []
    for path in sorted(source.glob("*.json")):
        try:
            records.append(ConformanceRecord.model_validate_json(path.read_text(encoding="utf-8")))
        except ValueError:
            continue  # another format or a damaged file: it proves nothing
    return records


def trust_problem(
    component: Component[Any],
    environment: Environment,
    records: list[ConformanceRecord],
) -> str | None:
    """Why ``component`` is not trusted here and now (None: a passing record matches).

    The message names what is missing — no record at all, a record for other
    versions, or a failing one — and the command that would produce a fresh one.
    """
    kind, name = component.kind, component.name
    found = distribution_of(type(component))
    version = found[1] if found else None
    config = config_of(component)
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
    differences = _differences(latest, version, config, environment)
    return f"its conformance record is for {differences}; {fix}"


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


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
