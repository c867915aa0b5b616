"""A run's model, pinned once: which weights the run embeds with, decided before it starts.

A pipeline may name its weights by where they are (``weights: package:...``, a folder)
and not by what they are; what is there can change under a run (a package upgraded, a
folder copied over), and vectors of two models would then share one output. So the host
asks the model once, at the driver, for its configuration with the weights pinned
(``Model.pinned_config``, model contract 1.4: the first-party encoder fills ``sha256``)
and runs on that:

- every worker builds its model from the pinned configuration, and a worker whose
  weights differ refuses them when it loads them;
- the manifest records it, so a search of the output embeds its queries with those
  weights or refuses them;
- so does every checkpoint (it holds the manifest's ``model``), so a resume whose weights
  changed since the checkpoint is refused, naming the setting that differs
  (``model.with.sha256 was ..., now ...``).

A model may only fill settings its configuration left unset (or null); one that changes a
setting the pipeline gives, or returns another type of configuration, is a contract
violation, reported as the model's failure (the call crosses a seam, ``pinned_config``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from seamline.contracts import ContractViolation, Model
from seamline.contracts.model import pin_problem
from seamline.core.config import ResolvedPipeline, build_model
from seamline.core.monitor_hub import MonitorHub
from seamline.core.registry import Registry
from seamline.core.seams import Seam, mark_failure


def pinned(pipeline: ResolvedPipeline, model: Model[Any]) -> ResolvedPipeline:
    """``pipeline`` with its model's configuration as ``model`` (built from it) pins it."""
    given = pipeline.model.config
    config = model.pinned_config()
    if config is given or config == given:
        return pipeline
    problem = pin_problem(model.name, given, config)
    if problem is not None:
        raise ContractViolation(problem)
    asked = pipeline.model.asked if pipeline.model.asked is not None else given
    return replace(pipeline, model=replace(pipeline.model, config=config, asked=asked))


def pinned_model(
    pipeline: ResolvedPipeline, registry: Registry, keep: KeptModel | None = None
) -> ResolvedPipeline:
    """``pipeline`` with its model pinned: the driver's step, before any shard runs.

    The call crosses a seam (span ``seamline.model.pinned_config``, under the run's, and a
    failure names the model), as every call of a component does. Given ``keep``, a model
    that pinning left as it was built (its configuration unchanged) is kept there for a
    worker in this process, instead of closed: a model whose constructor takes 20 s was
    built twice per local run, once here and once in the worker.
    """
    model = _built(pipeline, registry)
    try:
        hidden = pipeline.span_hidden(registry.trust.network_variables)
        with Seam(model, registry.info_of(model), MonitorHub(()), hidden).call("pinned_config"):
            pinned_pipeline = pinned(pipeline, model)
    except BaseException:
        model.close()
        raise
    if keep is not None and pinned_pipeline is pipeline:
        keep.hold(pinned_pipeline, model)
    else:
        model.close()
    return pinned_pipeline


class KeptModel:
    """The driver's model, built for pinning, kept for the first worker of this process.

    Handed over once (:meth:`take`), only for the very pipeline it was built from; a run
    whose workers are elsewhere (Ray) closes it (:meth:`close`), as does the run's end.
    """

    def __init__(self) -> None:
        self._held: tuple[ResolvedPipeline, Model[Any]] | None = None

    def hold(self, pipeline: ResolvedPipeline, model: Model[Any]) -> None:
        self.close()
        self._held = (pipeline, model)

    def take(self, pipeline: ResolvedPipeline) -> Model[Any] | None:
        """The model, if it was built from ``pipeline``'s model configuration; now the
        taker's to close. Otherwise None (and the kept one is closed)."""
        held, self._held = self._held, None
        if held is not None and held[0].model == pipeline.model:
            return held[1]
        if held is not None:
            held[1].close()
        return None

    def close(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            held[1].close()


def pinned_and_built(
    pipeline: ResolvedPipeline, registry: Registry, built: Model[Any] | None = None
) -> tuple[ResolvedPipeline, Model[Any]]:
    """``pipeline`` with its model pinned, and the model built from the pinned configuration.

    A worker's pipeline comes pinned from the driver, so its model pins nothing more and is
    built once; a pipeline that pinning changes (an orchestrator run on its own) has its
    model built again from the pinned configuration, whose ``load`` checks the weights
    against the pin. No span: a worker builds its orchestrator before it joins the run's
    trace, and a span here would start a trace of its own. A failure still names the model.
    ``built``: the driver's model, built from this pipeline and pinned there (:class:`KeptModel`).
    """
    if built is not None:
        return pipeline, built
    model = _built(pipeline, registry)
    try:
        pinned_pipeline = pinned(pipeline, model)
    except BaseException as err:
        mark_failure(err, "model", model.name, "pinned_config", registry.info_of(model))
        model.close()
        raise
    if pinned_pipeline is pipeline:
        return pipeline, model
    model.close()
    return pinned_pipeline, _built(pinned_pipeline, registry)


def _built(pipeline: ResolvedPipeline, registry: Registry) -> Model[Any]:
    return build_model(pipeline.model, registry, pipeline.overrides_under(("model", "with")))
