"""The typed events a run emits and monitors observe.

Events are small frozen records; a monitor dispatches on their type. New event
types may be added in minor contract versions, so a monitor must ignore types it
does not know.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class RunStarted:
    run_id: str
    pipeline: str
    components: Mapping[str, str]
    """``kind -> name`` of every configured component (attention as configured)."""
    expected: int | None = None
    """Items the loader will yield over the whole input (every shard together), as its
    :meth:`~seamline.contracts.Loader.size` said (monitor contract 1.5, loader contract
    1.1); None when the loader does not say, or the run resumes. For progress only."""


@dataclass(frozen=True, slots=True)
class AttentionChosen:
    """The planner chose an attention implementation for a shape bucket."""

    signature: str
    chosen: str
    reason: str
    rejected: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Compiled:
    """A new shape was compiled (bucketing keeps their number small)."""

    length: int
    batch_size: int
    seconds: float


@dataclass(frozen=True, slots=True)
class BatchDone:
    index: int
    length: int
    examples: int
    tokens: int
    seconds: float
    """Wall time the batch added to the run: from its launch on the device, or from the
    previous batch's outputs handed to the sink if that came later, to its own outputs
    handed to the sink. With batches in flight (``run.in_flight``) consecutive batches'
    seconds do not overlap, so their sum is the run's device time and ``tokens /
    seconds`` its rate, not each batch's latency."""
    documents: int = 0
    """Documents read so far in the run (for progress reporting)."""


@dataclass(frozen=True, slots=True)
class DocumentFailed:
    """A document could not be read or prepared; it is set aside, not lost."""

    doc_id: str
    reason: str
    stage: str


@dataclass(frozen=True, slots=True)
class SeamStarted:
    """A call across a seam is about to begin (monitor contract 1.4).

    Delivered only to monitors whose ``wants_seam_starts`` is true: a monitor that
    samples process-wide state (memory, say) needs a sample at each call's start to
    tell which call a change happened in while two threads make calls at once; the
    rest have no use for it, and each delivery costs the calling thread a hand-off.
    The matching :class:`SeamCall` follows on the same thread when the call ends.
    """

    kind: str
    name: str
    operation: str


@dataclass(frozen=True, slots=True)
class SeamCall:
    """One call across a seam, outside compiled code."""

    kind: str
    name: str
    operation: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Fallback:
    """An implementation could not serve and the next candidate took over."""

    seam: str
    failed: str
    replacement: str
    reason: str


@dataclass(frozen=True, slots=True)
class Verified:
    """An implementation was checked against the reference on first use of a shape (1.1)."""

    signature: str
    implementation: str
    reference: str
    max_error: float
    tolerance: float
    ok: bool


@dataclass(frozen=True, slots=True)
class ShadowCompared:
    """A batch was also run with the reference; the outputs' largest difference (1.1)."""

    signature: str
    implementation: str
    reference: str
    batch: int
    max_error: float
    tolerance: float
    ok: bool


@dataclass(frozen=True, slots=True)
class Alert:
    source: str
    message: str
    attributes: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RunFinished:
    run_id: str
    documents: int
    failed_documents: int
    examples: int
    tokens: int
    batches: int
    compilations: int
    seconds: float
    ok: bool


Event = (
    RunStarted
    | AttentionChosen
    | Compiled
    | BatchDone
    | DocumentFailed
    | SeamStarted
    | SeamCall
    | Fallback
    | Verified
    | ShadowCompared
    | Alert
    | RunFinished
)

EVENT_TYPES: tuple[type[Any], ...] = (
    RunStarted,
    AttentionChosen,
    Compiled,
    BatchDone,
    DocumentFailed,
    SeamStarted,
    SeamCall,
    Fallback,
    Verified,
    ShadowCompared,
    Alert,
    RunFinished,
)
