"""Pipeline files: YAML in, a typed and validated pipeline out, every error located."""

from seamline.core.config.resolve import (
    ComponentChoice,
    PipelineConfigError,
    ResolvedAttention,
    ResolvedPipeline,
    load_pipeline,
    load_trusted,
    parse_pipeline,
    pipeline_trust,
    prepare_located,
    read_pipeline_text,
    resolve_attention,
    resolve_component,
    resolve_located,
)
from seamline.core.config.spec import (
    AttentionMode,
    AttentionSpecConfig,
    ComponentRef,
    PipelineSpec,
    RunSettings,
    Selection,
    TelemetrySettings,
)
from seamline.core.trust import TrustSettings

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
    "Selection",
    "TelemetrySettings",
    "TrustSettings",
    "load_pipeline",
    "load_trusted",
    "parse_pipeline",
    "pipeline_trust",
    "prepare_located",
    "read_pipeline_text",
    "resolve_attention",
    "resolve_component",
    "resolve_located",
]
