"""Attention implementations side by side: time and peak memory over sequence lengths.

Usage::

    seamline bench attention [--max-length 16384] [--lengths 128,1024,...]
        [--implementations native,blockwise] [--repeats 3] [--causal] [--interpret]

(``python -m benchmarks.attention.sweep`` is the same in a checkout.)

Every attention implementation the registry discovers (kind ``attention``) is asked
``supports(spec)`` with the real :class:`AttentionSpec` (platform and device kind of
``jax.devices()[0]``); those that refuse are listed with their reasons. Each one that
accepts is timed over sequence lengths 128, 256, ..., ``--max-length`` with B=1,
12 heads, head dim 64, float32 self-attention whose last ~5% of tokens are padding
(segment ids: real tokens 1, padding 0), ``causal=False`` unless ``--causal``.

Every (implementation, length) runs in a fresh worker process of its own
(``python -m seamline.adapters.bench_attention.worker measure IMPL LENGTH``, one JSON
line on stdout):

* the jitted attention is lowered and compiled ahead of time (compile seconds and
  XLA's ``memory_analysis()`` of the executable are recorded), called once to warm
  up, then timed over ``--repeats`` calls, each up to ``block_until_ready()``; the
  median is reported;
* **peak memory** is the worker's own peak RSS (``VmHWM``) minus that of a *baseline* worker for
  the same length (``measure baseline LENGTH``), which imports everything, discovers
  the registry, builds the same inputs on the device and compiles and runs one trivial
  jitted op, but calls no attention: the difference is the attention's own working
  memory (its compile and its run);
* the worker runs under ``RLIMIT_AS`` (``--address-limit-gib``, default 24) and the
  driver watches its RSS with psutil, killing it above ``--memory-limit-gib`` (default
  20) or when the machine itself runs low on memory, and after ``--timeout`` seconds.
  A worker that fails is recorded as such; longer lengths of an implementation that
  ran out of memory or time are skipped.

After the timings each worker checks a few output rows against a float64 NumPy
reference computed in the worker (not against ``native``), and that no output is
NaN/inf; this does not count towards the peak.

The interpret-mode kernels (a Config with an ``interpret`` field that refuses this
platform otherwise: ``tpu-flash``, ``tpu-splash``, ``gpu-flash``) run only with
``--interpret``, as ``{"interpret": true}``, up to ``--interpret-max-length``.

Results go to ``OUT/attention.json`` and ``OUT/attention.png``. Exit codes: 0 when at
least one cell was measured, 1 when nothing was, 2 on a usage error (:mod:`.cli`).

One module per job: :mod:`.workload` (shapes, limits, units), :mod:`.worker` (the
child processes: one measurement, or the probe of the registry), :mod:`.driver`
(probe, plan, run and watch the workers, write the JSON), :mod:`.report` (tables,
notes, verdicts), :mod:`.plot` (the PNG) and :mod:`.cli` (options and exit codes).
What it measures as every other benchmark does (peak RSS, host and versions, load
averages, the spread of repeats, the JSON file) comes from
:mod:`seamline.adapters.measure`, which the checkout's ``benchmarks`` share.
"""

from __future__ import annotations

from seamline.adapters.bench_attention.cli import (
    EXIT_NOTHING_MEASURED,
    EXIT_OK,
    EXIT_USAGE,
    main,
)
from seamline.adapters.bench_attention.driver import run_benchmark
from seamline.adapters.bench_attention.report import print_report, verdicts

__all__ = [
    "EXIT_NOTHING_MEASURED",
    "EXIT_OK",
    "EXIT_USAGE",
    "main",
    "print_report",
    "run_benchmark",
    "verdicts",
]
