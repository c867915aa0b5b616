"""Precision as a negotiated, verified choice (the pipeline's ``precision`` field).

Like the attention, the precision a model computes in is chosen, not forced: a
candidate must be one the model offers (model contract 1.3), one the hardware runs
natively (:mod:`.hardware`), and — for anything below float32 — one whose vectors
agree with float32's on the run's first documents (:mod:`.gate`, verdicts kept by
:mod:`.records`). :mod:`.negotiate` puts these together for a run; the decision
(:mod:`.decision`) travels with the resolved pipeline to every worker and into the
summary, the manifest's provenance, ``seamline explain`` and a span.

The submodules are imported by name; this package's ``__init__`` imports nothing, so
that the configuration layer can use :mod:`.decision` without the rest.
"""
