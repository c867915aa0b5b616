"""The typed shape of a pipeline file.

Components appear only by registered name (``use:``) with their own config under
``with:``; the component's ``Config`` model validates that block later, once the
registry has found the component. Every model here forbids unknown fields.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from enum import StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)

from seamline.contracts.component import (
    NOT_BLANK,
    LeavesMachine,
    refuse_a_boolean_for_a_number,
    refuse_an_impossible_path,
)
from seamline.contracts.untrusted import unicode_problem
from seamline.core.config.otlp import endpoint_problem
from seamline.core.trust.settings import TrustSettings

AUTO = "auto"

OTLP_HEADER_VARIABLES = (
    "OTEL_EXPORTER_OTLP_HEADERS",
    "OTEL_EXPORTER_OTLP_TRACES_HEADERS",
    "OTEL_EXPORTER_OTLP_METRICS_HEADERS",
)
"""What the OTLP exporters send to any receiver they are given, from the environment."""


class AttentionMode(StrEnum):
    """How the pipeline chose its attention; decided once, when the pipeline is resolved.

    Everything downstream (the planner's reasons and errors, ``explain``, the run's
    events) reads this one value instead of looking at ``use`` again.
    """

    EXPLICIT = "explicit"
    """One name: it must serve every shape, or the run fails with its reasons."""
    LIST = "list"
    """A preference list: the first candidate that can serve a shape serves it."""
    AUTO = "auto"
    """Every installed implementation, ordered per shape by its own ``priority(spec)``."""

    @classmethod
    def of(cls, use: str | list[str]) -> AttentionMode:
        """The mode a pipeline's ``attention.use`` value asks for."""
        if isinstance(use, list):
            return cls.LIST
        return cls.AUTO if use == AUTO else cls.EXPLICIT


class Selection(StrEnum):
    """How ``auto`` or a list orders the candidates that serve a shape (``attention.select``)."""

    PRIORITY = "priority"
    """Each candidate's ``priority(spec)``, or the list's order."""
    MEASURE = "measure"
    """Measured time on the shape's exact inputs (the tuning cache), fastest first."""


def _unicode_text(value: str) -> str:
    """``value``, unless it holds a lone surrogate (``pipeline: "\\ud800"``), which no
    UTF-8 output can carry: the run published its output and then failed printing its
    summary (``UnicodeEncodeError``, exit 1, so a script ran again a run that had
    succeeded), and ``explain`` failed the same; refused here, at its place."""
    problem = unicode_problem(value, "the value")
    if problem is not None:
        raise ValueError(problem)
    return value


UnicodeText = Annotated[str, AfterValidator(_unicode_text)]
"""A free-text setting that is printed, logged or exported: valid Unicode only."""


def _a_name(value: str) -> str:
    """``value``, unless it is empty or blank: ``pipeline: ''`` named a run, its manifest,
    its spans and its log lines with nothing, so that two pipelines' runs could not be
    told apart in a trace or a log."""
    if not value.strip():
        raise ValueError("a pipeline needs a name that is not empty or only spaces")
    return value


PipelineName = Annotated[UnicodeText, AfterValidator(_a_name), Field(json_schema_extra=NOT_BLANK)]
"""The pipeline's name: free text, but not empty or blank (also in ``seamline schema``)."""


def _positive_lengths(schema: dict[str, Any]) -> None:
    """``run.buckets`` as its validator takes it, for ``seamline schema``: one length at
    least, each 1 or more (an editor passed ``buckets: []`` and ``[0, 16]``)."""
    for form in schema.get("anyOf", []):
        if form.get("type") == "array":
            form["minItems"] = 1
            form.setdefault("items", {})["minimum"] = 1


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_a_boolean_for_a_number(cls, value, info)


class ComponentRef(_Strict):
    """A component chosen by its registered name, with its configuration."""

    use: str = Field(description="Registered name of the component (see `seamline components`).")
    with_: dict[str, Any] = Field(
        default_factory=dict,
        alias="with",
        description="The component's configuration; its fields are the component's own.",
    )


class ShadowSettings(_Strict):
    """Run the reference beside the chosen attention now and then, and compare."""

    every: int = Field(
        ge=1, description="Also run the reference on every Nth batch and compare the outputs."
    )


