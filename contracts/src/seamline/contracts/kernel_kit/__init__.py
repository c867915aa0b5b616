"""A kit for attention kernel authors: the wrapper logic a fast kernel needs to keep the contract.

A kernel as a library ships it (Pallas, Triton, cuDNN, ``jax.nn``) rarely serves the
whole attention contract: it wants lengths in whole blocks, masks with its own
alignment, and it gives masked rows and masked NaN keys answers the contract
forbids. The bridges are the same for every kernel, so they live here once, for
seamline's own kernels and a third party's alike (this is part of
``seamline-contracts`` and imports numpy alone, and jax inside the functions that use
it, so that importing a kernel's module does not import JAX)::

    from seamline.contracts import kernel_kit as kit

    valid = kit.rows_with_keys(segment_ids, q_len, kv_len, causal)
    k, v, broken = kit.clean_keys(k, v)
    q, scale = kit.static_scale(q, scale)
    out = my_kernel(kit.pad_axis(q, 1, 0, kit.round_up(q_len, 128) - q_len), ...)
    out = kit.poison(kit.zero_rows(out, valid), kit.poisoned_rows(broken, ...))

Modules, by job:

- :mod:`~seamline.contracts.kernel_kit.padding`: padding to block multiples, the id
  that hides padded keys, repeated key/value heads;
- :mod:`~seamline.contracts.kernel_kit.masked_rows`: rows with no key (zeros) and
  non-finite masked keys (cleaned in, NaN marked out);
- :mod:`~seamline.contracts.kernel_kit.reference`: the contract's mask and plain
  jittable float32 attention (what ``native`` runs; a fallback for odd rows);
- :mod:`~seamline.contracts.kernel_kit.pallas`: refusals shared by Pallas kernels,
  a static scale, Pallas's TPU interpret mode;
- :mod:`~seamline.contracts.kernel_kit.sdpa`: ``jax.nn.dot_product_attention``
  repaired to the contract;
- :mod:`~seamline.contracts.kernel_kit.bias`: the relative-position bias of a
  block of scores (contract 1.2), and the refusal of kernels that add none.

The conformance suite (``seamline.contracts.testing``) stays independent of the
kit: its yardstick is a float64 numpy reference.
"""

from seamline.contracts.kernel_kit.bias import refuse_bias, relative_bias_scores
from seamline.contracts.kernel_kit.masked_rows import (
    clean_keys,
    poison,
    poisoned_rows,
    rows_with_keys,
    zero_rows,
)
from seamline.contracts.kernel_kit.padding import (
    next_power_of_two,
    pad_axis,
    padding_id,
    repeat_kv_heads,
    round_up,
)
from seamline.contracts.kernel_kit.pallas import (
    KernelLimits,
    pallas_refusals,
    static_scale,
    tpu_interpret_mode,
)
from seamline.contracts.kernel_kit.reference import attention_mask, reference_attention
from seamline.contracts.kernel_kit.sdpa import masked_sdpa, sdpa_refusals

__all__ = [
    "KernelLimits",
    "attention_mask",
    "clean_keys",
    "masked_sdpa",
    "next_power_of_two",
    "pad_axis",
    "padding_id",
    "pallas_refusals",
    "poison",
    "poisoned_rows",
    "reference_attention",
    "refuse_bias",
    "relative_bias_scores",
    "repeat_kv_heads",
    "round_up",
    "rows_with_keys",
    "sdpa_refusals",
    "static_scale",
    "tpu_interpret_mode",
    "zero_rows",
]
