"""Which precision a run computes in: offered by the model, native here, and through the gate.

Called once per run at the driver (:meth:`seamline.core.pipeline.Pipeline.run`), and by
an orchestrator built by hand. The pipeline's candidates are tried in order — ``auto``
tries every precision fastest first and ends with float32 — and the first that the
model offers, the hardware runs natively and (below float32) the gate passes is
chosen; every other is kept with the reason it was not. The calibration sample is
the run's own first documents, computed in the run's longest batch shape (so that the
gate compiles what the run will use); the gate's figures are recorded (:mod:`.records`)
so that the next run of the same pipeline reuses them.
"""

from __future__ import annotations

from collections.abc import Generator, Mapping, Sequence
from dataclasses import replace
from typing import Any, cast

import numpy as np

from seamline.contracts import ConfigError, Document, Loader, Shard, UserError
from seamline.contracts.logs import get_logger
from seamline.contracts.versions import installed_version
from seamline.core.code_digest import code_digest, component_digest
from seamline.core.config import ResolvedEncoder, ResolvedPipeline, build_model
from seamline.core.config.spec import PrecisionSettings
from seamline.core.host import timed_reads
from seamline.core.monitor_hub import MonitorHub
from seamline.core.pinning import pinned_model
from seamline.core.precision import records
from seamline.core.precision.decision import (
    FLOAT32,
    NO_NEIGHBOURS,
    GateFigures,
    Mode,
    PrecisionCandidate,
    PrecisionDecision,
    float32_decision,
    none_can_serve,
    not_offered,
)
from seamline.core.precision.gate import compare, refusals
from seamline.core.precision.hardware import Hardware
from seamline.core.registry import Registry
from seamline.core.run_errors import placed_loader_error
from seamline.core.seams import Seam
from seamline.core.telemetry import tracer

log = get_logger("seamline.core")

SPAN = "seamline.precision"
CHOSEN = "seamline.precision.chosen"
CANDIDATES = "seamline.precision.candidates"
REFUSED = "seamline.precision.refused"
NO_DOCUMENTS = "the input has no documents to check it on"


def mode_of(settings: PrecisionSettings) -> Mode:
    if isinstance(settings.use, list):
        return "list"
    return "auto" if settings.use == "auto" else "explicit"


def offered_by(pipeline: ResolvedPipeline, registry: Registry) -> tuple[str, ...]:
    """The precisions the pipeline's model can compute in (a model built and closed)."""
    choice = pipeline.model
    model = build_model(choice, registry, pipeline.overrides_under(("model", "with")))
    try:
        return tuple(model.precisions())
    finally:
        model.close()


def offered_and_native(
    settings: PrecisionSettings, offered: Sequence[str], hardware: Hardware
) -> list[PrecisionCandidate]:
    """Each candidate judged on what the model offers and the hardware runs (no gate)."""
    judged = []
    for name in settings.names:
        if name not in offered:
            judged.append(not_offered(name, offered))
            continue
        native, why = hardware.native(name)
        if not native and not settings.require_native:
            why = f"{why} (accepted: precision.require_native is false)"
        judged.append(PrecisionCandidate(name, native or not settings.require_native, (why,)))
    return judged


