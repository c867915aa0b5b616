"""Keep the OTLP exporters' credentials out of the log lines OpenTelemetry itself writes.

``OTEL_EXPORTER_OTLP_HEADERS`` carries credentials (``authorization=Bearer ...``), and an
endpoint may carry one in its query (``...?token=...``) or its user part
(``https://user:pw@host``). The exporters read those variables themselves, and
OpenTelemetry's own warnings quote them: a header written with ``:`` for ``=`` is
logged whole ("Header format invalid! ... authorization:Bearer ..."), and every retry
to a receiver that does not answer logs the URL with its query. Those lines go through
seamline's log rendering into the JSON logs users ship to aggregators, so the rendering
replaces each such value with the name of the variable it came from, as seamline's own
messages name a ``${VAR}`` rather than print it.

The pipeline file's ``telemetry.otlp_endpoint`` is such an endpoint too (a trusted
``${TOKEN}`` filled into its query), but it is known only once the pipeline is loaded,
after logging is set up: the exporters' retries logged it in clear
(``url: /collector?token=...``) while the same URL from the environment was hidden. The
telemetry set-up hands it over (:func:`hide_endpoint`) and every renderer made before or
after hides it, as ``<telemetry.otlp_endpoint>``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, MutableMapping
from typing import Any
from urllib.parse import parse_qsl, quote, quote_plus, unquote, urlsplit

SHORTEST = 3
"""A shorter value is not looked for: it would match unrelated text and reveals little."""

_HEADERS = re.compile(r"OTEL_EXPORTER_OTLP_(?:(?:TRACES|METRICS|LOGS)_)?HEADERS")
_ENDPOINT = re.compile(r"OTEL_EXPORTER_OTLP_(?:(?:TRACES|METRICS|LOGS)_)?ENDPOINT")


def _header_values(value: str) -> list[str]:
    """The whole variable, each ``key=value`` pair, and each value (split at the first
    ``=``, or ``:`` for the mistake OpenTelemetry quotes whole), raw and URL-decoded."""
    found = [value]
    for pair in value.split(","):
        found.append(pair.strip())
        key_value = re.split(r"[=:]", pair, maxsplit=1)
        if len(key_value) == 2:
            found.append(key_value[1].strip())
    return found + [unquote(text) for text in found]


def _endpoint_values(value: str, *, path: bool = False) -> list[str]:
    """An endpoint's query and its parameters' values, and the password of its user part
    (and its path, with ``path``), as written, decoded and as an HTTP library encodes them
    (a token with ``ö`` or ``"`` was logged as ``t%C3%B6ken``, past the plain text)."""
    try:
        parts = urlsplit(value.strip())
    except ValueError:
        return []
    found = [parts.query, *(v for _, v in parse_qsl(parts.query, keep_blank_values=True))]
    if parts.password:
        found.append(parts.password)
    if path and parts.path.strip("/"):
        found.append(parts.path.rstrip("/"))
    decoded = [unquote(text) for text in found]
    encoded = [form(text) for text in decoded for form in (quote, quote_plus, _quote_all)]
    return found + decoded + encoded


def _quote_all(text: str) -> str:
    return quote(text, safe="")


def exporter_secrets(environ: Mapping[str, str]) -> dict[str, str]:
    """Each value to hide, mapped to what replaces it (``<$VARIABLE>``), longest first."""
    secrets: dict[str, str] = {}
    for name, value in environ.items():
        if _HEADERS.fullmatch(name):
            values = _header_values(value)
        elif _ENDPOINT.fullmatch(name):
            values = _endpoint_values(value)
        else:
            continue
        for text in values:
            if len(text) >= SHORTEST:
                secrets.setdefault(text, f"<${name}>")
    return dict(sorted(secrets.items(), key=lambda item: -len(item[0])))


_learned: dict[str, str] = {}
"""Values to hide that the environment does not hold, mapped to what replaces them."""


def hide_endpoint(url: str, place: str) -> None:
    """Hide ``url``'s query, its parameters' values, its password and its path from now
    on, as ``<place>``: an endpoint the environment does not name (a pipeline file's). Its
    path too, since a trusted ``${TOKEN}`` goes there as well (``http://host/${TOKEN}/c``
    was logged as ``POST /s3cr3t/c/v1/traces`` at debug level)."""
    for text in _endpoint_values(url, path=True):
        if len(text) >= SHORTEST:
            _learned.setdefault(text, f"<{place}>")


class HideExporterSecrets:
    """A structlog processor: every string of a log line, with those values replaced."""

    def __init__(self, environ: Mapping[str, str]) -> None:
        self._from_environ = exporter_secrets(environ)
        self._learned_count = -1
        self.secrets = self._from_environ
        self._refresh()

    def _refresh(self) -> None:
        """Take in the values :func:`hide_endpoint` learned since the last line."""
        if self._learned_count == len(_learned):
            return
        merged = {**_learned, **self._from_environ}  # the environment's name wins
        self.secrets = dict(sorted(merged.items(), key=lambda item: -len(item[0])))
        self._learned_count = len(_learned)

    def hide(self, text: str) -> str:
        for secret, name in self.secrets.items():
            text = text.replace(secret, name)
        return text

    def __call__(
        self, _logger: Any, _method: str, event: MutableMapping[str, Any]
    ) -> MutableMapping[str, Any]:
        self._refresh()
        if not self.secrets:
            return event
        return {
            key: self.hide(value) if isinstance(value, str) else value
            for key, value in event.items()
        }
