"""What the checkout's benchmarks share, one module per job.

* :mod:`.paths` -- the checkout's folders and interpreters, and how a benchmark module
  starts another one (itself as a worker, or a reference side in ``.venv-golden``);
* :mod:`.corpus` -- the documents every side reads;
* :mod:`.seamline_work` -- the seamline side: model config, pipeline files, batches,
  and a pipeline run timed part by part;
* :mod:`.workers` -- sides in processes of their own, spoken to with JSON lines;
* :mod:`.tables` -- the tables a benchmark prints and the record of its run.

What they share with ``seamline bench attention`` (peak RSS, host and versions, load
averages, interleaved repeats and their spread, JSON output) is
:mod:`seamline.adapters.measure`. Every module here imports only the standard library
and that package at module level: ``workers`` runs in ``.venv-golden`` too.
"""
