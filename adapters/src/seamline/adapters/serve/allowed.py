"""The names ``--allowed-host`` and ``--allowed-origin`` compare, as requests carry them.

Apart from :mod:`seamline.adapters.serve.guard` (which needs Starlette, the serve extra)
so that the command checks its options before it knows the extra is installed:
``seamline serve`` without the extra must say what to install, not fail importing it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

ANY = "*"


def is_loopback_name(host: str) -> bool:
    """Whether ``host`` (no port, lower case) names this machine's loopback interface."""
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def host_name(header: str) -> str:
    """The name of a ``Host`` header: no port, no IPv6 brackets, no final dot, lower case."""
    value = header.strip().lower()
    if value.startswith("["):  # [::1]:8000
        return value[1:].partition("]")[0]
    name, colon, port = value.rpartition(":")
    if colon and port.isdigit() and ":" not in name:
        value = name
    return value.rstrip(".")


DEFAULT_PORTS = {"http": "80", "https": "443"}


def origin_of(value: str) -> str:
    """An origin as browsers send it: lower case, no final ``/``, no default port
    (``https://App.example.com:443/`` -> ``https://app.example.com``)."""
    origin = value.strip().lower().rstrip("/")
    scheme, sep, rest = origin.partition("://")
    name, colon, port = rest.rpartition(":")
    if sep and colon and "]" not in port and DEFAULT_PORTS.get(scheme) == port:
        return f"{scheme}://{name}"
    return origin


def option_problems(hosts: Iterable[str], origins: Iterable[str]) -> list[str]:
    """``--allowed-host`` and ``--allowed-origin`` values that could never match a request:
    a URL given as a host (``http://proxy.example``), an origin without its scheme
    (``app.example.com``: browsers send ``https://app.example.com``) or with a path. Such a
    value was taken without a word, and every request it was meant for refused."""
    problems = [
        f"--allowed-host takes a host name (proxy.example, *.example.com, *), not {host!r}"
        for host in hosts
        if "/" in host or not host.strip()
    ]
    for origin in origins:
        scheme, sep, rest = origin.strip().partition("://")
        if origin.strip() == ANY:
            continue
        if not sep or not scheme or not rest or "/" in rest.rstrip("/"):
            problems.append(
                "--allowed-origin takes an origin as browsers send it, scheme and host "
                f"(https://app.example.com, http://localhost:3000, *), not {origin!r}"
            )
    return problems