def decide_precision(
    pipeline: ResolvedPipeline,
    registry: Registry,
    *,
    environ: Mapping[str, str] | None = None,
    hardware: Hardware | None = None,
) -> PrecisionDecision:
    """The run's precision, or ``UserError`` when no candidate may serve (with every reason)."""
    settings = pipeline.spec.precision
    mode = mode_of(settings)
    if settings.names == (FLOAT32,):
        return float32_decision(mode)
    with tracer().start_as_current_span(SPAN) as span:
        # Gate records are keyed by the model's configuration: pinned, the key names which
        # weights were checked, not only where they were (a replaced file is checked anew).
        pipeline = pinned_model(pipeline, registry)
        hardware = hardware or Hardware.detect(environ)
        offered = offered_by(pipeline, registry)
        calibration = Calibration(pipeline, registry, hardware, environ)
        try:
            decision = _first_that_serves(settings, mode, offered, hardware, calibration)
        finally:
            calibration.close()
        span.set_attribute(CHOSEN, decision.chosen)
        span.set_attribute(CANDIDATES, [c.name for c in decision.candidates])
        span.set_attribute(
            REFUSED, [f"{c.name}: {'; '.join(c.reasons)}" for c in decision.candidates if not c.ok]
        )
        for key, value in hardware.describe().items():
            span.set_attribute(f"seamline.precision.hardware.{key}", value)
        figures = decision.chosen_candidate.figures
        if figures is not None:
            span.set_attribute("seamline.precision.min_cosine", figures.min_cosine)
            if figures.neighbours_checked and figures.neighbours is not None:
                span.set_attribute("seamline.precision.neighbours", figures.neighbours)
    log.info("precision chosen", precision=decision.describe(), mode=mode)
    return decision


def negotiated(pipeline: ResolvedPipeline, registry: Registry) -> ResolvedPipeline:
    """``pipeline`` with its precision decided (``pipeline`` itself when it is already)."""
    if pipeline.precision is not None:
        return pipeline
    return replace(pipeline, precision=decide_precision(pipeline, registry))


def encoder_side(pipeline: ResolvedPipeline, registry: Registry, source: str) -> ResolvedEncoder:
    """The pipeline's model side in its negotiated precision: what an ``Embedder`` of a
    pipeline embeds with (the gate on its loader's first documents, or the figures a run
    of it recorded): never a quieter float32.

    A loader's refusal is placed at its settings, as a run places it, and says why the
    loader was read at all: a user who only encodes texts did not expect the corpus to be.
    """
    try:
        decided = negotiated(pipeline, registry)
    except UserError as err:
        placed = placed_loader_error(err, pipeline)
        if not isinstance(placed, ConfigError):
            raise
        why = "read for the precision gate, which embeds the loader's first documents to "
        raise ConfigError(
            f"{placed.detail}; {why}check a precision below float32 against float32",
            placed.location,
        ) from None
    return ResolvedEncoder(
        decided.model,
        decided.attention,
        decided.spec.run,
        source,
        precision=decided.chosen_precision,
        overrides=tuple(pipeline.overrides_under(("model", "with"))),
    )


def _first_that_serves(
    settings: PrecisionSettings,
    mode: Mode,
    offered: Sequence[str],
    hardware: Hardware,
    calibration: Calibration,
) -> PrecisionDecision:
    candidates: list[PrecisionCandidate] = []
    for judged in offered_and_native(settings, offered, hardware):
        if not judged.ok or judged.name == FLOAT32:
            candidates.append(judged)
            if judged.ok:
                return PrecisionDecision(judged.name, mode, tuple(candidates))
            continue
        if not settings.verify:
            accepted = PrecisionCandidate(judged.name, True, (*judged.reasons, "not checked"))
            return PrecisionDecision(judged.name, mode, (*candidates, accepted), verified=False)
        figures, source, recorded = calibration.figures(judged.name, settings)
        if figures is None:
            candidates.append(PrecisionCandidate(judged.name, False, (source,)))
            continue
        failed = refusals(figures, settings.gate)
        if failed:
            candidates.append(gate_refused(judged, failed, figures, recorded))
            continue
        passed = gate_passed(judged, source, figures, recorded)
        return PrecisionDecision(judged.name, mode, (*candidates, passed))
    raise none_can_serve(candidates)


def serving_precision(candidates: Sequence[PrecisionCandidate]) -> str:
    """The precision a run would compute in, from :func:`preview_precision`'s candidates:
    the first that can serve; with none, the error a run stops with."""
    for candidate in candidates:
        if candidate.ok:
            return candidate.name
    raise none_can_serve(candidates)


