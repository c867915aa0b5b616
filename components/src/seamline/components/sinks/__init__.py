"""Sinks: where outputs go (``jsonl``, ``npy``, ``parquet``, ``lancedb``), published whole.

Each is built on the sink kit's template
(:class:`seamline.contracts.sink_kit.PublishingSink`), which owns the lifecycle: every
file is written under a hidden temporary name beside its destination until the run
completes, so a reader never sees half an output and a failed run leaves nothing
behind; commits make a run resumable; a run split into shards publishes its parts
together. Each sink names the reader of its output (``reader``), through which
``seamline search`` and :func:`seamline.contracts.readback.read_records` read it back.
The sinks do not import one another: ``parquet`` and ``lancedb`` share the columnar
layout (``_columns``, ``_columnar``, ``_unify``).
"""
