"""What every seamline benchmark measures the same way, written once.

``seamline bench attention`` (:mod:`seamline.adapters.bench_attention`) and the
checkout's ``benchmarks/`` package both record the machine, sample the load, repeat,
summarise and write JSON; they do it with these modules, one job each:

* :mod:`.memory` -- a process's own peak resident set size;
* :mod:`.protocol` -- a child process's private channel to its driver;
* :mod:`.host` -- the machine, the interpreter and the versions a run measured on;
* :mod:`.load` -- the load average through a run, and what it means for the numbers;
* :mod:`.repeats` -- interleaved repeats of several sides, and their spread;
* :mod:`.output` -- the JSON a run leaves behind;
* :mod:`.progress` -- where progress goes (stderr: stdout is the report's).

They import only the standard library (and :mod:`seamline.contracts.versions`, which
does the same), because the reference side of a benchmark runs in ``.venv-golden``
(torch, sentence-transformers, no seamline) and uses them from the checkout's sources.
``tests/benchmarks/test_package.py`` holds them to that.
"""
