"""How fast seamline embeds: whole runs and tokens/s against sentence-transformers, and
documents/s on the ``local`` and Ray executors.

``whole_run`` (the headline), ``embed_throughput``, ``length_sweep`` and ``scaling``;
the sentence-transformers sides they start in ``.venv-golden`` (``_reference_run``,
``_reference_worker``) and ``plot_results``, which draws ``embed_throughput``'s PNG.
"""
