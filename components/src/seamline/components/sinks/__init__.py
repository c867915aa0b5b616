"""Sinks: where outputs go (``jsonl``, ``npy``), each published atomically.

Every file a sink writes lives under a hidden temporary name beside its
destination until the run completes (see :mod:`._atomic`), so a reader never sees
half an output and a failed run leaves nothing behind.
"""
