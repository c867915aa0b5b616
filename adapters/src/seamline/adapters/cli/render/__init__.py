"""Everything the ``seamline`` command prints, in one place.

The commands decide and core computes; these modules only show the typed values
they return. How output looks is decided here once: the consoles (:mod:`.console`,
made per invocation so that each sees its own terminal and ``COLUMNS``), how text
that seamline did not write is shown, and each command's lines and tables. A new
form of output (JSON for a pipe, no wrapping off a terminal) is a change here, not
in every command.

========================  ==================================================================
module                    renders
========================  ==================================================================
:mod:`.console`           the consoles, tables, error lines, raw text for pipes
:mod:`.pipeline`          ``validate``; provenance and untrusted components (several commands)
:mod:`.run`               the summaries of ``run`` and ``profile``
:mod:`.plan`              ``explain`` (the verdicts are core's) and ``tune``
:mod:`.listing`           ``components``, ``search``, ``trace summarize``
:mod:`.as_json`           ``components`` and ``search`` with ``--format json``
:mod:`.pipeline_json`     ``validate`` and ``explain`` with ``--format json``
:mod:`.conformance`       ``check``'s report
:mod:`.progress`          the progress bar of ``run`` on a terminal
========================  ==================================================================

Only :mod:`.console` is imported when the command starts; the others import rich's
tables and are imported by a command when it prints (``--help`` stays fast).
"""
