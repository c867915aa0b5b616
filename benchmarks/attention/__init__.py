"""Attention implementations side by side: ``sweep`` (``seamline bench attention`` for a
checkout: every implementation over sequence lengths, time and peak memory) and
``vs_torch`` (seamline's CPU attentions against torch's ``scaled_dot_product_attention``
on the model's own shapes, its torch side ``_torch_worker`` in ``.venv-golden``).
"""
