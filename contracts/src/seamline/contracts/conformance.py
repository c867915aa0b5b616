"""The schema of conformance records: proof that a component passed the contract suite, and where.

A record is written by ``seamline check KIND:NAME --record`` (or by pytest with
``--seamline-record``) and read by the host when a pipeline sets
``require_conformance: true``. It pins everything a passing result depends on: the
component's class, its distribution and version and a digest of its code, its
configuration, the contract version, and the JAX, jaxlib, platform and device kind
it ran on. A record for other
versions does not count, so upgrading JAX withdraws a kernel's trust until the
suite passes again on the new versions — the upgrade breakage seamline exists to
catch happens in a check, not in production.

Only the *schema* lives here, in the contracts: what a record says and how it is
keyed. Where records are kept, which distribution registers a component, and
whether a record vouches for a component are the host's business
(``seamline.core.trust.records``). This module has no test-framework dependency.
"""

from __future__ import annotations

import hashlib
import json
import platform as host_platform
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from seamline.contracts.component import Component
from seamline.contracts.versions import Kind, installed_version

RECORD_FORMAT = 1

CONFIG_FREE_KINDS: frozenset[str] = frozenset({"loader", "sink"})
"""Kinds whose conformance suite builds the component over inputs and paths of its own
(temporary folders), not the user's configuration: their record holds no configuration
(``config: null``) and vouches for the code under any, so that ``seamline check
loader:NAME --record`` clears that loader in every pipeline."""

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
    code_digest: str | None = Field(
        default=None,
        description="A digest of the code of the package the component's class belongs to, "
        "as the host computes it; None for a record credited to no distribution, or one "
        "made before records pinned code (neither earns trust).",
    )
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
            self.contract_version,
        )

    def summary(self) -> str:
        """``27 passed, 6 skipped``; a record with no results says so (it read ``fails ()``)."""
        if not self.results:
            return "no results"
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
    contract_version: str | None = None,
) -> str:
    """What a record is about, as a short hash. The component's contract version is part
    of it: a record earned against contract 1.4 cleared a sink that declares 1.6, whose
    suite has checks the record never ran (an upgrade must withdraw trust until the
    suite passes again). Records from before it was part of the key no longer match."""
    env = environment.model_dump(exclude={"python", "contracts"})
    pinned = dict(config) if config is not None else None
    about = [kind, name, version, pinned, env, contract_version]
    text = json.dumps(about, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def current_environment() -> Environment:
    """The environment of this process (importing JAX to ask for the device)."""
    import jax

    device = jax.devices()[0]
    return Environment(
        jax=installed_version("jax"),
        jaxlib=installed_version("jaxlib"),
        platform=jax.default_backend(),
        device_kind=str(device.device_kind),
        python=host_platform.python_version(),
        contracts=installed_version("seamline-contracts"),
    )


def config_of(component: Component[Any]) -> dict[str, Any]:
    """The component's configuration as JSON data (what a record pins)."""
    dumped: dict[str, Any] = component.config.model_dump(mode="json")
    return dumped


def now_text() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
