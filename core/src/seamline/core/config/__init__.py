"""Pipeline files: YAML in, a typed and validated pipeline out, every error located."""

from seamline.core.config.resolve import (
    ComponentChoice,
    PipelineConfigError,
    ResolvedPipeline,
    load_pipeline,
    parse_pipeline,
)
from seamline.core.config.spec import (
    AttentionSpecConfig,
    ComponentRef,
    PipelineSpec,
    RunSettings,
    TelemetrySettings,
)

__all__ = [
    "AttentionSpecConfig",
    "ComponentChoice",
    "ComponentRef",
    "PipelineConfigError",
    "PipelineSpec",
    "ResolvedPipeline",
    "RunSettings",
    "TelemetrySettings",
    "load_pipeline",
    "parse_pipeline",
]