class AttentionSpecConfig(_Strict):
    """Which attention serves the model: one name, a preference list, or ``auto``."""

    use: str | list[str] = Field(
        default=AUTO,
        description=(
            "'auto' (every installed implementation, best first), one registered name "
            "(must serve, or the run fails with the reasons), or a preference list "
            "(the first that can serve is used)."
        ),
    )
    with_: dict[str, Any] = Field(
        default_factory=dict,
        alias="with",
        description=(
            "For a single name: its configuration. For 'auto' or a list: a mapping from "
            "implementation name to its configuration."
        ),
    )

    select: Selection = Field(
        default=Selection.PRIORITY,
        description=(
            "How 'auto' or a list orders the candidates that serve a shape: 'priority' (each "
            "one's priority(), or the list's order) or 'measure' (time them on the shape's "
            "exact inputs on first use and take the fastest; the times are kept in the "
            "tuning cache, so later runs pay nothing: see `seamline tune`)."
        ),
    )
    reference: str | None = Field(
        default=None,
        description=(
            "The implementation others are verified against. Default: the installed one "
            "that declares itself the reference (seamline's 'native')."
        ),
    )
    verify: bool = Field(
        default=True,
        description=(
            "Check the chosen implementation against the reference on first use of every "
            "shape signature; one outside tolerance is rejected for that shape."
        ),
    )
    on_failure: Literal["fallback", "raise"] = Field(
        default="fallback",
        description=(
            "When the chosen implementation fails for a shape (to compile, with the wrong "
            "shape, or while running: it raises, or returns NaN or infinity where the "
            "reference does not): 'fallback' demotes it for that shape and runs the batch on "
            "the next candidate; 'raise' stops the run, keeping the last checkpoint."
        ),
    )
    shadow: ShadowSettings | None = Field(
        default=None,
        description="Shadow mode: {every: N} also runs the reference on every Nth batch.",
    )
    require_conformance: bool = Field(
        default=False,
        description=(
            "Use only implementations with a passing conformance record (seamline check "
            "attention:NAME --record) for the versions of the component, JAX and jaxlib "
            "installed now and this platform; others are refused with the reason."
        ),
    )

    @field_validator("use")
    @classmethod
    def _non_empty(cls, value: str | list[str]) -> str | list[str]:
        if isinstance(value, list):
            if not value:
                raise ValueError("the preference list is empty: name at least one implementation")
            if len(set(value)) != len(value):
                raise ValueError("the preference list names an implementation twice")
        return value


PRECISION_NAMES = ("float32", "bfloat16")
"""The compute precisions a pipeline may ask for (a model says which it offers)."""


class PrecisionGate(_Strict):
    """What a lower precision must show against float32 before a run trusts it."""

    min_cosine: float = Field(
        default=0.9999,
        gt=0.0,
        le=1.0,
        description="The lowest cosine similarity allowed between a window's vector in the "
        "candidate precision and its float32 vector, over the calibration sample.",
    )
    top_k: int = Field(
        default=10,
        ge=1,
        le=100,
        description="How many nearest neighbours (among the sample's windows, cosine) are "
        "compared for min_neighbours.",
    )
    min_neighbours: float = Field(
        default=0.98,
        ge=0.0,
        le=1.0,
        description="The lowest mean fraction of each window's top_k float32 neighbours that "
        "the candidate's vectors must keep.",
    )
    documents: int = Field(
        default=64,
        ge=2,
        le=4096,
        description="The calibration sample: the run's first this many documents (all their "
        "windows), embedded in float32 and in the candidate precision.",
    )


SHORT_FORMS: dict[str, str] = {"precision": "use"}
"""Sections a pipeline may write as a name or a list, and the key that short form fills:
``precision: auto`` is ``precision: {use: auto}``. A ``--set`` of a key inside such a
section expands it first (``--set precision.verify=false`` after ``precision: auto``)."""


class PrecisionSettings(_Strict):
    """Which precision the model computes in: one name, a preference list, or ``auto``.

    Written as a name (``precision: auto``), a list (``precision: [bfloat16, float32]``)
    or a mapping with ``use`` and the gate's thresholds.
    """

    use: str | list[str] = Field(
        default="float32",
        description="'float32' (the default: matches the reference to 1e-5), 'bfloat16', "
        "'auto' (the fastest the hardware runs natively that passes the gate, else float32) "
        "or a preference list (the first that is native and passes is used).",
    )
    verify: bool = Field(
        default=True,
        description="Check a lower precision against float32 on the run's first documents "
        "(the gate) before trusting it; false trusts it unchecked, and the run's provenance "
        "says so.",
    )
    require_native: bool = Field(
        default=True,
        description="Refuse a precision the hardware does not run natively (it would be "
        "emulated, slower than float32). false accepts it: to measure a precision's accuracy "
        "on a machine without the instructions.",
    )
    gate: PrecisionGate = Field(
        default_factory=PrecisionGate, description="The gate's sample and thresholds."
    )

    @model_validator(mode="before")
    @classmethod
    def _short_forms(cls, data: Any) -> Any:
        """``precision: auto`` and ``precision: [bfloat16, float32]`` mean ``{use: ...}``."""
        return {SHORT_FORMS["precision"]: data} if isinstance(data, str | list) else data

    @field_validator("use")
    @classmethod
    def _known(cls, value: str | list[str]) -> str | list[str]:
        """Known names only, said once with the choices (not one error per union member)."""
        names = value if isinstance(value, list) else [value]
        allowed = (*PRECISION_NAMES, AUTO) if isinstance(value, str) else PRECISION_NAMES
        for name in names:
            if name not in allowed:
                near = difflib.get_close_matches(name, allowed, n=1, cutoff=0.5)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ValueError(
                    f"{name!r} is not a precision{hint}: use {', '.join(allowed)}"
                    + ("" if isinstance(value, str) else " in a list")
                )
        if isinstance(value, list):
            if not value:
                raise ValueError("the preference list is empty: name at least one precision")
            if len(set(value)) != len(value):
                raise ValueError("the preference list names a precision twice")
        return value

    @property
    def names(self) -> tuple[str, ...]:
        """The precisions named, in preference order (``auto``: every one, fastest first)."""
        if isinstance(self.use, list):
            return tuple(self.use)
        return FASTEST_FIRST if self.use == AUTO else (self.use,)


