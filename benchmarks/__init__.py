"""seamline's benchmarks, one folder per thing measured; run each from the repository root.

    .venv/bin/python -m benchmarks.throughput.whole_run --help

``common`` holds what the benchmarks share in this checkout (the corpus, the seamline
side of a measurement, worker processes, tables); what they share with ``seamline bench
attention`` lives in the installed package, :mod:`seamline.adapters.measure`. The
folders and the scripts in them are listed in ``benchmarks/README.md``.

This package and its folders' ``__init__`` modules import nothing: the reference sides
(torch, sentence-transformers) run as modules of this package in ``.venv-golden``.
"""
