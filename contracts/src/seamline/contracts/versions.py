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


def a_kind(kind: str) -> str:
    """``kind`` with its article, for a message: "an attention", "an executor", "a sink"."""
    return f"an {kind}" if kind[:1] in "aeiou" else f"a {kind}"


CONTRACT_VERSIONS: Final[dict[Kind, str]] = {
    "attention": "1.2",
    "model": "1.4",
    "loader": "1.3",
    "monitor": "1.6",
    "sink": "1.6",
    "executor": "1.2",
}


def parse_version(text: str) -> tuple[int, int]:
    """Parse ``MAJOR.MINOR`` (a trailing ``.PATCH`` is allowed and ignored).

    Written one way only: ``' 1.1 '`` and ``'01.02'`` were taken as 1.1 and 1.2, while a
    conformance record pins the version as written, so one version had several spellings
    that compared unequal. Spaces and leading zeros are refused, naming the plain form."""
    parts = text.strip().split(".")
    if len(parts) not in (2, 3) or not all(is_count(p, 6) for p in parts):
        raise ValueError(f"contract version {text!r} is not MAJOR.MINOR[.PATCH]")
    plain = ".".join(str(int(p)) for p in parts)
    if plain != text:
        raise ValueError(
            f"contract version {text!r} is not written plainly (no spaces, no leading "
            f"zeros): write {plain!r}"
        )
    return int(parts[0]), int(parts[1])


def compatibility_problem(kind: Kind, declared: str) -> str | None:
    """Return why a component declaring ``declared`` cannot be hosted, or None if it can.

    The reason is read by a user whose run refused the component and by its author
    running the conformance suite, so a version the host cannot take says which versions
    it does take and what to change.
    """
    host = CONTRACT_VERSIONS[kind]
    host_major, host_minor = parse_version(host)
    try:
        major, minor = parse_version(declared)
    except ValueError as err:
        return (
            f"{err}: declare the {kind} contract version the component implements ({hosted(kind)})"
        )
    if major != host_major:
        return (
            f"implements {kind} contract {declared} but this seamline hosts {host}: "
            f"major versions differ; use a release of the component built for {host_major}.x"
        )
    if minor > host_minor:
        return (
            f"implements {kind} contract {declared}, but {hosted(kind)}: upgrade "
            f"seamline-contracts to a release that hosts {declared}, or, if the component "
            "implements a version hosted here, declare that one as its contract_version"
        )
    return None


def hosted(kind: Kind) -> str:
    """Which versions of ``kind``'s contract the installed seamline-contracts hosts, in words."""
    host = CONTRACT_VERSIONS[kind]
    release = installed_version("seamline-contracts", missing="")
    this = f"seamline-contracts {release}" if release else "this seamline-contracts"
    major, minor = parse_version(host)
    versions = f"{major}.0 to {host}" if minor else host
    return f"{this} hosts {kind} contract {versions}"


def installed_version(distribution: str, missing: str = "not installed") -> str:
    """The installed version of ``distribution``, or ``missing`` when it is not installed.

    The one place seamline asks: records, caches and manifests all pin versions with it.
    """
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return missing