FASTEST_FIRST: tuple[str, ...] = ("bfloat16", "float32")
"""What ``precision: auto`` tries, in order: lower precisions are faster where native."""


class RunSettings(_Strict):
    """How the orchestrator batches work, and how often it checkpoints."""

    batch_size: int = Field(
        default=32,
        ge=1,
        le=65536,
        description="Rows per batch (each row one example, or several when packed); "
        "batch_tokens, when set, decides instead.",
    )
    batch_tokens: int | None = Field(
        default=None,
        ge=1,
        le=1 << 24,
        description=(
            "A token budget per batch: a batch of rows of length L has batch_tokens // L "
            "rows (at least one), so short and long batches hold as many positions. "
            "Default: unset, batch_size rows whatever the length."
        ),
    )
    packing: bool = Field(
        default=True,
        description=(
            "Pack several short examples into one row (with segment ids keeping them apart) "
            "when the model supports it, instead of padding each to a row of its own: the "
            "same outputs from fewer positions. false pads every example."
        ),
    )
    buckets: list[int] | None = Field(
        default=None,
        description=(
            "Sequence lengths that batches are padded to (one compilation each). "
            "Default: powers of two from 16 up to the model's max_length, and max_length."
        ),
        json_schema_extra=_positive_lengths,
    )
    prefetch: int = Field(
        default=2, ge=0, le=64, description="Batches prepared on the host ahead of the device."
    )
    in_flight: int = Field(
        default=1,
        ge=0,
        le=8,
        description=(
            "Batches launched on the device before the oldest one's outputs are written: "
            "the device computes the next batch while the host checks, writes and reports "
            "this one. 0 waits for each batch before launching the next."
        ),
    )
    checkpoint_every: int = Field(
        default=1000,
        ge=0,
        description=(
            "Loaded documents (error records included) between checkpoints: the sink makes "
            "everything written so far durable with the loader's cursor, so `seamline run "
            "--resume` can continue from there after a crash. Each checkpoint flushes the "
            "partly filled buckets, padding those batches. 0 never checkpoints. Only "
            "resumable sinks are checkpointed."
        ),
    )

    executor: ComponentRef | None = Field(
        default=None,
        description=(
            "Where the run's shards are computed: another executor than the default, such as "
            "{use: ray, with: {address: auto, actors: 4, cpus_per_actor: 1}} (see "
            "docs/scaling.md). Default: the installed executor that declares itself the "
            "default (seamline's 'local': this process, every local device data-parallel)."
        ),
    )

    @field_validator("buckets")
    @classmethod
    def _positive_sorted(cls, value: list[int] | None) -> list[int] | None:
        if value is None:
            return None
        if not value or any(b < 1 for b in value):
            raise ValueError("buckets must be a non-empty list of positive lengths")
        return sorted(set(value))


