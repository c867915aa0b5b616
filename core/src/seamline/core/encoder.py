"""A pipeline's model side, built once: texts or batches in, vectors out.

An :class:`Encoder` holds what turns batches into vectors — the model behind its
seam, the negotiated attention candidates, the compiled step of each batch shape
(planned, verified against the reference, shadow-checked: :class:`CompiledSteps`),
and the parameters on the device — together with the batch shapes of the
pipeline's ``run`` settings. A run's orchestrator feeds it the batches its loader's
documents make; an application that embeds text in-process feeds it documents of
its own. Both go through the same host work (:mod:`seamline.core.host`), the same
seams and the same kernel choice, so there is no second, quieter way to embed.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import jax
import numpy as np
from opentelemetry import trace

from seamline.contracts import Batch, Model
from seamline.contracts.seams import (
    check_finite_outputs,
    check_model_output,
    check_row_shape,
)
from seamline.core.attention.candidates import AttentionCandidates
from seamline.core.attention.compile import Step
from seamline.core.attention.steps import CompiledSteps, Launched, Report
from seamline.core.batching import BatchShapes, batch_shapes
from seamline.core.config import RunSettings
from seamline.core.devices import local_data_parallel, pinned_device
from seamline.core.forking import refuse_after_fork
from seamline.core.host import HostWork
from seamline.core.seams import CallStart, Seam


class Encoder:
    """The model, its attention and its compiled steps; parameters loaded on first use."""

    def __init__(
        self,
        model: Model[Any],
        seam: Seam,
        attention: AttentionCandidates,
        run: RunSettings,
        report: Report,
    ) -> None:
        refuse_after_fork(f"model {model.name!r}")
        self.model = model
        self.seam = seam
        self.attention = attention
        self.run = run
        self.parallel = local_data_parallel()
        self.device = pinned_device()
        """Where the parameters go without ``parallel``: the application's pinned device,
        or (None) JAX's default one."""
        self.steps = CompiledSteps(model, attention, report, self.parallel)
        devices = self.parallel.devices if self.parallel is not None else 1
        self.shapes = batch_shapes(run, model.max_length, devices)
        self._params: Any = None
        self._loaded = False
        self._row_shape: tuple[int, ...] | None = None
        """The shape of an output row, pinned by the first batch (:func:`check_row_shape`)."""

    def params(self) -> Any:
        """The parameters on the device, loaded (through the model's seam) on first use."""
        if not self._loaded:  # the runtime was marked started in __init__ (devices.py)
            with self.seam.call("load"):
                params = self.model.load()
                parallel = self.parallel
                self._params = (
                    jax.device_put(params, self.device)
                    if parallel is None
                    else parallel.place_params(params)
                )
            self._loaded = True
        return self._params

    def host_work(
        self,
        checkpoint_every: int = 0,
        *,
        shapes: BatchShapes | None = None,
        max_windows: int | None = None,
        side: Model[Any] | None = None,
    ) -> HostWork:
        """A fresh host side (prepare, bucket or pack, collate) for this model.

        ``shapes``: other batch shapes than the pipeline's (an in-process caller's token
        budget); ``max_windows``: keep only each document's first windows; ``side``: the
        model's other side whose ``prepare`` makes the windows (its ``for_queries()``:
        the same network and compiled steps, other windows), this model's by default.
        """
        return HostWork(
            side or self.model,
            shapes or self.shapes,
            seam=self.seam,
            packing=self.run.packing,
            checkpoint_every=checkpoint_every,
            max_windows=max_windows,
        )

    def shapes_for(self, batch_tokens: int | None) -> BatchShapes:
        """The batch shapes of the pipeline's ``run`` with another token budget."""
        if batch_tokens is None or batch_tokens == self.run.batch_tokens:
            return self.shapes
        run = self.run.model_copy(update={"batch_tokens": batch_tokens})
        devices = self.parallel.devices if self.parallel is not None else 1
        return batch_shapes(run, self.model.max_length, devices)

    def launch(self, batch: Batch) -> Launched:
        """Start the model on ``batch`` (compiling its shape first, if new); do not wait.

        A caller with more batches launches the next before it finishes this
        one, so the device is never idle while the host writes outputs.
        """
        return self.steps.launch(self.params(), batch, self._begin)

    def finish(self, launched: Launched) -> np.ndarray:
        """The outputs of a launched batch: one row per batch row, checked at the seam.

        Each call is a ``seamline.model.apply`` span from its launch to its outputs; a
        kernel that fails while running falls back there, and a shadowed batch is
        compared with the reference.
        """
        params = self.params()
        batch = launched.batch
        step, outputs = self.steps.collect(params, launched, self._around, self._begin)
        model = self.model
        with self.seam.blamed("apply"):  # the model's outputs: a failure names its distribution
            check_model_output(model.name, outputs, batch.output_size, model.output_dtype())
            check_finite_outputs(model.name, outputs, batch)
            self._row_shape = check_row_shape(
                model.name, outputs, self._row_shape, (batch.batch_size, batch.length)
            )
        return self.steps.shadow(params, batch, step, outputs)

    def _begin(self) -> CallStart:
        return self.seam.begin("apply")

    def _around(self, step: Step, begun: CallStart) -> AbstractContextManager[trace.Span]:
        return self.seam.call("apply", step.attributes, begun)

    def close(self, *, release: bool = False) -> None:
        """Close the model and every attention candidate; with ``release``, drop the
        parameters and the compiled steps too.

        A run leaves them (its summary still counts the steps it compiled); an ``Embedder``
        releases them: one closed but still referenced (an attribute, a cache, a traceback)
        kept ~100 MiB of weights and programs per model until it was collected.
        """
        self.model.close()
        self.attention.close()
        if release:
            self._params = None
            self._loaded = False
            self.steps.release()