def gate_refused(
    judged: PrecisionCandidate, failed: Sequence[str], figures: GateFigures, recorded: str | None
) -> PrecisionCandidate:
    """``judged`` refused by the gate: its failures first (the summary's reason), then what
    it was judged on before (the hardware's reason, which a refusal used to drop)."""
    return PrecisionCandidate(judged.name, False, (*failed, *judged.reasons), figures, recorded)


def gate_passed(
    judged: PrecisionCandidate, source: str, figures: GateFigures, recorded: str | None
) -> PrecisionCandidate:
    """``judged`` passed by the gate; a sample too small for the neighbour check says it
    was judged on the cosine only, not as if its neighbours had all been kept."""
    said = (source,)
    if not figures.neighbours_checked:
        said = (f"{source} ({NO_NEIGHBOURS.format(windows=figures.windows)})",)
    return PrecisionCandidate(judged.name, True, (*judged.reasons, *said), figures, recorded)


class Calibration:
    """The run's first documents, embedded in float32 and in each candidate (lazily)."""

    def __init__(
        self,
        pipeline: ResolvedPipeline,
        registry: Registry,
        hardware: Hardware,
        environ: Mapping[str, str] | None,
    ) -> None:
        self.pipeline = pipeline
        self.registry = registry
        self.hardware = hardware
        self.folder = records.directory(environ)
        self._texts: list[str] | None = None
        self._reference: np.ndarray | None = None

    def figures(
        self, candidate: str, settings: PrecisionSettings
    ) -> tuple[GateFigures | None, str, str | None]:
        """The gate's figures for ``candidate``, where they come from (or why none), and
        the record they were read from when an earlier run measured them."""
        gate = settings.gate
        key = records.record_key(self._material(candidate, settings))
        found = records.find(self.folder, key, candidate)
        if found is not None and self.folder is not None:
            return (
                found,
                "gate passed earlier for this pipeline",
                str(records.record_path(self.folder, key)),
            )
        texts = self.texts(gate.documents)
        if not texts:
            return None, NO_DOCUMENTS, None
        if self._reference is None:
            self._reference = self._embed(FLOAT32, texts)
        measured = compare(self._reference, self._embed(candidate, texts), gate.top_k)
        records.store(self.folder, key, candidate, measured)
        return measured, f"gate passed on the run's first {len(texts)} documents", None

    def recorded(
        self, candidate: PrecisionCandidate, settings: PrecisionSettings
    ) -> PrecisionCandidate:
        """``candidate`` judged by recorded gate figures, if a run left some (nothing runs).

        An input with no documents refuses it here as :meth:`figures` does in the run:
        ``explain`` said a bfloat16 run of an empty folder would be checked when it
        started, planned bfloat16 tables, and the run then stopped (or, under ``auto``,
        computed in float32).
        """
        if not self.texts(settings.gate.documents):
            return PrecisionCandidate(candidate.name, False, (NO_DOCUMENTS,))
        key = records.record_key(self._material(candidate.name, settings))
        found = records.find(self.folder, key, candidate.name)
        if found is None or self.folder is None:
            later = (
                f"checked against float32 on the run's first {settings.gate.documents} "
                "documents (all of them, if there are fewer) when the run starts"
            )
            return PrecisionCandidate(candidate.name, True, (*candidate.reasons, later))
        recorded = str(records.record_path(self.folder, key))
        failed = refusals(found, settings.gate)
        if failed:
            return gate_refused(candidate, failed, found, recorded)
        return gate_passed(candidate, "gate passed earlier for this pipeline", found, recorded)

    def texts(self, documents: int) -> list[str]:
        """The text of the loader's first ``documents`` documents (error records skipped)."""
        if self._texts is None:
            choice = self.pipeline.loader
            loader = cast(Loader[Any], self.registry.create("loader", choice.name, choice.config))
            hidden = self.pipeline.span_hidden(self.registry.trust.network_variables)
            seam = Seam(loader, self.registry.info_of(loader), MonitorHub(()), hidden)
            texts: list[str] = []
            reads = cast(
                Generator[Any, None, None], timed_reads(loader, seam, Shard(), None, documents)
            )
            try:
                for loaded in reads:
                    if isinstance(loaded.item, Document):
                        texts.append(loaded.item.text)
                        if len(texts) >= documents:
                            break
            finally:
                reads.close()
                loader.close()
            self._texts = texts
        return self._texts

    def _embed(self, precision: str, texts: Sequence[str]) -> np.ndarray:
        from seamline.core.embedder import Embedder

        side = ResolvedEncoder(
            self.pipeline.model,
            self.pipeline.attention,
            self.pipeline.spec.run,
            self.pipeline.source,
            precision=precision,
        )
        # In the run's longest shape only: the run reuses the candidate's compilation
        # (through the compile cache) instead of paying for the sample's own shapes.
        with Embedder.from_resolved(side, self.registry, shapes="longest") as embedder:
            windows = embedder.encode(list(texts), long_text="windows")
        return np.concatenate(list(windows), axis=0).astype(np.float32)

    def _material(self, candidate: str, settings: PrecisionSettings) -> dict[str, Any]:
        spec = self.pipeline.spec
        model = self.pipeline.model
        attentions = [self.registry.get("attention", n) for n in self.registry.names("attention")]
        return {
            "candidate": candidate,
            "model": {
                "use": model.name,
                "distribution": model.distribution,
                "version": model.version,
                "config": model.config.model_dump(mode="json"),
            },
            "attention": spec.attention.model_dump(mode="json", by_alias=True),
            # Which attention serves is negotiated per shape after the gate, so every
            # installed one counts: a kernel rebuilt in a new version is checked again.
            "attentions": sorted(
                f"{info.name} {info.distribution} {info.version}" for info in attentions
            ),
            # What the gate measured: the sample's texts themselves. The loader's settings
            # named the folder `docs` for two projects' pipelines alike (a relative root),
            # and one project's figures were taken for the other's corpus.
            "sample_texts": records.texts_digest(self.texts(settings.gate.documents)),
            "run": {"packing": spec.run.packing},
            "hardware": self.hardware.describe(),
            "versions": {name: installed_version(name) for name in ("jax", "jaxlib")},
            # Versions stay 0.1.0 while the code changes: a seamline upgrade reused the
            # figures an older seamline measured. The code that computes the vectors
            # (seamline's, and a third-party model's or attention's package) is keyed too.
            "code": {
                "seamline": code_digest(),
                "components": sorted(
                    f"{info.kind} {info.name} {component_digest(info.module)}"
                    for info in (self.registry.get("model", model.name), *attentions)
                ),
            },
            "sample": {"documents": settings.gate.documents, "top_k": settings.gate.top_k},
        }

    def close(self) -> None:
        self._reference = None


