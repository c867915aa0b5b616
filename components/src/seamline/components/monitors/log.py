"""``log``: a structured log line for each notable event of a run.

It logs through ``seamline.contracts.logs.get_logger`` and never configures structlog: rendering,
levels and destinations belong to the application (the CLI sets them up), which is
what lets seamline be embedded without taking over anyone's logging. Per-seam-call
events are not logged (they would flood the log; traces carry them), and event
types it does not know are ignored, as the monitor contract requires.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

from seamline.contracts import (
    Alert,
    AttentionChosen,
    BatchDone,
    Compiled,
    ComponentConfig,
    DocumentFailed,
    Event,
    Fallback,
    Monitor,
    RunFinished,
    RunStarted,
    ShadowCompared,
    Verified,
)
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import for_telemetry

if TYPE_CHECKING:
    from collections.abc import Callable

LOGGER_NAME = "seamline.monitor.log"


class LogMonitorConfig(ComponentConfig):
    """The ``with:`` block of the ``log`` monitor."""

    every: int = Field(
        default=1,
        json_schema_extra={"minimum": 1},  # the check below, told to editors
        description="Log one batch in this many (the 1st, then every Nth after it); "
        "a larger value keeps long runs readable.",
    )
    level: Literal["debug", "info"] = Field(
        default="info",
        description="Level of routine lines (run, compilation, batch); failures, fallbacks "
        "and alerts are always warnings.",
    )

    @field_validator("every")
    @classmethod
    def _positive(cls, value: int) -> int:
        if value < 1:
            raise ValueError(f"every must be at least 1 (1 logs every batch), not {value}")
        return value


def _rate(count: int, seconds: float) -> float | None:
    """``count`` per second, rounded for reading; None when no time was measured."""
    return round(count / seconds, 1) if seconds > 0 else None


class LogMonitor(Monitor[LogMonitorConfig]):
    """Logs run start and end, attention choices, compilations, batches and problems."""

    name: ClassVar[str] = "log"
    contract_version: ClassVar[str] = "1.6"
    Config = LogMonitorConfig

    def __init__(self, config: LogMonitorConfig) -> None:
        super().__init__(config)
        self._log: Any = get_logger(LOGGER_NAME)
        self._batches_seen = 0
        self._handlers: dict[type[Any], Callable[[Any], None]] = {
            RunStarted: self._run_started,
            AttentionChosen: self._attention_chosen,
            Compiled: self._compiled,
            BatchDone: self._batch_done,
            DocumentFailed: self._document_failed,
            Fallback: self._fallback,
            Verified: self._verified,
            ShadowCompared: self._shadow_compared,
            Alert: self._alert,
            RunFinished: self._run_finished,
        }

    @property
    def observes(self) -> tuple[type[Any], ...]:
        """The types it has a handler for. Not :class:`~seamline.contracts.SeamCall`, one
        per seam call, which the host then never hands it (monitor contract 1.6)."""
        return tuple(self._handlers)

    def observe(self, event: Event) -> None:
        handler = self._handlers.get(type(event))
        if handler is not None:
            handler(event)

    def _routine(self, message: str, **fields: Any) -> None:
        """Log a line at the configured routine level."""
        log = self._log.debug if self.config.level == "debug" else self._log.info
        log(message, **fields)

    def _run_started(self, event: RunStarted) -> None:
        self._batches_seen = 0
        self._routine(
            "run started",
            run_id=event.run_id,
            pipeline=event.pipeline,
            components=dict(event.components),
        )

    def _attention_chosen(self, event: AttentionChosen) -> None:
        self._routine(
            "attention chosen",
            signature=event.signature,
            chosen=event.chosen,
            reason=event.reason,
            rejected={name: list(reasons) for name, reasons in event.rejected.items()},
        )

    def _compiled(self, event: Compiled) -> None:
        self._routine(
            "compiled",
            length=event.length,
            batch_size=event.batch_size,
            seconds=round(event.seconds, 3),
        )

    def _batch_done(self, event: BatchDone) -> None:
        seen, self._batches_seen = self._batches_seen, self._batches_seen + 1
        if seen % self.config.every:
            return
        self._routine(
            "batch done",
            batch=event.index,
            length=event.length,
            examples=event.examples,
            tokens=event.tokens,
            seconds=round(event.seconds, 4),
            tokens_per_s=_rate(event.tokens, event.seconds),
            documents=event.documents,
        )

    def _document_failed(self, event: DocumentFailed) -> None:
        self._log.warning(
            "document failed",
            doc_id=for_telemetry(event.doc_id),
            stage=event.stage,
            reason=for_telemetry(event.reason, 1000),  # it may quote the id, or the text
        )

    def _fallback(self, event: Fallback) -> None:
        self._log.warning(
            "fallback",
            seam=event.seam,
            failed=event.failed,
            replacement=event.replacement,
            reason=event.reason,
        )

    def _verified(self, event: Verified) -> None:
        fields = {
            "signature": event.signature,
            "implementation": event.implementation,
            "reference": event.reference,
            "max_error": event.max_error,
            "tolerance": event.tolerance,
        }
        if event.ok:
            self._routine("verified against the reference", **fields)
        else:
            self._log.warning("failed verification against the reference", **fields)

    def _shadow_compared(self, event: ShadowCompared) -> None:
        fields = {
            "signature": event.signature,
            "implementation": event.implementation,
            "batch": event.batch,
            "max_error": event.max_error,
            "tolerance": event.tolerance,
        }
        if event.ok:
            self._routine("shadow comparison", **fields)
        else:
            self._log.warning("shadow comparison breached the tolerance", **fields)

    def _alert(self, event: Alert) -> None:
        # "detail", not "message": stdlib logging reserves "message" on its records.
        self._log.warning(
            "alert", source=event.source, detail=event.message, attributes=dict(event.attributes)
        )

    def _run_finished(self, event: RunFinished) -> None:
        fields: dict[str, Any] = {
            "run_id": event.run_id,
            "ok": event.ok,
            "documents": event.documents,
            "failed": event.failed_documents,
            "examples": event.examples,
            "tokens": event.tokens,
            "batches": event.batches,
            "compilations": event.compilations,
            "seconds": round(event.seconds, 3),
            "docs_per_s": _rate(event.documents, event.seconds),
            "tokens_per_s": _rate(event.tokens, event.seconds),
        }
        if event.ok:
            self._routine("run finished", **fields)
        else:
            self._log.warning("run finished", **fields)
