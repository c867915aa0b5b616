"""seamline's contracts: the interfaces between the parts of a pipeline.

A third-party component depends on this distribution alone.

The names below are loaded on first use (PEP 562), so that importing a light part
of the contracts (``seamline.contracts.errors``, ``.versions``) does not import JAX:
the command line's ``--help`` and anything else that only names kinds or errors
starts in a fraction of a second. ``from seamline.contracts import Attention``
works as usual; type checkers see the plain imports below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamline.contracts.lazy_names import lazy_attributes

if TYPE_CHECKING:
    from seamline.contracts.attention import (
        TOLERANCES,
        Attention,
        AttentionFn,
        AttentionSpec,
        RelativeBias,
        SegmentIds,
        Support,
        relative_position_buckets,
    )
    from seamline.contracts.component import (
        AddedLater,
        Component,
        ComponentConfig,
        LeavesMachine,
        NamedPath,
    )
    from seamline.contracts.documents import Document, DocumentError, Loaded, Shard
    from seamline.contracts.errors import (
        ComponentLoadError,
        ComponentNotFoundError,
        ConfigError,
        ContractVersionError,
        ContractViolation,
        DuplicateComponentError,
        ResourceExhausted,
        ResumeRefused,
        SeamlineError,
        ShardFailed,
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
        SeamStarted,
        ShadowCompared,
        Verified,
    )
    from seamline.contracts.executor import (
        ExecutionReport,
        Executor,
        Job,
        RunCounts,
        ShardProgress,
        ShardReport,
        ShardTask,
        ShardWorker,
        WorkerFactory,
    )
    from seamline.contracts.loader import (
        InputGlob,
        InputGlobUnder,
        Loader,
        input_glob_files,
        input_glob_under,
    )
    from seamline.contracts.model import Batch, Example, Model, Params
    from seamline.contracts.monitor import Monitor, MonitorLike
    from seamline.contracts.readback import Nearest, OutputReader
    from seamline.contracts.sink import CommittedRecords, OutputRecord, Sink, StagedRun
    from seamline.contracts.versions import CONTRACT_VERSIONS, KINDS, Kind

_LOCATIONS: dict[str, str] = {
    "AddedLater": "seamline.contracts.component",
    "Alert": "seamline.contracts.events",
    "Attention": "seamline.contracts.attention",
    "AttentionChosen": "seamline.contracts.events",
    "AttentionFn": "seamline.contracts.attention",
    "AttentionSpec": "seamline.contracts.attention",
    "Batch": "seamline.contracts.model",
    "BatchDone": "seamline.contracts.events",
    "CONTRACT_VERSIONS": "seamline.contracts.versions",
    "Compiled": "seamline.contracts.events",
    "Component": "seamline.contracts.component",
    "ComponentConfig": "seamline.contracts.component",
    "NamedPath": "seamline.contracts.component",
    "ComponentLoadError": "seamline.contracts.errors",
    "ComponentNotFoundError": "seamline.contracts.errors",
    "ConfigError": "seamline.contracts.errors",
    "ContractVersionError": "seamline.contracts.errors",
    "ContractViolation": "seamline.contracts.errors",
    "Document": "seamline.contracts.documents",
    "DocumentError": "seamline.contracts.documents",
    "DocumentFailed": "seamline.contracts.events",
    "DuplicateComponentError": "seamline.contracts.errors",
    "Event": "seamline.contracts.events",
    "ExecutionReport": "seamline.contracts.executor",
    "Executor": "seamline.contracts.executor",
    "Example": "seamline.contracts.model",
    "Fallback": "seamline.contracts.events",
    "KINDS": "seamline.contracts.versions",
    "InputGlob": "seamline.contracts.loader",
    "InputGlobUnder": "seamline.contracts.loader",
    "LeavesMachine": "seamline.contracts.component",
    "Job": "seamline.contracts.executor",
    "Kind": "seamline.contracts.versions",
    "Loaded": "seamline.contracts.documents",
    "Loader": "seamline.contracts.loader",
    "Model": "seamline.contracts.model",
    "Monitor": "seamline.contracts.monitor",
    "MonitorLike": "seamline.contracts.monitor",
    "Nearest": "seamline.contracts.readback",
    "OutputReader": "seamline.contracts.readback",
    "OutputRecord": "seamline.contracts.sink",
    "Params": "seamline.contracts.model",
    "RelativeBias": "seamline.contracts.attention",
    "ResourceExhausted": "seamline.contracts.errors",
    "ResumeRefused": "seamline.contracts.errors",
    "RunFinished": "seamline.contracts.events",
    "RunStarted": "seamline.contracts.events",
    "SeamCall": "seamline.contracts.events",
    "SeamStarted": "seamline.contracts.events",
    "SeamlineError": "seamline.contracts.errors",
    "SegmentIds": "seamline.contracts.attention",
    "ShadowCompared": "seamline.contracts.events",
    "Shard": "seamline.contracts.documents",
    "ShardFailed": "seamline.contracts.errors",
    "RunCounts": "seamline.contracts.executor",
    "ShardProgress": "seamline.contracts.executor",
    "ShardReport": "seamline.contracts.executor",
    "ShardTask": "seamline.contracts.executor",
    "ShardWorker": "seamline.contracts.executor",
    "CommittedRecords": "seamline.contracts.sink",
    "Sink": "seamline.contracts.sink",
    "StagedRun": "seamline.contracts.sink",
    "Support": "seamline.contracts.attention",
    "TOLERANCES": "seamline.contracts.attention",
    "UnsupportedError": "seamline.contracts.errors",
    "UserError": "seamline.contracts.errors",
    "Verified": "seamline.contracts.events",
    "WeightsError": "seamline.contracts.errors",
    "WorkerFactory": "seamline.contracts.executor",
    "relative_position_buckets": "seamline.contracts.attention",
    "input_glob_files": "seamline.contracts.loader",
    "input_glob_under": "seamline.contracts.loader",
}
"""Where each public name is defined."""


__getattr__ = lazy_attributes(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_LOCATIONS])


__all__ = [
    "CONTRACT_VERSIONS",
    "KINDS",
    "TOLERANCES",
    "AddedLater",
    "Alert",
    "Attention",
    "AttentionChosen",
    "AttentionFn",
    "AttentionSpec",
    "Batch",
    "BatchDone",
    "CommittedRecords",
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
    "ExecutionReport",
    "Executor",
    "Fallback",
    "InputGlob",
    "InputGlobUnder",
    "Job",
    "Kind",
    "LeavesMachine",
    "Loaded",
    "Loader",
    "Model",
    "Monitor",
    "MonitorLike",
    "NamedPath",
    "Nearest",
    "OutputReader",
    "OutputRecord",
    "Params",
    "RelativeBias",
    "ResourceExhausted",
    "ResumeRefused",
    "RunCounts",
    "RunFinished",
    "RunStarted",
    "SeamCall",
    "SeamStarted",
    "SeamlineError",
    "SegmentIds",
    "ShadowCompared",
    "Shard",
    "ShardFailed",
    "ShardProgress",
    "ShardReport",
    "ShardTask",
    "ShardWorker",
    "Sink",
    "StagedRun",
    "Support",
    "UnsupportedError",
    "UserError",
    "Verified",
    "WeightsError",
    "WorkerFactory",
    "input_glob_files",
    "input_glob_under",
    "relative_position_buckets",
]
