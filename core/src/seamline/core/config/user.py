"""The user's config file: settings for every pipeline this user runs (its ``trust``).

It lives at ``$SEAMLINE_CONFIG`` when that is set, else at
``$XDG_CONFIG_HOME/seamline/config.yaml`` (``~/.config/seamline/config.yaml`` when
``XDG_CONFIG_HOME`` is unset; none where there is no home, as for an arbitrary uid in a
container: no settings). The default file may be absent (no settings); a file
named by ``$SEAMLINE_CONFIG`` must exist, since naming one that is not there is a
mistake to report, not a reason to trust everything. It is read with the same bounded,
located YAML parser as pipeline files, and every problem names its place.

Every field it accepts takes effect: what each means is decided in the trust package
(:func:`seamline.core.trust.settings.user_policy` turns the ``trust`` section into the
:class:`~seamline.core.trust.TrustPolicy` every pipeline is resolved under); this module
finds, reads and validates the file. A field that would not take effect is not
accepted: unknown fields are errors.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from seamline.contracts import ConfigError
from seamline.contracts.untrusted import NotRegularFile, read_regular
from seamline.contracts.workdir import gone_under
from seamline.core.config import bounds
from seamline.core.config.located import parse_located
from seamline.core.directories import config_home, under
from seamline.core.trust import EVERYONE, TrustPolicy, UserTrustSettings, user_policy

CONFIG_VARIABLE = "SEAMLINE_CONFIG"
"""Names the user config file explicitly (it must then exist)."""


class UserConfig(BaseModel):
    """The whole user config file; unknown fields are errors, as in pipeline files."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    trust: UserTrustSettings = Field(default_factory=UserTrustSettings)


def user_config_path(environ: Mapping[str, str] | None = None) -> tuple[Path | None, bool]:
    """Where the user config file is (None: no home, so no default file), and whether it
    was named explicitly (must exist)."""
    env = os.environ if environ is None else environ
    explicit = env.get(CONFIG_VARIABLE)
    if explicit:
        return Path(explicit), True
    return under(config_home(env), "seamline", "config.yaml"), False


def user_trust(environ: Mapping[str, str] | None = None) -> TrustPolicy:
    """The trust policy of the user config file (no list when it sets none or is absent)."""
    path, explicit = user_config_path(environ)
    text = None if path is None else _read(path, explicit)
    if text is None or not text.strip():
        return EVERYONE
    source = str(path)  # not None: text was read from it
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
    return user_policy(config.trust, located.where)


def _read(path: Path, explicit: bool) -> str | None:
    try:
        data = read_regular(path, bounds.MAX_BYTES)
        bounds.check_size(len(data), str(path))
        return bounds.utf8_text(data, str(path), "the seamline user config")
    except NotRegularFile as err:
        raise ConfigError(
            f"the seamline user config {path} is not a regular file ({err})"
        ) from None
    except FileNotFoundError:
        if explicit:
            gone_under(path)  # from a deleted folder: cd again, though the name may exist
            raise ConfigError(
                f"${CONFIG_VARIABLE} names {path}, which does not exist; create it or unset "
                f"{CONFIG_VARIABLE}"
            ) from None
        return None
    except OSError as err:
        raise ConfigError(f"cannot read the seamline user config {path}: {err}") from None
