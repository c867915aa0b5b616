"""seamline's contracts: the interfaces between the parts of a pipeline.

A third-party component depends on this distribution alone.
"""

from seamline.contracts.attention import (
    TOLERANCES,
    Attention,
    AttentionFn,
    AttentionSpec,
    SegmentIds,
    Support,
)
from seamline.contracts.component import Component, ComponentConfig
from seamline.contracts.documents import Document, DocumentError, Loaded, Shard
from seamline.contracts.errors import (
    ComponentLoadError,
    ComponentNotFoundError,
    ConfigError,
    ContractVersionError,
    ContractViolation,
    DuplicateComponentError,
    SeamlineError,
    UnsupportedError,
    UserError,
    WeightsError,
)
from seamline.contracts.events import (
    Alert,
    AttentionChosen,
    BatchDone,
    Compiled,
    DocumentFailed,
    Event,
    Fallback,
    RunFinished,
    RunStarted,
    SeamCall,
    ShadowCompared,
    Verified,
)
from seamline.contracts.loader import Loader
from seamline.contracts.model import Batch, Example, Model, Params
from seamline.contracts.monitor import Monitor
from seamline.contracts.sink import OutputRecord, Sink
from seamline.contracts.versions import CONTRACT_VERSIONS, KINDS, Kind

__all__ = [
    "CONTRACT_VERSIONS",
    "KINDS",
    "TOLERANCES",
    "Alert",
    "Attention",
    "AttentionChosen",
    "AttentionFn",
    "AttentionSpec",
    "Batch",
    "BatchDone",
    "Compiled",
    "Component",
    "ComponentConfig",
    "ComponentLoadError",
    "ComponentNotFoundError",
    "ConfigError",
    "ContractVersionError",
    "ContractViolation",
    "Document",
    "DocumentError",
    "DocumentFailed",
    "DuplicateComponentError",
    "Event",
    "Example",
    "Fallback",
    "Kind",
    "Loaded",
    "Loader",
    "Model",
    "Monitor",
    "OutputRecord",
    "Params",
    "RunFinished",
    "RunStarted",
    "SeamCall",
    "SeamlineError",
    "SegmentIds",
    "ShadowCompared",
    "Shard",
    "Sink",
    "Support",
    "UnsupportedError",
    "UserError",
    "Verified",
    "WeightsError",
]
