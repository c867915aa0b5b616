"""One module per ``seamline`` command (``trace`` and ``bench`` are groups of their own).

A command reads its options, calls :mod:`seamline.core`'s public face (or an adapter),
and hands what comes back to :mod:`seamline.adapters.cli.render`; which failure is
which exit code is :mod:`seamline.adapters.cli.errors`'. Each imports only typer and
the light corners of seamline at the top, and the rest when it runs, so that
``seamline --help`` (which imports every command to list them) does not import JAX.
"""
