"""Kept for existing imports: tracing set-up now lives in :mod:`telemetry_setup`."""

from __future__ import annotations

from seamline.adapters.telemetry_setup import (
    configure_telemetry,
    configure_tracing,
    shutdown_telemetry,
    shutdown_tracing,
)

__all__ = ["configure_telemetry", "configure_tracing", "shutdown_telemetry", "shutdown_tracing"]