def preview_precision(
    pipeline: ResolvedPipeline,
    registry: Registry,
    *,
    environ: Mapping[str, str] | None = None,
    hardware: Hardware | None = None,
) -> tuple[Mode, list[PrecisionCandidate]]:
    """What ``seamline explain`` shows: each candidate judged without embedding anything.

    A candidate the model offers and the hardware runs natively is then judged by the
    gate's recorded figures when a run of this pipeline left some, and otherwise is
    marked as to be checked when the run starts. Candidates after float32 are not
    listed: a run never gets past float32.
    """
    settings = pipeline.spec.precision
    mode = mode_of(settings)
    if settings.names == (FLOAT32,):
        return mode, [PrecisionCandidate(FLOAT32, True, ("the default",))]
    pipeline = pinned_model(pipeline, registry)  # the records' key, as a run makes it
    hardware = hardware or Hardware.detect(environ)
    offered = offered_by(pipeline, registry)
    calibration = Calibration(pipeline, registry, hardware, environ)
    judged: list[PrecisionCandidate] = []
    for candidate in offered_and_native(settings, offered, hardware):
        if candidate.ok and candidate.name != FLOAT32 and settings.verify:
            candidate = calibration.recorded(candidate, settings)
        judged.append(candidate)
        if candidate.ok and candidate.name == FLOAT32:
            break
    return mode, judged
