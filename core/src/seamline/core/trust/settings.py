"""The ``trust`` sections a user writes, and the policy each field of them asks for.

Two files hold a ``trust`` section: a pipeline (:class:`TrustSettings`, read by
:mod:`seamline.core.config`) and the user's config file (:class:`UserTrustSettings`,
read by :mod:`seamline.core.config.user`). Reading a file and locating its errors is
the config package's job; what each field *means* is decided here, once, so that a
field cannot be accepted in one place and ignored in another:

* ``distributions`` adds an allowlist (:meth:`TrustPolicy.narrowed`): it can only narrow;
* ``require_conformance`` asks every component used for a passing conformance record
  (:mod:`seamline.core.trust.earned`);
* ``network_variables`` (the user's only) names the environment variables a pipeline may
  send off this machine (:mod:`seamline.core.config.network`).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from pydantic import BaseModel, ConfigDict, Field, field_validator

from seamline.core.trust.policy import TrustPolicy

_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

Where = Callable[[tuple[str, ...]], str]
"""``file:line:column`` of the value at a path of the file a section was read from."""


class TrustSettings(BaseModel):
    """Which distributions may provide this pipeline's components (see docs/pipelines.md#trust)."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    distributions: list[str] | None = Field(
        default=None,
        description=(
            "The distributions allowed to provide components, by their installed names "
            "(as `seamline components` shows them, e.g. seamline-components). Entry points "
            "of any other distribution are never imported, and naming one of their "
            "components is an error. It narrows the user config's list (a distribution "
            "must be on both); it can never widen it. Default: unset, every installed "
            "distribution (within the user config's list, if any)."
        ),
    )
    require_conformance: bool = Field(
        default=False,
        description=(
            "Use only components that register a conformance class (entry point "
            "seamline.conformance KIND:NAME) and have a passing conformance record "
            "(seamline check KIND:NAME --record) for their installed version, their "
            "configuration and this JAX, jaxlib and platform: the loader, model, sink, "
            "monitors and executor are checked when the pipeline is resolved (an error at "
            "the use: otherwise), and attention.require_conformance is switched on."
        ),
    )


class UserTrustSettings(TrustSettings):
    """A pipeline's ``trust`` fields, for every pipeline, and one only the user may set."""

    require_conformance: bool = Field(
        default=False,
        description=(
            "Every pipeline this user runs requires conformance, as if its own "
            "trust.require_conformance were true (a pipeline cannot switch it off)."
        ),
    )
    network_variables: list[str] = Field(
        default_factory=list,
        description=(
            "Environment variables a pipeline may put (as ${NAME}) into values that leave "
            "this machine (telemetry.otlp_endpoint, telemetry.service_name, a Ray cluster's "
            "address, ...), and send along with a receiver a pipeline file names (the OTLP "
            "exporters' OTEL_EXPORTER_OTLP_HEADERS). Any other variable there is refused. "
            "Only here: a pipeline file cannot name its own."
        ),
    )

    @field_validator("network_variables")
    @classmethod
    def _names(cls, value: list[str]) -> list[str]:
        for name in value:
            if not _VARIABLE.fullmatch(name):
                raise ValueError(f"{name!r} is not an environment variable's name")
        return value


def user_policy(trust: UserTrustSettings, where: Where) -> TrustPolicy:
    """The policy each field of the user's ``trust`` section asks for.

    ``where`` locates a field (``("trust", "distributions")``) in the user's file: the
    policy's reasons name the place a user would edit.
    """
    policy = TrustPolicy(
        require_conformance=(
            where(("trust", "require_conformance")) if trust.require_conformance else ""
        ),
        network_variables=frozenset(trust.network_variables),
        network_source=(
            where(("trust", "network_variables"))
            if "network_variables" in trust.model_fields_set
            else ""
        ),
    )
    if trust.distributions is None:
        return policy
    return policy.narrowed(trust.distributions, where(("trust", "distributions")))


def pipeline_policy(settings: TrustSettings, base: TrustPolicy, where: Where) -> TrustPolicy:
    """``base`` narrowed by a pipeline's ``trust.distributions``, if it sets one."""
    if settings.distributions is None:
        return base
    return base.narrowed(settings.distributions, where(("trust", "distributions")))
