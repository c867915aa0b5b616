"""``bert-encoder``: a BERT-family sentence encoder (e.g. all-MiniLM-L6-v2) in JAX.

Everything but the network is the shared :class:`~.encoder.SentenceEncoder`'s
(checkpoint files, windows, instruction prefixes and ``for_queries``, packing, pooling,
precision); here is what is BERT's: its ``config.json``
(:func:`.weights.parse_architecture`), its tensor names (:func:`.weights.load_params`,
checked from the safetensors header by :func:`.weights.check_tensors`) and its forward
pass (:mod:`.bert_math`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from seamline.components.models import bert_math, checkpoint_settings, weights
from seamline.components.models.bert_math import Architecture, BertParams
from seamline.components.models.encoder import (
    PACK_TOKENS,
    PRECISIONS,
    SPECIAL_TOKENS,
    EncoderConfig,
    PrefixConfig,
    SentenceEncoder,
    check_stride,
)
from seamline.contracts import AttentionFn

if TYPE_CHECKING:  # annotations only: importing this module does not import JAX
    from collections.abc import Mapping

    import jax

__all__ = [
    "PACK_TOKENS",
    "PRECISIONS",
    "SPECIAL_TOKENS",
    "BertEncoder",
    "BertEncoderConfig",
    "Config",
    "PrefixConfig",
    "check_stride",
]


class BertEncoderConfig(EncoderConfig):
    """Configuration of ``bert-encoder`` (its ``with:`` block in a pipeline file)."""


Config = BertEncoderConfig
"""The name the component contract gives a component's configuration model."""


class BertEncoder(SentenceEncoder[BertParams]):
    """A BERT encoder with sentence-transformers pooling, reproducing the reference exactly."""

    name: ClassVar[str] = "bert-encoder"
    Config = BertEncoderConfig

    def _parse_architecture(self, files: weights.ModelFiles) -> Architecture:
        checkpoint_settings.refuse_decoder(files, self.name)  # causal attention: not an encoder
        return weights.parse_architecture(files.config, files.model_dir)

    def _check_tensors(self, files: weights.ModelFiles) -> None:
        weights.check_tensors(files, self._arch)

    def _read_params(self, files: weights.ModelFiles, sha256: str | None) -> BertParams:
        return weights.load_params(files, self._arch, sha256)

    def _param_shapes(self) -> BertParams:
        return weights.param_shapes(self._arch)

    def _encode(
        self,
        params: BertParams,
        arrays: Mapping[str, jax.Array],
        attention: AttentionFn,
        slots: int,
    ) -> jax.Array:
        import jax.numpy as jnp

        return bert_math.encode(
            params,
            jnp.asarray(arrays["input_ids"]),
            jnp.asarray(arrays["token_type_ids"]),
            jnp.asarray(arrays["segment"]),
            jnp.asarray(arrays["positions"]),
            attention,
            self._arch,
            self._readout,
            slots,
        )
