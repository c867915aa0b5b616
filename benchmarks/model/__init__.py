"""The model's own settings, measured: ``batches`` (token budgets per batch, attentions at
one budget, the model alone) and ``bf16_accuracy`` (bfloat16 against float32: accuracy
and speed of whole runs).
"""
