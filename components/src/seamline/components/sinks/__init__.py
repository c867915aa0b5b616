"""Sinks: where outputs go (``jsonl``, ``npy``, ``parquet``, ``lancedb``), published whole.

Every file a sink writes lives under a hidden temporary name beside its
destination until the run completes (see :mod:`._atomic`), so a reader never sees
half an output and a failed run leaves nothing behind; the ``lancedb`` sink
stages its rows in a hidden table and publishes them as one version of the table.
"""