class TelemetrySettings(_Strict):
    """Where this pipeline's spans and metrics go; each field set here beats the environment.

    Read by the application (the ``seamline`` CLI), not by core: a library embedding
    seamline keeps its own telemetry set-up. See docs/observability.md.
    """

    traces: list[Literal["console", "otlp", "jsonl", "none"]] | None = Field(
        default=None,
        description="Span exporters (default: $OTEL_TRACES_EXPORTER, else none).",
    )
    traces_file: Annotated[str | None, BeforeValidator(refuse_an_impossible_path)] = Field(
        default=None,
        description="The file of the jsonl span exporter, one span per line "
        "(default: $SEAMLINE_TRACES_FILE, else seamline-trace.jsonl).",
    )
    metrics: list[Literal["console", "otlp", "none"]] | None = Field(
        default=None,
        description="Metric exporters (default: $OTEL_METRICS_EXPORTER, else none).",
    )
    otlp_endpoint: Annotated[
        str | None, LeavesMachine("an OTLP receiver's URL", carries=OTLP_HEADER_VARIABLES)
    ] = Field(
        default=None,
        description="Base URL of the OTLP receiver, e.g. http://localhost:4318: http:// or "
        "https://, a host and a port (default: $OTEL_EXPORTER_OTLP_ENDPOINT and the "
        "per-signal variables). Set here, "
        "in the pipeline file, it leaves the machine: a ${VAR} in it, and the "
        "OTEL_EXPORTER_OTLP_*HEADERS the exporters send along, must be named in the user "
        "config's trust.network_variables.",
    )

    @field_validator("otlp_endpoint")
    @classmethod
    def _a_receiver_s_url(cls, value: str | None) -> str | None:
        """Refused here, at ``file:line:column``: an endpoint no exporter can send to ran
        the whole pipeline and lost every span (:mod:`seamline.core.config.otlp`). The
        file's endpoint is a URL with a scheme whatever the protocol."""
        problem = None if value is None else endpoint_problem(value)
        if problem is not None:
            raise ValueError(f"the OTLP receiver's URL {problem}")
        return value

    otlp_protocol: Literal["http/protobuf", "grpc"] | None = Field(
        default=None,
        description="OTLP transport (default: $OTEL_EXPORTER_OTLP_TRACES_PROTOCOL / "
        "_METRICS_PROTOCOL, $OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf).",
    )
    service_name: Annotated[
        UnicodeText | None, LeavesMachine("the service name every exported span and metric carries")
    ] = Field(
        default=None, description="service.name of the resource (default: $OTEL_SERVICE_NAME)."
    )

    traces_file_variable: ClassVar[str] = "SEAMLINE_TRACES_FILE"
    """The environment's default of ``traces_file``."""
    default_traces_file: ClassVar[str] = "seamline-trace.jsonl"
    """The jsonl exporter's file when neither the field nor the variable names one."""

    def traces_file_in(self, environ: Mapping[str, str]) -> str:
        """The jsonl exporter's file: ``traces_file``, else ``$SEAMLINE_TRACES_FILE``, else
        ``seamline-trace.jsonl``. One answer for the exporter the CLI installs and for the
        check, while the pipeline is validated, that the file overwrites nothing the run
        reads (:mod:`seamline.core.config.overlap`): the two once disagreed, and a file
        named in the environment was never checked."""
        named = self.traces_file or environ.get(self.traces_file_variable)
        return named or self.default_traces_file

    def exports_jsonl(self, environ: Mapping[str, str]) -> bool:
        """Whether the jsonl exporter is chosen: by ``traces``, else ``$OTEL_TRACES_EXPORTER``
        (an unknown name there is the CLI's to refuse)."""
        if self.traces is not None:
            return "jsonl" in self.traces
        return "jsonl" in (n.strip() for n in environ.get("OTEL_TRACES_EXPORTER", "").split(","))


class PipelineSpec(_Strict):
    """A whole pipeline file."""

    pipeline: PipelineName = Field(description="A name for this pipeline, used in logs and traces.")
    loader: ComponentRef = Field(description="Where documents come from.")
    model: ComponentRef = Field(description="The model that turns documents into outputs.")
    attention: AttentionSpecConfig = Field(
        default_factory=AttentionSpecConfig, description="The attention behind the model's seam."
    )
    precision: PrecisionSettings = Field(
        default_factory=PrecisionSettings,
        description="The precision the model computes in: float32 (default), bfloat16, auto "
        "or a preference list, negotiated with the hardware and checked against float32.",
    )
    monitors: list[ComponentRef] = Field(
        default_factory=list, description="Observers of the run's events."
    )
    sink: ComponentRef = Field(description="Where outputs go.")
    run: RunSettings = Field(
        default_factory=RunSettings, description="Batching and checkpoint settings."
    )
    telemetry: TelemetrySettings = Field(
        default_factory=TelemetrySettings,
        description="Span and metric exporters for this pipeline (they win over OTEL_* "
        "environment variables).",
    )
    trust: TrustSettings = Field(
        default_factory=TrustSettings,
        description="An allowlist of the distributions that may provide components.",
    )


class EncoderSpec(_Strict):
    """An in-process embedder's settings: the model side of a pipeline, nothing else."""

    model: ComponentRef = Field(description="The model that turns texts into vectors.")
    attention: AttentionSpecConfig = Field(
        default_factory=AttentionSpecConfig, description="The attention behind the model's seam."
    )
    run: RunSettings = Field(default_factory=RunSettings, description="Batching settings.")
    trust: TrustSettings = Field(
        default_factory=TrustSettings,
        description="An allowlist of the distributions that may provide components.",
    )
