"""From a pipeline file to validated components, or to errors that say where and what.

Validation collects every problem it can find before failing, so a user fixes a
file in one pass rather than one error per run. Each problem carries the
``file:line:column`` of the node it is about (or the ``--set`` override that
introduced the value) and says what would be valid: the allowed fields, the
available component names, a closest match.
"""

from __future__ import annotations

import hashlib
import os
import re
import types
import typing
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import ErrorDetails
from pydantic_core.core_schema import ErrorType

from seamline.contracts import (
    Component,
    ComponentConfig,
    ConfigError,
    Executor,
    Kind,
    Model,
    UserError,
)
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import NotRegularFile, read_regular
from seamline.contracts.workdir import gone_under, working_folder
from seamline.core.config import bounds
from seamline.core.config.interpolate import interpolate
from seamline.core.config.located import Located, described, locate_data, parse_located
from seamline.core.config.located import Path as DataPath
from seamline.core.config.network import network_problems
from seamline.core.config.occupied import occupied_problems
from seamline.core.config.overlap import overlap_problems
from seamline.core.config.overrides import (
    apply_overrides,
    is_override,
    overrides_below,
    with_overrides,
)
from seamline.core.config.place import Place
from seamline.core.config.quoting import quoting_fix
from seamline.core.config.redact import Filled, filled_under, scrub, scrubbed, span_hidden
from seamline.core.config.spec import (
    AttentionMode,
    AttentionSpecConfig,
    ComponentRef,
    EncoderSpec,
    PipelineSpec,
    RunSettings,
    Selection,
)
from seamline.core.config.user import user_trust
from seamline.core.precision.decision import (
    FLOAT32,
    PrecisionDecision,
    none_can_serve,
    not_offered,
)
from seamline.core.registry import ComponentInfo, Registry, allowlist_fix
from seamline.core.seams import BUILD, mark_failure
from seamline.core.suggest import did_you_mean
from seamline.core.trust import (
    ConformanceCheck,
    TrustPolicy,
    TrustSettings,
    failing_record_warning,
    pipeline_policy,
)

log = get_logger("seamline.core")


class PipelineConfigError(ConfigError):
    """One or more located problems in a pipeline; the message lists them all, in the
    order of the file (a problem placed by a ``--set`` override or by no place at all
    comes after those placed in the file, in the order found)."""

    def __init__(self, problems: Sequence[ConfigError]) -> None:
        self._problems = tuple(sorted(problems, key=_place_in_file))
        super().__init__("\n".join(str(problem) for problem in self._problems))
        self.location = self._problems[0].location

    @property
    def problems(self) -> tuple[ConfigError, ...]:
        """Every problem found, in the order of the file (one line of the message each)."""
        return self._problems


@contextmanager
def without_values(located: Located) -> Iterator[None]:
    """Every ``ConfigError`` raised inside, with the values ``located`` took from ``${VAR}``
    named, never shown (:func:`~seamline.core.config.redact.scrubbed`).

    seamline's own messages quote settings (``no loader component named 'hunter2pass'``,
    ``path '.../out/hunter2pass.jsonl' is a directory``) though the docs promise that an
    error names the variable and never prints its value. Each step that validates a
    document runs inside this, so no message of it, now or written later, is let through
    unscrubbed.
    """
    try:
        yield
    except PipelineConfigError as err:
        safe = [scrubbed(problem, located) for problem in err.problems]
        if any(a is not b for a, b in zip(safe, err.problems, strict=True)):
            raise PipelineConfigError(safe) from None
        raise
    except ConfigError as err:
        safe_one = scrubbed(err, located)
        if safe_one is not err:
            raise safe_one from None
        raise


_LINE_COLUMN = re.compile(r":(\d+):(\d+)(?: \(with --set .*\))?$")
"""A place in the file, maybe naming the overrides that changed a value inside it
(:func:`~seamline.core.config.overrides.with_overrides`)."""


def _place_in_file(problem: ConfigError) -> tuple[int, int, int]:
    """Sort key of a problem: its line and column where it has them, else after them."""
    place = problem.location
    if isinstance(place, Place):
        return (0, place.line, place.column) if place.line and place.column else (1, 0, 0)
    found = _LINE_COLUMN.search(place or "")
    return (0, int(found[1]), int(found[2])) if found else (1, 0, 0)


@dataclass(frozen=True, slots=True)
class ComponentChoice:
    """A resolved component: what it is, its validated config, and where it was named."""

    kind: Kind
    name: str
    config: ComponentConfig
    location: str
    distribution: str = ""
    """The distribution that provides the component (its provenance), "" when unknown."""
    version: str = ""
    """That distribution's installed version."""
    filled: tuple[Filled, ...] = field(default=(), repr=False, compare=False)
    """The values its ``with:`` block took from environment variables: an error the
    component raises about its settings is shown without them (:func:`build_model`)."""
    asked: ComponentConfig | None = field(default=None, repr=False, compare=False)
    """A pinned model's configuration as the pipeline asked for it, before the model filled
    what it left unset (None: not pinned). ``spec_sha256`` hashes what was asked, as
    ``validate`` sees it; the pin is recorded on its own (the manifest's ``model.with``)."""
    settings: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    """Where each setting its ``with:`` block gives is written: an error the component
    raises about one (``UserError.setting``) is placed there (:func:`build_component`)."""


