"""The ``seamline`` command: a thin edge over :mod:`seamline.core`'s public face.

========================  ==================================================================
module                    its one job
========================  ==================================================================
:mod:`.main`              the typer app and the registration of every command
:mod:`.commands`          one module per command: options in, a call into core, the result
                          handed to :mod:`.render`
:mod:`.render`            everything the command prints, in one place
:mod:`.errors`            which failure is which exit code (2: the user's, 1: a component's
                          or the machine's, 130: interrupted, 143: stopped by SIGTERM)
:mod:`.stopping`          SIGTERM taken as Ctrl-C while ``seamline run`` works
:mod:`.pipes`             a reader that closes stdout early: exit 141, quietly
:mod:`.loading`           the registry and the pipeline a command works on
:mod:`.options`           the arguments several commands share
:mod:`.check`             running the conformance suite for ``seamline check``
========================  ==================================================================
"""

import time

STARTED = time.perf_counter()
"""When the command's package was imported: its start, give or take Python's own."""
