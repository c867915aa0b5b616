"""The user's config file: settings for every pipeline this user runs (its ``trust``).

It lives at ``$SEAMLINE_CONFIG`` when that is set, else at
``$XDG_CONFIG_HOME/seamline/config.yaml`` (``~/.config/seamline/config.yaml`` when
``XDG_CONFIG_HOME`` is unset). The default file may be absent (no settings); a file
named by ``$SEAMLINE_CONFIG`` must exist, since naming one that is not there is a
mistake to report, not a reason to trust everything. It is read with the same bounded,
located YAML parser as pipeline files, and every problem names its place.

Every field it accepts takes effect (:func:`user_trust` turns each into the
:class:`~seamline.core.trust.TrustPolicy` every pipeline is resolved under); a field
that would not is not accepted: unknown fields are errors.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from seamline.contracts import ConfigError
from seamline.core.config import bounds
from seamline.core.config.located import Located, parse_located
from seamline.core.config.spec import TrustSettings
from seamline.core.directories import config_home
from seamline.core.trust import EVERYONE, TrustPolicy

CONFIG_VARIABLE = "SEAMLINE_CONFIG"
"""Names the user config file explicitly (it must then exist)."""


_VARIABLE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


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


class UserConfig(BaseModel):
    """The whole user config file; unknown fields are errors, as in pipeline files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trust: UserTrustSettings = Field(default_factory=UserTrustSettings)


def user_config_path(environ: Mapping[str, str] | None = None) -> tuple[Path, bool]:
    """Where the user config file is, and whether it was named explicitly (must exist)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_VARIABLE)
    if explicit:
        return Path(explicit), True
    return config_home(env) / "seamline" / "config.yaml", False


def user_trust(environ: Mapping[str, str] | None = None) -> TrustPolicy:
    """The trust policy of the user config file (no list when it sets none or is absent)."""
    path, explicit = user_config_path(environ)
    text = _read(path, explicit)
    if text is None or not text.strip():
        return EVERYONE
    source = str(path)
    located = parse_located(text, source)
    try:
        config = UserConfig.model_validate(located.data)
    except ValidationError as err:
        error = err.errors(include_url=False)[0]
        loc = tuple(error["loc"])
        dotted = ".".join(str(p) for p in loc) or "the file"
        allowed = f"trust (with {', '.join(UserTrustSettings.model_fields)})"
        if error["type"] == "extra_forbidden":
            message = f"unknown field {dotted!r} in the seamline user config; allowed: {allowed}"
            where = located.where(loc, key=True)
        else:
            message = f"{dotted}: {error['msg']} in the seamline user config"
            where = located.where(loc)
        raise ConfigError(message, where) from None
    return _policy(config.trust, located)


def _policy(trust: UserTrustSettings, located: Located) -> TrustPolicy:
    """The policy each field of the user's ``trust`` section asks for."""
    policy = TrustPolicy(
        require_conformance=(
            located.where(("trust", "require_conformance")) if trust.require_conformance else ""
        ),
        network_variables=frozenset(trust.network_variables),
        network_source=(
            located.where(("trust", "network_variables"))
            if "network_variables" in trust.model_fields_set
            else ""
        ),
    )
    if trust.distributions is None:
        return policy
    return policy.narrowed(trust.distributions, located.where(("trust", "distributions")))


def _read(path: Path, explicit: bool) -> str | None:
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise ConfigError(f"the seamline user config {path} is not a regular file")
        with open(path, "rb") as handle:
            data = handle.read(bounds.MAX_BYTES + 1)
        bounds.check_size(len(data), str(path))
        return data.decode("utf-8")
    except FileNotFoundError:
        if explicit:
            raise ConfigError(
                f"${CONFIG_VARIABLE} names {path}, which does not exist; create it or unset "
                f"{CONFIG_VARIABLE}"
            ) from None
        return None
    except (OSError, UnicodeDecodeError) as err:
        raise ConfigError(f"cannot read the seamline user config {path}: {err}") from None