@dataclass(frozen=True, slots=True)
class ResolvedAttention:
    """A validated ``attention`` section: its mode, candidates and reference, decided once."""

    settings: AttentionSpecConfig
    mode: AttentionMode
    """Explicit, list or auto: read by the planner and ``explain``, never re-derived."""
    candidates: tuple[ComponentChoice, ...]
    """Candidate attentions in preference order (for ``auto``: every usable one)."""
    reference: ComponentChoice | None = None
    """What candidates are verified and shadowed against; None when none is installed."""
    unusable: Mapping[str, str] = field(default_factory=dict)
    """For ``auto``: name -> why, of each installed attention that cannot be a candidate
    (broken, refused, in conflict: :meth:`Registry.unusable`). A run and ``explain`` list
    each as refused for every shape, so that a plugin a JAX upgrade broke is said, not
    silently dropped."""


@dataclass(frozen=True, slots=True)
class ResolvedPipeline:
    """A pipeline whose every component exists and whose every config is valid."""

    spec: PipelineSpec
    source: str
    loader: ComponentChoice
    model: ComponentChoice
    sink: ComponentChoice
    monitors: tuple[ComponentChoice, ...]
    attention: ResolvedAttention
    executor: ComponentChoice | None = None
    """Where the shards run: ``run.executor``, else the installed executor that declares
    itself the default; None when there is none."""
    located: Located | None = None
    """The validated document with the place of every value (for run-time errors)."""
    file_sha256: str | None = None
    """sha256 of the pipeline file's bytes, as read (None when built from data, not a file)."""
    precision: PrecisionDecision | None = None
    """The precision negotiated for the run (:mod:`seamline.core.precision`); None until
    the driver has decided it."""

    @property
    def chosen_precision(self) -> str:
        """The precision the model computes in: the decision's, float32 before one is made
        (the orchestrator negotiates first when the pipeline asks for anything else)."""
        return self.precision.chosen if self.precision is not None else FLOAT32

    def where(self, path: DataPath) -> str:
        """``file:line:column`` of the value at ``path`` (or its nearest parent that is set)."""
        return self.source if self.located is None else self.located.where(path)

    def span_hidden(self, allowed: Collection[str]) -> dict[str, str]:
        """What component span attributes show instead of each value the pipeline took from
        a variable ``allowed`` (``trust.network_variables``) does not name (:func:`~seamline.
        core.config.redact.span_hidden`): every seam of the run is built with it."""
        return span_hidden(filled_under(self.located, ()), allowed)

    def overrides_under(self, path: DataPath) -> list[str]:
        """The ``--set`` overrides that gave a value at or under ``path``, as typed."""
        if self.located is None:
            return []
        return sorted(
            {
                where
                for at, where in self.located.values.items()
                if at[: len(path)] == tuple(path) and where.startswith("--set ")
            }
        )


