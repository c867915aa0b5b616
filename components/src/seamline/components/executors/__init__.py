"""Executors: where a run's shards are computed (``local``: this process)."""
