"""seamline's orchestration core: registry, config, planner and orchestrator.

Core sees components only through their contracts and never names a concrete
one; it emits telemetry through ``opentelemetry-api`` and ``structlog`` only, so
an embedding application keeps control of exporters and log rendering.
"""
