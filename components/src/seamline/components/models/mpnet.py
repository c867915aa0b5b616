"""``mpnet-encoder``: an MPNet sentence encoder (e.g. all-mpnet-base-v2) in JAX.

A component of its own rather than a ``model_type`` switch inside ``bert-encoder``:
the two run different networks (MPNet adds a relative-position bias and has no
token types), a pipeline file and a manifest should say which one ran, and an
attention that cannot add the bias is refused for this model alone. Everything
else is the shared :class:`~.encoder.SentenceEncoder`'s: the same configuration
fields, weight sources, windows, instruction prefixes and ``for_queries``, packing,
pooling, normalisation and precisions.

What is MPNet's: its ``config.json`` and tensor names (:mod:`.mpnet_weights`) and
its forward pass (:mod:`.mpnet_math`), which hands the attention a
:class:`~seamline.contracts.RelativeBias` (attention contract 1.2).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from seamline.components.models import mpnet_math, mpnet_weights, weights
from seamline.components.models.bert_math import Architecture
from seamline.components.models.encoder import EncoderConfig, SentenceEncoder
from seamline.components.models.mpnet_math import MpnetArchitecture, MpnetParams
from seamline.contracts import AttentionFn

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    from collections.abc import Mapping

    import jax


class MpnetEncoderConfig(EncoderConfig):
    """Configuration of ``mpnet-encoder`` (its ``with:`` block in a pipeline file)."""


Config = MpnetEncoderConfig
"""The name the component contract gives a component's configuration model."""


class MpnetEncoder(SentenceEncoder[MpnetParams]):
    """An MPNet encoder with sentence-transformers pooling, reproducing the reference."""

    name: ClassVar[str] = "mpnet-encoder"
    Config = MpnetEncoderConfig

    def _parse_architecture(self, files: weights.ModelFiles) -> Architecture:
        self._mpnet = mpnet_weights.parse_architecture(files.config, files.model_dir)
        return self._mpnet.base

    @property
    def mpnet_architecture(self) -> MpnetArchitecture:
        """The static shape with MPNet's own parts (bias buckets, position table rows)."""
        return self._mpnet

    def _check_tensors(self, files: weights.ModelFiles) -> None:
        mpnet_weights.check_tensors(files, self._mpnet)

    def _read_params(self, files: weights.ModelFiles, sha256: str | None) -> MpnetParams:
        return mpnet_weights.load_params(files, self._mpnet, sha256)

    def _param_shapes(self) -> MpnetParams:
        return mpnet_weights.param_shapes(self._mpnet)

    def _encode(
        self,
        params: MpnetParams,
        arrays: Mapping[str, jax.Array],
        attention: AttentionFn,
        slots: int,
    ) -> jax.Array:
        import jax.numpy as jnp

        return mpnet_math.encode(
            params,
            jnp.asarray(arrays["input_ids"]),
            jnp.asarray(arrays["segment"]),
            jnp.asarray(arrays["positions"]),
            attention,
            self._mpnet,
            self._readout,
            slots,
        )
