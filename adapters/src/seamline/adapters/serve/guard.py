"""Which ``Host`` and ``Origin`` a request may carry: no web page may talk to the server.

The server has no authentication, and listening on 127.0.0.1 kept other machines out but
not a web page in the user's own browser: one whose name is rebound to 127.0.0.1 (DNS
rebinding) is then the server's own origin, and read ``/v1/search``'s hits, every
document's text; any page could also send it requests (a ``text/plain`` POST needs no
preflight). So, as Ollama (after CVE-2024-28224) and Jupyter do:

* listening on a loopback address, a request whose ``Host`` is not a loopback name
  (``localhost``, ``*.localhost``, ``127.0.0.0/8``, ``::1``, any port) is refused, 403:
  a rebound page's requests carry its own name. ``--allowed-host NAME`` adds names (a
  proxy's; its port, if given, is not compared). Listening on another address, the
  ``Host`` is not checked unless ``--allowed-host`` is given, and then loopback names
  stay allowed (a sidecar's or ``kubectl exec``'s ``curl localhost``) and ``GET
  /healthz`` and ``/metrics`` are not checked (a kubelet's probes and Prometheus name the
  pod by its IP address);
* a request that carries an ``Origin`` (every browser's cross-site request does; other
  clients send none) is refused, 403, unless ``--allowed-origin`` names it.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from seamline.adapters.serve.allowed import (
    ANY,
    host_name,
    is_loopback_name,
    option_problems,
    origin_of,
)
from seamline.adapters.serve.errors import ApiError

__all__ = ["Guard", "HostAndOrigin", "host_name", "option_problems"]

UNCHECKED_PATHS = frozenset({"/healthz", "/metrics"})
"""Probed and scraped by the pod's address: not refused for their ``Host`` (off loopback)."""


@dataclass(frozen=True, slots=True)
class Guard:
    """The hosts and origins the server answers (:func:`for_address` decides)."""

    loopback: bool = False
    """Loopback names are allowed (and ``Host`` checked): the server listens on loopback."""
    hosts: tuple[str, ...] = ()
    """``--allowed-host``: names (``*.example.com`` for its subdomains, ``*`` for any)."""
    origins: tuple[str, ...] = ()
    """``--allowed-origin``: origins (``https://app.example.com``; ``*`` for any)."""

    @classmethod
    def for_address(
        cls, listening: str, hosts: Iterable[str] = (), origins: Iterable[str] = ()
    ) -> Guard:
        """The guard of a server listening on ``listening`` (an IP address)."""
        try:
            loopback = ipaddress.ip_address(listening.partition("%")[0]).is_loopback
        except ValueError:
            loopback = False
        return cls(
            loopback,
            tuple(host_name(host) for host in hosts),
            tuple(origin_of(origin) for origin in origins),
        )

    @property
    def checks_host(self) -> bool:
        return (self.loopback or bool(self.hosts)) and ANY not in self.hosts

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request whose ``Host`` is ``header`` is answered (none: HTTP/1.0's
        clients; a browser always sends one)."""
        if not self.checks_host or header is None:
            return True
        name = host_name(header)
        if is_loopback_name(name):  # only this machine's pages and clients name it so
            return True
        return any(
            name == host or (host.startswith("*.") and name.endswith(host[1:]))
            for host in self.hosts
        )

    def origin_allowed(self, origin: str | None) -> bool:
        if origin is None:
            return True
        return ANY in self.origins or origin_of(origin) in self.origins


class HostAndOrigin:
    """ASGI middleware: a request whose ``Host`` or ``Origin`` the guard refuses is
    answered 403 in the server's error shape before any route sees it; ``counted`` is
    told each refusal's code (``/metrics``: a rebinding attempt or a proxy sending a name
    not allowed was seen nowhere but in the access log)."""

    def __init__(
        self, app: ASGIApp, guard: Guard, counted: Callable[[str], None] | None = None
    ) -> None:
        self.app = app
        self.guard = guard
        self.counted = counted

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            refusal = self._refusal(scope)
            if refusal is not None:
                if self.counted is not None:
                    self.counted(refusal.code)
                await refusal.response()(scope, receive, send)
                return
        await self.app(scope, receive, send)

    def _refusal(self, scope: Scope) -> ApiError | None:
        headers = _headers(scope)
        host, origin = headers.get("host"), headers.get("origin")
        if not self.guard.origin_allowed(origin):
            shown = (origin or "")[:100]
            return ApiError(
                403,
                f"requests from web pages are refused (Origin: {shown}): this server has no "
                "authentication. To let a page's scripts use it, start it with "
                "--allowed-origin ORIGIN",
                code="origin_not_allowed",
            )
        probed = not self.guard.loopback and scope.get("path") in UNCHECKED_PATHS
        if not probed and not self.guard.host_allowed(host):
            shown = (host or "")[:100]
            return ApiError(
                403,
                f"the request's Host ({shown}) is not a name of this server (a web page "
                "rebound to its address sends its own): to reach it by this name, start it "
                "with --allowed-host NAME",
                code="host_not_allowed",
            )
        return None


def _headers(scope: Scope) -> dict[str, Any]:
    """The request's headers by lower-case name (the first of a repeated one)."""
    found: dict[str, str] = {}
    for name, value in scope.get("headers", ()):
        found.setdefault(name.decode("latin-1").lower(), value.decode("latin-1"))
    return found
