"""Pipeline files: YAML in, a typed and validated pipeline out, every error located."""

from seamline.core.config.resolve import (
    ComponentChoice,
    PipelineConfigError,
    ResolvedAttention,
    ResolvedPipeline,
    load_pipeline,
    parse_pipeline,
    resolve_attention,
    resolve_located,
)
from seamline.core.config.spec import (
    AttentionMode,
    AttentionSpecConfig,
    ComponentRef,
    PipelineSpec,
    RunSettings,
    TelemetrySettings,
)

__all__ = [
    "AttentionMode",
    "AttentionSpecConfig",
    "ComponentChoice",
    "ComponentRef",
    "PipelineConfigError",
    "PipelineSpec",
    "ResolvedAttention",
    "ResolvedPipeline",
    "RunSettings",
    "TelemetrySettings",
    "load_pipeline",
    "parse_pipeline",
    "resolve_attention",
    "resolve_located",
]
