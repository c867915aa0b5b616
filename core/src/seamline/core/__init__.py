"""seamline's orchestration core: registry, config, planner and orchestrator.

Core sees components only through their contracts and never names a concrete
one; it emits telemetry through ``opentelemetry-api`` and ``structlog`` only, so
an embedding application keeps control of exporters and log rendering.

The names below are core's public face: what the CLI, the search adapter and the
benchmarks may use (import-linter forbids ``seamline.adapters`` and ``benchmarks``
any other module of core), so that core's modules can move and split behind it
without breaking an edge. Tests may import internals.

They are loaded on first use (PEP 562), as ``seamline.contracts``' names are:
importing ``seamline.core`` imports no submodule and so no JAX, and the command
line's ``--help`` stays fast. Type checkers see the plain imports below. A few
names differ from their module's (``explain`` is ``explain_attention`` here): one
word such as ``save`` says too little beside everything else core offers, and a
public name may never be a submodule's name (``provenance``), which Python would
put in its place once the submodule is imported.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from seamline.contracts.lazy_names import lazy_attributes

if TYPE_CHECKING:
    from seamline.core.attention.candidates import build_candidates
    from seamline.core.attention.checked import CheckedAttention
    from seamline.core.attention.host import usable_cpus
    from seamline.core.attention.order import auto_order, auto_order_table
    from seamline.core.attention.plan import (
        BucketPlan,
        BucketTuning,
        CandidateVerdict,
        Plan,
        Verdict,
    )
    from seamline.core.attention.plan import explain as explain_attention
    from seamline.core.attention.plan import tune as tune_attention
    from seamline.core.attention.probe import attention_specs
    from seamline.core.attention.tuning import TuningCache
    from seamline.core.batching import BatchShapes, default_buckets, resolve_buckets
    from seamline.core.code_digest import code_digest as seamline_code
    from seamline.core.config import (
        AttentionMode,
        PipelineConfigError,
        ResolvedAttention,
        ResolvedEncoder,
        ResolvedPipeline,
        RunSettings,
        Selection,
        TelemetrySettings,
        check_executor,
        check_model,
        load_trusted,
        pipeline_trust,
        prepare_located,
        read_pipeline_text,
        resolve_attention,
        resolve_component,
    )
    from seamline.core.config.located import Located, parse_located
    from seamline.core.config.otlp import endpoint_problem as otlp_endpoint_problem
    from seamline.core.config.otlp import with_signal_path as otlp_signal_url
    from seamline.core.config.place import Place
    from seamline.core.config.spec import PrecisionGate
    from seamline.core.config.user import user_trust
    from seamline.core.directories import (
        cache_home,
        named_directory,
        output_directory,
        try_writing,
    )
    from seamline.core.embed_queue import LongText
    from seamline.core.embedder import Cancelled, Embedder, Pending, Unembeddable, Vectors
    from seamline.core.exhaustion import exhausted
    from seamline.core.given_texts import MISSING_FIX, dimensions_problem, missing_kind
    from seamline.core.host import Collated, HostWork, documents_as_loaded
    from seamline.core.orchestrator import RunSummary
    from seamline.core.pipeline import Pipeline
    from seamline.core.plugin_imports import stdout_to_stderr
    from seamline.core.precision.decision import GateFigures, PrecisionCandidate, PrecisionDecision
    from seamline.core.precision.gate import compare as compare_precision
    from seamline.core.precision.gate import neighbours_kept
    from seamline.core.precision.gate import refusals as precision_refusals
    from seamline.core.precision.negotiate import (
        decide_precision,
        negotiated,
        preview_precision,
        serving_precision,
    )
    from seamline.core.private_cache import (
        NotPrivate,
        check_jax_compile_cache,
        not_private,
        prepared_by_root,
    )
    from seamline.core.propagators import check_propagators, propagators_problem
    from seamline.core.propagators import extract as extract_trace_context
    from seamline.core.provenance import describe as describe_provenance
    from seamline.core.provenance import provenance as pipeline_provenance
    from seamline.core.provenance import run_versions
    from seamline.core.published import OlderVersions, PublishedButFailed
    from seamline.core.registry import ComponentInfo, Registry, group_of
    from seamline.core.schema import pipeline_schema
    from seamline.core.seams import clipped, failed_at, one_line, operation_of
    from seamline.core.stops import is_interrupt, raise_kept_stop, stops_kept
    from seamline.core.suggest import did_you_mean
    from seamline.core.telemetry import telemetry_applied, worker_name
    from seamline.core.traces_file import (
        TRACES_FILE,
        traces_file_problem,
        traces_file_status_problem,
        traces_file_unusable,
    )
    from seamline.core.trust.classes import CONFORMANCE_GROUP, ListedConformance
    from seamline.core.trust.records import attribute as attribute_record
    from seamline.core.trust.records import save as save_record
    from seamline.core.trust.records import store_directory
    from seamline.core.trust.records import unattributed as unattributed_record

_LOCATIONS: dict[str, tuple[str, str]] = {
    # Running a pipeline
    "Pipeline": ("seamline.core.pipeline", "Pipeline"),
    "RunSummary": ("seamline.core.orchestrator", "RunSummary"),
    "PublishedButFailed": ("seamline.core.published", "PublishedButFailed"),
    "OlderVersions": ("seamline.core.published", "OlderVersions"),
    # Embedding in-process (seamline.api's Embedder, search's query model, the server)
    "Embedder": ("seamline.core.embedder", "Embedder"),
    "Cancelled": ("seamline.core.embedder", "Cancelled"),
    "Pending": ("seamline.core.embedder", "Pending"),
    "Unembeddable": ("seamline.core.embedder", "Unembeddable"),
    "Vectors": ("seamline.core.embedder", "Vectors"),
    "dimensions_problem": ("seamline.core.given_texts", "dimensions_problem"),
    "missing_kind": ("seamline.core.given_texts", "missing_kind"),
    "MISSING_FIX": ("seamline.core.given_texts", "MISSING_FIX"),
    "LongText": ("seamline.core.embed_queue", "LongText"),
    "ResolvedAttention": ("seamline.core.config", "ResolvedAttention"),
    "ResolvedEncoder": ("seamline.core.config", "ResolvedEncoder"),
    "RunSettings": ("seamline.core.config", "RunSettings"),
    # Components and trust
    "ComponentInfo": ("seamline.core.registry", "ComponentInfo"),
    "Registry": ("seamline.core.registry", "Registry"),
    "group_of": ("seamline.core.registry", "group_of"),
    "user_trust": ("seamline.core.config.user", "user_trust"),
    "CONFORMANCE_GROUP": ("seamline.core.trust.classes", "CONFORMANCE_GROUP"),
    "ListedConformance": ("seamline.core.trust.classes", "ListedConformance"),
    "attribute_record": ("seamline.core.trust.records", "attribute"),
    "save_record": ("seamline.core.trust.records", "save"),
    "store_directory": ("seamline.core.trust.records", "store_directory"),
    "unattributed_record": ("seamline.core.trust.records", "unattributed"),
    "failed_at": ("seamline.core.seams", "failed_at"),
    "exhausted": ("seamline.core.exhaustion", "exhausted"),
    "one_line": ("seamline.core.seams", "one_line"),
    "operation_of": ("seamline.core.seams", "operation_of"),
    "clipped": ("seamline.core.seams", "clipped"),
    # Pipeline files
    "AttentionMode": ("seamline.core.config", "AttentionMode"),
    "Located": ("seamline.core.config.located", "Located"),
    "PipelineConfigError": ("seamline.core.config", "PipelineConfigError"),
    "Place": ("seamline.core.config.place", "Place"),
    "ResolvedPipeline": ("seamline.core.config", "ResolvedPipeline"),
    "Selection": ("seamline.core.config", "Selection"),
    "TelemetrySettings": ("seamline.core.config", "TelemetrySettings"),
    "otlp_endpoint_problem": ("seamline.core.config.otlp", "endpoint_problem"),
    "TRACES_FILE": ("seamline.core.traces_file", "TRACES_FILE"),
    "traces_file_problem": ("seamline.core.traces_file", "traces_file_problem"),
    "traces_file_status_problem": ("seamline.core.traces_file", "traces_file_status_problem"),
    "traces_file_unusable": ("seamline.core.traces_file", "traces_file_unusable"),
    "otlp_signal_url": ("seamline.core.config.otlp", "with_signal_path"),
    "propagators_problem": ("seamline.core.propagators", "propagators_problem"),
    "extract_trace_context": ("seamline.core.propagators", "extract"),
    "check_propagators": ("seamline.core.propagators", "check_propagators"),
    "check_executor": ("seamline.core.config", "check_executor"),
    "check_model": ("seamline.core.config", "check_model"),
    "load_trusted": ("seamline.core.config", "load_trusted"),
    "parse_located": ("seamline.core.config.located", "parse_located"),
    "pipeline_trust": ("seamline.core.config", "pipeline_trust"),
    "prepare_located": ("seamline.core.config", "prepare_located"),
    "read_pipeline_text": ("seamline.core.config", "read_pipeline_text"),
    "resolve_attention": ("seamline.core.config", "resolve_attention"),
    "resolve_component": ("seamline.core.config", "resolve_component"),
    "pipeline_schema": ("seamline.core.schema", "pipeline_schema"),
    "describe_provenance": ("seamline.core.provenance", "describe"),
    "pipeline_provenance": ("seamline.core.provenance", "provenance"),
    "run_versions": ("seamline.core.provenance", "run_versions"),
    # Attention negotiation
    "BucketPlan": ("seamline.core.attention.plan", "BucketPlan"),
    "BucketTuning": ("seamline.core.attention.plan", "BucketTuning"),
    "CandidateVerdict": ("seamline.core.attention.plan", "CandidateVerdict"),
    "CheckedAttention": ("seamline.core.attention.checked", "CheckedAttention"),
    "Plan": ("seamline.core.attention.plan", "Plan"),
    "TuningCache": ("seamline.core.attention.tuning", "TuningCache"),
    "Verdict": ("seamline.core.attention.plan", "Verdict"),
    "attention_specs": ("seamline.core.attention.probe", "attention_specs"),
    "auto_order": ("seamline.core.attention.order", "auto_order"),
    "auto_order_table": ("seamline.core.attention.order", "auto_order_table"),
    "build_candidates": ("seamline.core.attention.candidates", "build_candidates"),
    "explain_attention": ("seamline.core.attention.plan", "explain"),
    "tune_attention": ("seamline.core.attention.plan", "tune"),
    # Precision negotiation
    "GateFigures": ("seamline.core.precision.decision", "GateFigures"),
    "PrecisionCandidate": ("seamline.core.precision.decision", "PrecisionCandidate"),
    "PrecisionDecision": ("seamline.core.precision.decision", "PrecisionDecision"),
    "compare_precision": ("seamline.core.precision.gate", "compare"),
    "neighbours_kept": ("seamline.core.precision.gate", "neighbours_kept"),
    "precision_refusals": ("seamline.core.precision.gate", "refusals"),
    "PrecisionGate": ("seamline.core.config.spec", "PrecisionGate"),
    "decide_precision": ("seamline.core.precision.negotiate", "decide_precision"),
    "preview_precision": ("seamline.core.precision.negotiate", "preview_precision"),
    "serving_precision": ("seamline.core.precision.negotiate", "serving_precision"),
    "negotiated": ("seamline.core.precision.negotiate", "negotiated"),
    # Host work and batch shapes (the benchmarks measure them alone)
    "BatchShapes": ("seamline.core.batching", "BatchShapes"),
    "Collated": ("seamline.core.host", "Collated"),
    "HostWork": ("seamline.core.host", "HostWork"),
    "default_buckets": ("seamline.core.batching", "default_buckets"),
    "documents_as_loaded": ("seamline.core.host", "documents_as_loaded"),
    "resolve_buckets": ("seamline.core.batching", "resolve_buckets"),
    # Where seamline keeps files, and who is working
    "cache_home": ("seamline.core.directories", "cache_home"),
    # Which seamline this is (`seamline --version`; what manifests record as seamline-code)
    "seamline_code": ("seamline.core.code_digest", "code_digest"),
    "named_directory": ("seamline.core.directories", "named_directory"),
    "output_directory": ("seamline.core.directories", "output_directory"),
    "try_writing": ("seamline.core.directories", "try_writing"),
    # A compile cache's programs must be the user's alone (seamline.core.private_cache)
    "NotPrivate": ("seamline.core.private_cache", "NotPrivate"),
    "not_private": ("seamline.core.private_cache", "not_private"),
    "prepared_by_root": ("seamline.core.private_cache", "prepared_by_root"),
    "check_jax_compile_cache": ("seamline.core.private_cache", "check_jax_compile_cache"),
    "worker_name": ("seamline.core.telemetry", "worker_name"),
    # The CPUs this process may run on (its affinity: taskset, a container's cpuset)
    "usable_cpus": ("seamline.core.attention.host", "usable_cpus"),
    # A mistyped name's closest match, as every message suggests it
    "did_you_mean": ("seamline.core.suggest", "did_you_mean"),
    # A Ctrl-C Python dropped, kept for the command that runs (see seamline.core.stops)
    "stops_kept": ("seamline.core.stops", "stops_kept"),
    # A pipeline's telemetry section, which the application reads (Pipeline.run warns if not)
    "telemetry_applied": ("seamline.core.telemetry", "telemetry_applied"),
    "raise_kept_stop": ("seamline.core.stops", "raise_kept_stop"),
    # A stop (Ctrl-C, sys.exit()) or a failure that is no Exception (a Rust library's panic)
    "is_interrupt": ("seamline.core.stops", "is_interrupt"),
    # Standard output moved to standard error, the file descriptor too
    "stdout_to_stderr": ("seamline.core.plugin_imports", "stdout_to_stderr"),
}
"""Each public name: the module that defines it, and its name there."""


__getattr__ = lazy_attributes(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    return sorted([*globals(), *_LOCATIONS])


__all__ = [
    "CONFORMANCE_GROUP",
    "MISSING_FIX",
    "TRACES_FILE",
    "AttentionMode",
    "BatchShapes",
    "BucketPlan",
    "BucketTuning",
    "Cancelled",
    "CandidateVerdict",
    "CheckedAttention",
    "Collated",
    "ComponentInfo",
    "Embedder",
    "GateFigures",
    "HostWork",
    "ListedConformance",
    "Located",
    "LongText",
    "NotPrivate",
    "OlderVersions",
    "Pending",
    "Pipeline",
    "PipelineConfigError",
    "Place",
    "Plan",
    "PrecisionCandidate",
    "PrecisionDecision",
    "PrecisionGate",
    "PublishedButFailed",
    "Registry",
    "ResolvedAttention",
    "ResolvedEncoder",
    "ResolvedPipeline",
    "RunSettings",
    "RunSummary",
    "Selection",
    "TelemetrySettings",
    "TuningCache",
    "Unembeddable",
    "Vectors",
    "Verdict",
    "attention_specs",
    "attribute_record",
    "auto_order",
    "auto_order_table",
    "build_candidates",
    "cache_home",
    "check_executor",
    "check_jax_compile_cache",
    "check_model",
    "check_propagators",
    "clipped",
    "compare_precision",
    "decide_precision",
    "default_buckets",
    "describe_provenance",
    "did_you_mean",
    "dimensions_problem",
    "documents_as_loaded",
    "exhausted",
    "explain_attention",
    "extract_trace_context",
    "failed_at",
    "group_of",
    "is_interrupt",
    "load_trusted",
    "missing_kind",
    "named_directory",
    "negotiated",
    "neighbours_kept",
    "not_private",
    "one_line",
    "operation_of",
    "otlp_endpoint_problem",
    "otlp_signal_url",
    "output_directory",
    "parse_located",
    "pipeline_provenance",
    "pipeline_schema",
    "pipeline_trust",
    "precision_refusals",
    "prepare_located",
    "prepared_by_root",
    "preview_precision",
    "propagators_problem",
    "raise_kept_stop",
    "read_pipeline_text",
    "resolve_attention",
    "resolve_buckets",
    "resolve_component",
    "run_versions",
    "save_record",
    "seamline_code",
    "serving_precision",
    "stdout_to_stderr",
    "stops_kept",
    "store_directory",
    "telemetry_applied",
    "traces_file_problem",
    "traces_file_status_problem",
    "traces_file_unusable",
    "try_writing",
    "tune_attention",
    "unattributed_record",
    "usable_cpus",
    "user_trust",
    "worker_name",
]