def load_pipeline(
    path: str | os.PathLike[str],
    registry: Registry,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> ResolvedPipeline:
    """Read, interpolate, override and validate the pipeline file at ``path``."""
    source = pipeline_source(path)
    text = read_pipeline_text(source)
    return parse_pipeline(text, source, registry, overrides, environ, file_sha256=sha256_of(text))


def load_trusted(
    path: str | os.PathLike[str],
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    trust: TrustPolicy | None = None,
) -> tuple[ResolvedPipeline, Registry]:
    """Read the pipeline at ``path``, discover the components its trust allows, resolve it.

    The pipeline's ``trust`` section is read (and validated) before discovery, so an
    entry point of a distribution it leaves out is never imported. ``trust`` is the
    policy it narrows: by default the user config file's, read here and handed to
    the registry (which never reads it itself).
    """
    source = pipeline_source(path)
    text = read_pipeline_text(source)
    located = prepare_located(text, source, overrides, environ)
    return resolve_trusted(located, environ, trust=trust, file_sha256=sha256_of(text))


def resolve_trusted(
    located: Located,
    environ: Mapping[str, str] | None = None,
    *,
    trust: TrustPolicy | None = None,
    file_sha256: str | None = None,
) -> tuple[ResolvedPipeline, Registry]:
    """Discover the components ``located``'s trust allows (before importing any), resolve it."""
    registry = trusted_registry(located, environ, trust=trust)
    resolved = resolve_located(located, registry, file_sha256=file_sha256, environ=environ)
    return resolved, registry


def trusted_registry(
    located: Located, environ: Mapping[str, str] | None = None, *, trust: TrustPolicy | None = None
) -> Registry:
    """The components the document's ``trust`` (within the user's) allows, discovered.

    The ``trust`` section is read (and validated) before discovery, so an entry point of
    a distribution it leaves out is never imported. A name on an allowlist (the
    pipeline's or the user's) that no installed distribution has is warned of, with the
    closest that provides components: a misspelt ``seamline-cpu-flsh`` validated without
    a word, and cpu-flash quietly dropped out of ``auto``. A warning, not an error: the
    distribution may be installed only on the machine that runs the pipeline.
    """
    base = user_trust(environ) if trust is None else trust
    registry = Registry.discover(pipeline_trust(located, base))
    for absent in registry.not_installed:
        log.warning(absent.warning())
    return registry


def prepare_data(
    data: Mapping[str, Any],
    source: str,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Located:
    """A pipeline built in code, located by key paths, with ``${VAR}`` and ``--set`` applied."""
    located = locate_data(data, source)
    interpolate(located, os.environ if environ is None else environ)
    apply_overrides(located, overrides)
    return located


def sha256_of(text: str) -> str:
    """sha256 of a pipeline file's bytes (``text`` is them decoded as UTF-8, so exact)."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def pipeline_trust(located: Located, base: TrustPolicy) -> TrustPolicy:
    """``base`` narrowed by the document's ``trust`` section (validated, errors located)."""
    data = located.data.get("trust", {}) if isinstance(located.data, dict) else {}
    with without_values(located):
        try:
            settings = TrustSettings.model_validate(data)
        except ValidationError as err:
            raise PipelineConfigError(
                _problems(err, located, ("trust",), TrustSettings, "trust")
            ) from None
        return pipeline_policy(settings, base, located.where)


def pipeline_source(path: object) -> str:
    """``path`` as the name of the pipeline file, or a TypeError for what is not a path:
    ``str(b"p.yaml")`` is ``"b'p.yaml'"``, and ``str(None)`` ``"None"``, which were looked
    for as files and reported as missing ("pipeline file b'p.yaml' does not exist")."""
    if isinstance(path, str | os.PathLike) and not isinstance(os.fspath(path), bytes):
        return str(path)
    raise TypeError(
        f"the pipeline file is named by a str or a path (pathlib.Path), not "
        f"{type(path).__name__}{': decode it first' if isinstance(path, bytes) else ''}"
    )


def read_pipeline_text(source: str) -> str:
    """The text of a pipeline file: a regular file, at most ``bounds.MAX_BYTES`` long.

    A FIFO or a device would block or never end: the file is opened non-blocking and
    checked on the open descriptor (no window between a check and the open); the size is
    checked on what is read, so a file that grows while it is read is bounded too. A
    leading ``~`` is the home folder (``Pipeline.from_yaml("~/p.yaml")``), as in a shell.
    """
    if not source:
        raise ConfigError("the pipeline file's path is empty: name the pipeline YAML file")
    path = os.path.expanduser(source)
    try:
        data = read_regular(path, bounds.MAX_BYTES)
    except FileNotFoundError:
        gone_under(path)  # from a deleted folder: cd again, though the name may exist
        raise ConfigError(
            f"pipeline file {source} does not exist: give the path of a pipeline YAML file "
            "(a relative path is taken from the working directory)"
        ) from None
    except NotRegularFile as err:
        raise ConfigError(f"pipeline file {source} is not a regular file ({err})") from None
    except OSError as err:
        raise ConfigError(f"cannot read pipeline file {source}: {err}") from None
    bounds.check_size(len(data), source)
    return bounds.utf8_text(data, source)


def parse_pipeline(
    text: str,
    source: str,
    registry: Registry,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    *,
    file_sha256: str | None = None,
) -> ResolvedPipeline:
    """Validate pipeline ``text`` (named ``source`` in messages)."""
    located = prepare_located(text, source, overrides, environ)
    return resolve_located(located, registry, file_sha256=file_sha256, environ=environ)


def prepare_located(
    text: str,
    source: str,
    overrides: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
) -> Located:
    """Parse pipeline ``text``, fill in ``${VAR}`` and apply ``--set``: not yet validated."""
    located = parse_located(text, source)
    if not isinstance(located.data, dict):
        raise ConfigError(
            f"a pipeline file is a mapping with keys {', '.join(PipelineSpec.model_fields)}; "
            f"this one is {described(located.data)}",
            located.where(()),
        )
    if "seamline_manifest" in located.data:  # `explain out/e.manifest.json`: 8 unknown fields
        raise ConfigError(
            "this is the manifest of an output seamline wrote, not a pipeline file: give the "
            "pipeline file that made it; `seamline search OUTPUT` reads the output, and the "
            "manifest's own fields (attention_served, provenance) are read as JSON",
            located.where(()),
        )
    interpolate(located, os.environ if environ is None else environ)
    apply_overrides(located, overrides)
    return located


def resolve_located(
    located: Located,
    registry: Registry,
    *,
    file_sha256: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> ResolvedPipeline:
    """Validate and resolve a pipeline document already interpolated and overridden.

    A worker in another process rebuilds the driver's pipeline this way from its
    validated spec (plain data), so it runs exactly what the driver validated. The
    document's ``trust`` narrows the registry's: a component of a distribution it
    leaves out is refused where the pipeline names it. The registry's policy also says
    whether conformance is required and which ``environ`` variables may leave the
    machine (:mod:`seamline.core.config.network`). A working directory that no longer
    exists is refused first (:func:`~seamline.contracts.workdir.working_folder`): every
    relative path would fail somewhere inside, as a traceback.
    """
    working_folder()
    with without_values(located):
        spec, registry = _validated(located, PipelineSpec, registry, environ)
        resolved = _Resolver(located, registry, environ).resolve(spec)
    return replace(resolved, file_sha256=file_sha256) if file_sha256 else resolved


S = TypeVar("S", bound=BaseModel)


def _validated(
    located: Located,
    schema: type[S],
    registry: Registry,
    environ: Mapping[str, str] | None = None,
) -> tuple[S, Registry]:
    """``located``'s data as ``schema`` (problems located in the document), and the
    registry narrowed by the document's own ``trust``: what every resolution starts from.

    When the document's own sections fail, the components' ``with:`` sections are
    checked too (:func:`_section_problems`), so one run names every problem.
    """
    try:
        spec = schema.model_validate(located.data)
    except ValidationError as err:
        problems = _problems(err, located, (), schema)
        extra = _section_problems(located, schema, registry, environ)
        raise PipelineConfigError([*problems, *extra]) from None
    return spec, _narrowed(located, registry)


def _narrowed(located: Located, registry: Registry) -> Registry:
    """``registry`` narrowed by the document's own ``trust`` section."""
    trust = pipeline_trust(located, registry.trust)
    return registry.narrowed(trust) if trust is not registry.trust else registry


_COMPONENT_SECTIONS: dict[str, Kind] = {
    "loader": "loader",
    "model": "model",
    "sink": "sink",
    "monitors": "monitor",
}
"""The sections of a document that name a component ``{use, with}`` (``monitors``: a list)."""


def _component_items(
    data: Mapping[str, Any], schema: type[BaseModel]
) -> Iterator[tuple[Kind, Any, DataPath]]:
    """Each ``schema`` section of ``data`` that names a component: kind, value and place."""
    for section, kind in _COMPONENT_SECTIONS.items():
        if section not in schema.model_fields:
            continue
        value = data.get(section)
        if section != "monitors":
            yield kind, value, (section,)
        elif isinstance(value, list):
            yield from ((kind, item, (section, i)) for i, item in enumerate(value))


def _section_problems(
    located: Located,
    schema: type[BaseModel],
    registry: Registry,
    environ: Mapping[str, str] | None,
) -> list[ConfigError]:
    """The problems of each component and of ``attention`` in a document whose other parts
    failed validation, so that one pass names them all.

    Only a section that is well formed on its own (a ``{use, with}`` reference, an
    ``attention`` section) is looked into, exactly as resolution would; a malformed one
    is already among the document's problems, and guessing past it would report
    consequences of the same mistake. An invalid ``trust`` section (also among them)
    leaves nothing to resolve against.
    """
    try:
        resolver = _Resolver(located, _narrowed(located, registry), environ)
    except ConfigError:
        return []
    data = located.data if isinstance(located.data, dict) else {}
    for kind, item, at in _component_items(data, schema):
        try:
            ref = ComponentRef.model_validate(item)
        except ValidationError:
            continue
        resolver.component(kind, ref.use, ref.with_, at)
    if "attention" in schema.model_fields:
        try:
            settings = AttentionSpecConfig.model_validate(data.get("attention", {}))
        except ValidationError:
            pass
        else:
            resolver.attention_section(settings)
    return resolver.problems


@dataclass(frozen=True, slots=True)
class ResolvedEncoder:
    """A pipeline's model side alone: its model, attention and ``run`` settings."""

    model: ComponentChoice
    attention: ResolvedAttention
    run: RunSettings
    source: str
    precision: str = FLOAT32
    """The precision the model computes in (an index's, read from its manifest)."""
    queries: bool = False
    """Embed search queries, not documents: the model's ``for_queries()`` (model contract
    1.3), which may put an instruction before each text (e5's "query: ")."""
    overrides: tuple[str, ...] = ()
    """The overrides that changed the model's ``with:`` (``model.with.weights=...``): a
    refusal of the model names them, as a run's does, not only the file's line."""


def check_model(resolved: ResolvedPipeline, registry: Registry) -> None:
    """Build the pipeline's model, as a run does first, and refuse now what it refuses.

    A model reads its own configuration when it is built (a checkpoint's config.json,
    its tokenizer, the header of its weights file; :meth:`~seamline.contracts.Model.load`
    reads the weights), so a model that cannot run what the pipeline names (an unknown
    architecture, a missing file, a weights file that does not match its configuration)
    is refused by ``seamline validate``, not at the start of a run. Its error is placed
    where the model is named, as a run places it (:func:`build_model`). Only the model
    is built: a loader or a sink would touch the input or the output.

    The precisions the pipeline asks for are checked against those the model offers
    (:meth:`~seamline.contracts.Model.precisions`), which needs no hardware: a pipeline
    asking only for precisions the model cannot compute in (``bfloat16`` of a float32-only
    model) validated, and its run then stopped with this same refusal. It is placed at
    ``precision``. What the hardware runs and the gate's check are the run's to judge.
    """
    model = build_model(resolved.model, registry, resolved.overrides_under(("model", "with")))
    try:
        offered = tuple(model.precisions())
    finally:
        model.close()
    names = resolved.spec.precision.names
    if not any(name in offered for name in names):
        refused = none_can_serve([not_offered(name, offered) for name in names])
        raise ConfigError(str(refused), resolved.where(("precision", "use")))


def build_model(
    choice: ComponentChoice, registry: Registry, overrides: Sequence[str] = ()
) -> Model[Any]:
    """The model ``choice`` names, built; a refusal placed where the pipeline (or the
    index's manifest) names it, and naming the ``overrides`` that changed its ``with:``
    block (a value typed with ``--set`` is not in the file the place points into).

    Every place that builds a model goes through here, so ``seamline run`` and
    ``explain`` name the place of a missing weights folder as ``validate`` does. A value
    its ``with:`` block took from an environment variable is not shown in the refusal
    (:mod:`seamline.core.config.redact`): the model's message may quote it.
    """
    return cast(Model[Any], build_component(choice, registry, overrides))


def check_executor(resolved: ResolvedPipeline, registry: Registry) -> None:
    """Build the pipeline's executor, as a run does before it starts one shard, and refuse
    now what it refuses: ``seamline validate`` passed a pipeline on the ``ray`` executor
    where Ray is not installed, and the run then exited 2 saying so. Building an executor
    starts nothing (no cluster, no process)."""
    if resolved.executor is not None:
        build_executor(resolved.executor, registry, resolved).close()


def build_executor(
    choice: ComponentChoice, registry: Registry, resolved: ResolvedPipeline
) -> Executor[Any]:
    """The executor ``choice`` names, built; a refusal placed where the pipeline names it
    (:func:`build_component`), by ``run`` as by ``validate``."""
    overrides = resolved.overrides_under(("run", "executor"))
    return cast(Executor[Any], build_component(choice, registry, overrides))


def build_component(
    choice: ComponentChoice, registry: Registry, overrides: Sequence[str] = ()
) -> Component[Any]:
    """The component ``choice`` names, built; a refusal placed as :func:`build_model` says.

    Any other error its constructor raises (a third party's model that cannot open what
    it needs) is marked as that component's ``build`` (:func:`~seamline.core.seams.mark_failure`),
    as a run marks a loader's or a sink's: ``run``, ``validate`` and ``explain`` then say
    one line naming it and its distribution where they printed a traceback.
    """
    owner = f"{choice.kind} {choice.name!r}"
    given = f" (given {', '.join(overrides)})" if overrides else ""
    try:
        return registry.create(choice.kind, choice.name, choice.config)
    except ConfigError as err:
        said = scrub(err.detail, choice.filled, owner)
        if err.location is not None:  # the component placed it itself
            if said.place is None and said.text == err.detail:
                raise
            raise ConfigError(said.text, said.place or err.location) from None
        if said.place is None and (at := _setting_place(err, choice)) is not None:
            raise ConfigError(said.text, at) from None
        raise ConfigError(said.text + given, said.place or choice.location) from None
    except UserError as err:
        said = scrub(str(err), choice.filled, owner)
        if said.place is not None:
            raise ConfigError(said.text + given, said.place) from None
        if (at := _setting_place(err, choice)) is not None:
            raise ConfigError(f"{owner}: {said.text}", at) from None
        raise ConfigError(f"{owner}{given}: {said.text}", choice.location) from None
    except Exception as err:
        mark_failure(err, choice.kind, choice.name, BUILD, registry.get(choice.kind, choice.name))
        raise


def _setting_place(err: UserError, choice: ComponentChoice) -> str | None:
    """Where the setting that ``err``, a refusal of ``choice``'s build, is about
    (``UserError.setting``) is written, or None: a missing weights folder was placed at
    ``use: bert-encoder``, lines away from what to fix. The place says where the value
    came from (the file, or the ``--set`` that gave it), so no overrides are listed."""
    return choice.settings.get(err.setting) if err.setting is not None else None


def resolve_encoder(
    located: Located, registry: Registry, *, environ: Mapping[str, str] | None = None
) -> ResolvedEncoder:
    """Validate and resolve a document of ``model``, ``attention``, ``run`` and ``trust``
    (an in-process embedder's settings), exactly as those sections of a pipeline are."""
    with without_values(located):
        return _resolved_encoder(located, registry, environ)


def _resolved_encoder(
    located: Located, registry: Registry, environ: Mapping[str, str] | None
) -> ResolvedEncoder:
    spec, registry = _validated(located, EncoderSpec, registry, environ)
    resolver = _Resolver(located, registry, environ)
    model = resolver.component("model", spec.model.use, spec.model.with_, ("model",))
    attention = resolver.attention_section(spec.attention, spec.trust.require_conformance)
    if model is not None and (spec.trust.require_conformance or registry.trust.require_conformance):
        resolver.conformance([model], spec.trust)
    if resolver.problems:
        raise PipelineConfigError(resolver.problems)
    assert model is not None
    return ResolvedEncoder(model, attention, spec.run, located.source)


def resolve_attention(located: Located, registry: Registry) -> ResolvedAttention:
    """The ``attention`` section of a located document, validated and resolved.

    The document may be a pipeline file or anything laid out like one: a sink's
    manifest records the run's ``attention`` section, and ``seamline search`` resolves
    it from there, with every problem located in the manifest.
    """
    data = located.data.get("attention", {}) if isinstance(located.data, dict) else {}
    try:
        settings = AttentionSpecConfig.model_validate(data)
    except ValidationError as err:
        raise PipelineConfigError(
            _problems(err, located, ("attention",), AttentionSpecConfig, "attention")
        ) from None
    resolver = _Resolver(located, registry)
    resolved = resolver.attention_section(settings)
    if resolver.problems:
        raise PipelineConfigError(resolver.problems)
    return resolved


def resolve_component(
    located: Located,
    registry: Registry,
    kind: Kind,
    name: str,
    config: Mapping[str, Any],
    at: DataPath,
) -> ComponentChoice:
    """The component ``{use: name, with: config}`` at ``at`` of a located document, resolved
    exactly as a pipeline's: a registered name only (never an import path), of a
    distribution trust allows, its config validated by the component's ``Config``.

    For documents laid out like a pipeline that seamline did not just write: ``seamline
    search`` rebuilds the model a sink's manifest names this way, with every problem
    located in the manifest, so that an edited manifest gets no further than a pipeline
    file would.
    """
    resolver = _Resolver(located, registry)
    choice = resolver.component(kind, name, config, at)
    if resolver.problems or choice is None:
        raise PipelineConfigError(resolver.problems)
    return choice


def warn_failing_records(registry: Registry, choices: Sequence[ComponentChoice | None]) -> None:
    """One warning for each chosen component whose conformance record for the installed
    version fails, when conformance is not required (required, it is refused instead)."""
    for choice in choices:
        if choice is None or choice.distribution is None:
            continue
        info = registry.get(choice.kind, choice.name)
        config = choice.config.model_dump(mode="json")
        warning = failing_record_warning(choice.kind, choice.name, config, info)
        if warning is not None:
            log.warning(warning, component=f"{choice.kind}:{choice.name}")


class _Resolver:
    def __init__(
        self, located: Located, registry: Registry, environ: Mapping[str, str] | None = None
    ) -> None:
        self.located = located
        self.registry = registry
        self.environ = os.environ if environ is None else environ
        self.problems: list[ConfigError] = []

    def resolve(self, spec: PipelineSpec) -> ResolvedPipeline:
        self.network(PipelineSpec, ())
        loader = self.component("loader", spec.loader.use, spec.loader.with_, ("loader",))
        model = self.component("model", spec.model.use, spec.model.with_, ("model",))
        sink = self.component("sink", spec.sink.use, spec.sink.with_, ("sink",))
        monitors = [
            self.component("monitor", ref.use, ref.with_, ("monitors", i))
            for i, ref in enumerate(spec.monitors)
        ]
        attention = self.attention_section(spec.attention, spec.trust.require_conformance)
        executor = self.executor(spec.run.executor)
        chosen = [loader, model, sink, *monitors, executor]
        if spec.trust.require_conformance or self.registry.trust.require_conformance:
            self.conformance([c for c in chosen if c is not None], spec.trust)
        else:
            listed = attention.candidates if attention.mode is not AttentionMode.AUTO else ()
            warn_failing_records(self.registry, [*chosen, *listed])
        if loader is not None and sink is not None:
            self.problems.extend(
                overlap_problems(self.located, spec, loader.config, sink.config, self.environ)
            )
        if sink is not None:
            self.problems.extend(occupied_problems(self.located, sink.name, sink.config))
        if self.problems:
            raise PipelineConfigError(self.problems)
        assert loader is not None
        assert model is not None
        assert sink is not None
        return ResolvedPipeline(
            spec=spec,
            source=self.located.source,
            loader=loader,
            model=model,
            sink=sink,
            monitors=tuple(m for m in monitors if m),
            attention=attention,
            executor=executor,
            located=self.located,
        )

    def attention_section(
        self, settings: AttentionSpecConfig, require_conformance: bool = False
    ) -> ResolvedAttention:
        """The ``attention`` section's mode, candidates and reference (problems collected).

        ``require_conformance`` (the pipeline's ``trust``), or the user config's, switches
        on ``attention.require_conformance``: the user config's applies whether the
        section comes from a pipeline or is read back from an output's manifest.
        """
        required = require_conformance or bool(self.registry.trust.require_conformance)
        if required and not settings.require_conformance:
            settings = settings.model_copy(update={"require_conformance": True})
        mode = AttentionMode.of(settings.use)
        if mode is AttentionMode.EXPLICIT and settings.select is Selection.MEASURE:
            self.problems.append(
                ConfigError(
                    f"attention.select is 'measure', but use names one implementation "
                    f"({settings.use!r}): there is nothing to choose between; use 'auto' or a "
                    "preference list, or drop select",
                    self.located.where(("attention", "select")),
                )
            )
        candidates = self.attention(settings, mode)
        reference = self.reference(settings, mode)
        unusable = self.registry.unusable("attention") if mode is AttentionMode.AUTO else {}
        return ResolvedAttention(
            settings, mode, tuple(c for c in candidates if c is not None), reference, unusable
        )

    def component(
        self,
        kind: Kind,
        name: str,
        config: Mapping[str, Any],
        at: DataPath,
        use_path: DataPath | None = None,
        with_path: DataPath | None = None,
    ) -> ComponentChoice | None:
        use_path = use_path or (*at, "use")
        with_path = with_path or (*at, "with")
        where = self.located.where(use_path)
        if any(ch in name for ch in ".:/"):
            self.problems.append(
                ConfigError(
                    f"{name!r} looks like an import path; components are named by their "
                    f"registered name only (available {kind}s: "
                    f"{', '.join(self.registry.names(kind)) or 'none'})",
                    where,
                )
            )
            return None
        try:
            info = self.registry.get(kind, name)
        except UserError as err:
            self.problems.append(ConfigError(str(err), where))
            return None
        assert info.cls is not None  # get() returns usable entries only
        model_cls = info.cls.Config
        try:
            validated = model_cls.model_validate(dict(config))
        except ValidationError as err:
            self.problems.extend(
                _problems(err, self.located, with_path, model_cls, f"{kind} {name!r}")
            )
            return None
        except Exception as err:  # a plugin's validator raising other than ValueError
            self.problems.append(_validator_failed(kind, name, info, err, self.located, with_path))
            return None
        self.network(model_cls, with_path)
        filled = filled_under(self.located, with_path)
        settings = {str(key): self.located.where((*with_path, str(key))) for key in config}
        return ComponentChoice(
            kind, name, validated, where, info.distribution, info.version, filled, settings=settings
        )

    def network(self, model: type[BaseModel], base: DataPath) -> None:
        """The values of ``model``'s section at ``base`` that may not leave the machine."""
        self.problems.extend(
            network_problems(self.located, model, base, self.registry.trust, self.environ)
        )

    def conformance(self, choices: Sequence[ComponentChoice], trust: TrustSettings) -> None:
        """``trust.require_conformance`` (the pipeline's, or the user config's): a problem at
        the ``use:`` of each choice that has not earned trust (``seamline.core.trust.earned``)."""
        setting = (
            self.located.where(("trust", "require_conformance"))
            if trust.require_conformance
            else f"the user config, {self.registry.trust.require_conformance}"
        )
        required = f"trust.require_conformance is set ({setting})"
        check = ConformanceCheck()
        for choice in choices:
            config = choice.config.model_dump(mode="json")
            problem = check.refusal(self.registry, choice.kind, choice.name, config, required)
            if problem is not None:
                self.problems.append(ConfigError(problem, choice.location))

    def executor(self, ref: ComponentRef | None) -> ComponentChoice | None:
        """The named executor, else the installed one that declares itself the default.

        None when the pipeline names none and no installed executor is the default
        (registries built by hand for tests of the orchestrator alone); running such
        a pipeline says so.
        """
        if ref is not None:
            return self.component("executor", ref.use, ref.with_, ("run", "executor"))
        defaults = sorted(
            info.name
            for info in self.registry.entries("executor")
            if info.usable and vars(info.cls).get("is_default", False)
        )
        if not defaults:
            return None
        return self.component("executor", defaults[0], {}, ("run",), use_path=("run",))

    def reference(
        self, settings: AttentionSpecConfig, mode: AttentionMode
    ) -> ComponentChoice | None:
        """The reference attention: as named, else the installed one that declares itself so."""
        name = settings.reference
        use_path: DataPath = ("attention", "reference")
        if name is None:
            declared = [
                info
                for info in self.registry.entries("attention")
                if info.cls is not None and vars(info.cls).get("is_reference", False)
            ]
            usable = [info.name for info in declared if info.usable]
            if not usable:
                if settings.verify:
                    self.problems.append(
                        self._reference_unusable(declared[0]) if declared else self._no_reference()
                    )
                return None
            name, use_path = usable[0], ("attention",)
        options = settings.with_.get(name) if mode is not AttentionMode.EXPLICIT else None
        return self.component(
            "attention",
            name,
            options if isinstance(options, Mapping) else {},
            ("attention",),
            use_path=use_path,
            with_path=("attention", "with", name),
        )

    def _reference_unusable(self, info: ComponentInfo) -> ConfigError:
        """The reference is installed but cannot be used (a conflict, say): verification,
        on by default, would silently check nothing, and a kernel that lies would pass.

        A third party registering ``native`` too stopped every default pipeline with
        "which is conflict here ...; fix that", placed at ``1:1`` of a file with no
        attention section: the message now says what "fix that" is for a conflict, and a
        pipeline without the section is placed at its name, the default named as such.
        """
        status = "in conflict" if info.status == "conflict" else info.status
        if info.status == "conflict":
            fix = f"uninstall one of them, or {allowlist_fix(info.distribution)}"
        else:
            fix = "fix that (the reference must be usable)"
        subject, where = self._attention_place()
        return ConfigError(
            f"{subject} checks the chosen attention against the reference {info.name!r} "
            f"(from {info.distribution}), which is {status} here: {info.reason}; {fix}; "
            "or set attention.verify: false to run unverified",
            where,
        )

    def _no_reference(self) -> ConfigError:
        """No attention installed (or allowed) here declares itself the reference: as with
        an unusable one, verification would silently check nothing."""
        subject, where = self._attention_place()
        return ConfigError(
            f"{subject} checks the chosen attention against the reference, and no "
            "attention installed and allowed here is one (seamline's is 'native', from "
            "seamline-components); install or allow it, name another with "
            "attention.reference, or set attention.verify: false to run unverified",
            where,
        )

    def _attention_place(self) -> tuple[str, str]:
        """What verifies and where to place an error about it: the ``attention`` section, or,
        in a pipeline without one, the pipeline's name (not ``1:1``), the default named."""
        if ("attention",) in self.located.values:
            return "attention.verify", self.located.where(("attention",))
        return "the default attention (auto, verified)", self.located.where(("pipeline",))

    def attention(
        self, config: AttentionSpecConfig, mode: AttentionMode
    ) -> list[ComponentChoice | None]:
        if mode is AttentionMode.EXPLICIT:
            assert isinstance(config.use, str)
            return [self.component("attention", config.use, config.with_, ("attention",))]
        if mode is AttentionMode.AUTO:  # every usable one; the planner orders them per shape
            names = self.registry.names("attention")
        else:
            assert isinstance(config.use, list)
            names = list(config.use)
        unusable = self.registry.unusable("attention") if mode is AttentionMode.AUTO else {}
        for key in config.with_:
            if key not in names:
                self.problems.append(
                    ConfigError(
                        _not_a_candidate(key, names, unusable.get(key)),
                        self.located.where(("attention", "with", key), key=True),
                    )
                )
        choices = []
        for i, name in enumerate(names):
            options = config.with_.get(name) or {}
            use_path: DataPath = (
                ("attention", "use") if mode is AttentionMode.AUTO else ("attention", "use", i)
            )
            if not isinstance(options, Mapping):
                self.problems.append(
                    ConfigError(
                        f"attention.with.{name} must be a mapping of {name}'s settings",
                        self.located.where(("attention", "with", name)),
                    )
                )
                continue
            choices.append(
                self.component(
                    "attention",
                    name,
                    options,
                    ("attention",),
                    use_path=use_path,
                    with_path=("attention", "with", name),
                )
            )
        return choices


def _not_a_candidate(key: str, names: Sequence[str], unusable: str | None) -> str:
    """Why ``attention.with`` may not set ``key``: no candidate of that name, or (``auto``) one
    installed that cannot be used, and why. Such a one was told "not a candidate (did you
    mean 'acme-lazy'?)", as if it were a typo, when a JAX upgrade had broken its import."""
    if unusable is not None:
        return (
            f"attention.with has settings for {key!r}, which is installed but cannot be a "
            f"candidate: it is {unusable} (see `seamline components --kind attention`); fix "
            f"or reinstall it, or drop these settings; candidates: {', '.join(names)}"
        )
    return (
        f"attention.with has settings for {key!r}, which is not a candidate"
        f"{did_you_mean(key, names)}; candidates: {', '.join(names)}"
    )


def _no_config(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """For a component whose class declares no ``Config`` of its own (it kept the base's,
    which takes no field: ``Confg = MyConfig`` is a typo nothing else reports), say so."""
    if len(loc) == 1 and model is ComponentConfig:
        return (
            " (the component's class declares no Config of its own: its author gives it one "
            "as the class attribute named Config)"
        )
    return ""


def _problems(
    err: ValidationError,
    located: Located,
    base: DataPath,
    model: type[BaseModel],
    owner: str = "pipeline",
) -> list[ConfigError]:
    """Translate pydantic's errors into located, actionable messages."""
    problems = []
    for error in err.errors(include_url=False):
        loc = tuple(error["loc"])
        path = (*base, *loc)
        dotted = ".".join(str(p) for p in path) or "the pipeline"
        kind = error["type"]
        if kind == "extra_forbidden":
            allowed = _fields_at(model, loc[:-1])
            field = str(loc[-1])
            message = (
                f"unknown field {dotted!r} in {owner}{did_you_mean(field, allowed)}; "
                f"allowed fields: {', '.join(allowed) or 'none'}{_no_config(model, loc)}"
            )
            where = located.where(path, key=True)
        elif kind in ("model_type", "dict_type"):  # a section or `with:` that is not a mapping
            message = _not_a_mapping(dotted, error.get("input"), model, loc)
            where = located.where(path)
        elif kind == "missing":
            message = f"missing required field {dotted!r} in {owner}"
            description = _description_at(model, loc)
            if description:
                message += f": {description}"
            where = located.where(path[:-1])
        else:
            message, where = _checked(error, located, base, path, owner)
        problems.append(ConfigError(message, where))
    return problems


_PYDANTIC_OWN = frozenset(typing.get_args(ErrorType)) - {"value_error", "assertion_error"}
"""pydantic's errors in its own words, which never quote the input; a ``value_error`` or
an ``assertion_error`` (and any custom type) is a validator's, which may."""


def _checked(
    error: ErrorDetails, located: Located, base: DataPath, path: DataPath, owner: str
) -> tuple[str, str]:
    """The message and place of a value that failed a check (a type, a validator's rule).

    A value filled from the environment is named, never shown, in the validator's words
    too (:mod:`seamline.core.config.redact`). A check of a whole section (a rule linking
    two fields) is placed at the section; when ``--set`` changed a value inside it, the
    override may be what broke the rule, and the file's place alone would send the user
    looking for it in the file: the place names those overrides too.
    """
    variables = located.interpolated.get(path)
    got = ""
    if not variables and path[len(base) :]:  # not a whole-model check (its input: the block)
        shown = repr(error.get("input"))
        got = f" (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    own = error["type"] in _PYDANTIC_OWN
    said = scrub(
        got if own else error["msg"] + got,
        filled_under(located, base),
        owner,
        verbatim=error["msg"] if own else "",
    )
    if said.place is not None:
        return said.text, said.place
    dotted = ".".join(str(p) for p in path) or "the pipeline"
    message = f"{dotted}: {quoting_fix(error, located, path) or said.text}"
    if variables:
        message += f" (got the value of {', '.join(f'${{{name}}}' for name in variables)})"
    where = located.where(path)
    if not is_override(where):
        where = with_overrides(where, overrides_below(located, path))
    return message, where


def _not_a_mapping(dotted: str, given: Any, model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """What pydantic calls "Input should be a valid dictionary or instance of RunSettings",
    in the pipeline's words: what was given, what goes there, and whether it may be left
    out (a section with defaults) or not (``loader``, ``model``, ``sink``)."""
    name = type(given).__name__
    what = "empty (null)" if given is None else f"a{'n' * (name[0] in 'aeiou')} {name}"
    fields = _fields_at(model, loc)
    goes = f" with any of {', '.join(fields)}" if fields else ""
    parent, _ = _walk_model(model, loc[:-1])
    field = _field_named(parent, loc[-1]) if parent is not None and loc else None
    optional = ", or leave it out for its defaults" if field and not field.is_required() else ""
    return f"{dotted} is {what}, not a mapping: give it as a mapping{goes}{optional}"


def _submodel(annotation: Any) -> type[BaseModel] | None:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    origin = typing.get_origin(annotation)
    if origin in (list, typing.Union, types.UnionType) or origin is not None:
        for arg in typing.get_args(annotation):
            found = _submodel(arg)
            if found:
                return found
    return None


def _walk_model(model: type[BaseModel], loc: tuple[Any, ...]) -> tuple[type[BaseModel] | None, str]:
    current: type[BaseModel] | None = model
    description = ""
    for step in loc:
        if current is None or isinstance(step, int):
            continue
        field = _field_named(current, step)
        if field is None:
            return None, ""
        description = field.description or ""
        current = _submodel(field.annotation)
    return current, description


def _field_named(model: type[BaseModel], step: Any) -> FieldInfo | None:
    """The field of ``model`` a pipeline names ``step`` (by its name or its alias)."""
    return next((f for n, f in model.model_fields.items() if step in (n, f.alias)), None)


def _fields_at(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    sub, _ = _walk_model(model, loc)
    if sub is None:
        return []
    return [field.alias or name for name, field in sub.model_fields.items()]


def _description_at(model: type[BaseModel], loc: tuple[Any, ...]) -> str:
    return _walk_model(model, loc)[1]


def _validator_failed(
    kind: Kind, name: str, info: ComponentInfo, err: Exception, located: Located, at: DataPath
) -> ConfigError:
    """A component's ``Config`` that raised other than ``ValueError`` while checking the
    configuration (pydantic makes only that a validation error): the pipeline's place,
    the component and who ships it, not a traceback from ``seamline validate``."""
    why = str(err).strip().splitlines()[0] if str(err).strip() else "(no message)"
    return ConfigError(
        f"{kind} {name!r} (from {info.distribution} {info.version}) could not check this "
        f"configuration: its Config raised {type(err).__name__}: {why}; ask its author to "
        "raise ValueError for a value it refuses (then it is said as a setting's error)",
        located.where(at),
    )
