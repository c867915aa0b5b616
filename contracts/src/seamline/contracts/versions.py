"""Contract versions and the compatibility rule between component and host.

Each contract has a semantic version. A component declares the version it was
written against; the host accepts it when the major versions match and the
component's minor version is not newer than the host's (it might rely on
something the host does not have yet).
"""

from __future__ import annotations

from importlib import metadata
from typing import Final, Literal

from seamline.contracts.untrusted import is_count

Kind = Literal["attention", "model", "loader", "monitor", "sink", "executor"]

KINDS: Final[tuple[Kind, ...]] = ("attention", "model", "loader", "monitor", "sink", "executor")

CONTRACT_VERSIONS: Final[dict[Kind, str]] = {
    "attention": "1.2",
    "model": "1.4",
    "loader": "1.2",
    "monitor": "1.6",
    "sink": "1.6",
    "executor": "1.2",
}


def parse_version(text: str) -> tuple[int, int]:
    """Parse ``MAJOR.MINOR`` (a trailing ``.PATCH`` is allowed and ignored)."""
    parts = text.strip().split(".")
    if len(parts) not in (2, 3) or not all(is_count(p, 6) for p in parts):
        raise ValueError(f"contract version {text!r} is not MAJOR.MINOR[.PATCH]")
    return int(parts[0]), int(parts[1])


def compatibility_problem(kind: Kind, declared: str) -> str | None:
    """Return why a component declaring ``declared`` cannot be hosted, or None if it can."""
    host = CONTRACT_VERSIONS[kind]
    try:
        major, minor = parse_version(declared)
    except ValueError as err:
        return str(err)
    host_major, host_minor = parse_version(host)
    if major != host_major:
        return (
            f"implements {kind} contract {declared} but this seamline hosts {host}: "
            f"major versions differ; use a release of the component built for {host_major}.x"
        )
    if minor > host_minor:
        return (
            f"implements {kind} contract {declared}, newer than this seamline's {host}: "
            "upgrade seamline-contracts"
        )
    return None


def installed_version(distribution: str, missing: str = "not installed") -> str:
    """The installed version of ``distribution``, or ``missing`` when it is not installed.

    The one place seamline asks: records, caches and manifests all pin versions with it.
    """
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return missing
