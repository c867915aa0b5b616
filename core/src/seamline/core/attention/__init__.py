"""Attention negotiation: everything that decides which kernel serves which shape, in one place.

========================  ==============================================================
module                    its one job
========================  ==============================================================
:mod:`.candidates`        build a pipeline's candidates, reference and trust verdicts (the
                          one factory a run and ``explain`` share)
:mod:`.order`             the order ``auto`` tries candidates in, and its table for the docs
:mod:`.planner`           choose per shape signature, demote, refuse with data
:mod:`.probe`             learn a model's attention shapes without running it
:mod:`.verification`      compare a candidate with the reference (first use, shadow)
:mod:`.steps`             the compiled step per batch shape: plan, verify, compile, fall
                          back, shadow-check (what the orchestrator asks for)
:mod:`.plan`              ``explain``: the plan of a pipeline without running it
:mod:`.checked`           the attention's choke point inside compiled code
========================  ==============================================================

Nothing here names a concrete kernel: kernels speak for themselves through
``supports()`` and ``priority()``. Which candidates have earned trust under
``require_conformance`` is the trust package's to say
(:func:`seamline.core.trust.untrusted_candidates`); the planner refuses the others.
"""
