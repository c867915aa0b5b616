"""Pipeline files: YAML in, a typed and validated pipeline out, every error located."""

from seamline.core.config.resolve import (
    ComponentChoice,
    PipelineConfigError,
    ResolvedPipeline,
    load_pipeline,
    parse_pipeline,
)
from seamline.core.config.spec import AttentionSpecConfig, ComponentRef, PipelineSpec, RunSettings

__all__ = [
    "AttentionSpecConfig",
    "ComponentChoice",
    "ComponentRef",
    "PipelineConfigError",
    "PipelineSpec",
    "ResolvedPipeline",
    "RunSettings",
    "load_pipeline",
    "parse_pipeline",
]
