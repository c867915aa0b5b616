"""Starting Ray in a driver prints two lines that are not the user's concern: kept quiet.

Every ``seamline run`` on the ``ray`` executor printed, as ``ray.init`` started the
local cluster:

- JAX's ``RuntimeWarning: os.fork() was called. os.fork() is incompatible with
  multithreaded code, and JAX is multithreaded, so this will likely lead to a
  deadlock.`` Ray starts its processes with ``subprocess.Popen(preexec_fn=...)``, which
  forks, and JAX (loaded by then) warns at every fork. The child execs Ray's program
  at once, running no JAX code, so no deadlock can follow.
- Ray's ``Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled
  to opt out.``: Ray telling that it chose its secure default for a cluster this run
  starts and ends itself; nothing to do.

:func:`ray_start_quiet` silences exactly those two, for the length of ``ray.init``.
Ray's warning that token authentication is *disabled* (anyone with network access could
run code on the cluster) is a real one, and still shown.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

FORK_WARNING = r"os\.fork\(\) was called\. os\.fork\(\) is incompatible with multithreaded code"
"""The start of JAX's warning (``jax._src.xla_bridge._at_fork``), as a ``warnings`` filter."""
TOKEN_LOGGER = "ray._private.authentication.authentication_token_setup"
TOKEN_ENABLED = "Token authentication is enabled for this Ray cluster."


class _TokenEnabled(logging.Filter):
    """Drops Ray's note that it enabled token authentication, and nothing else."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(TOKEN_ENABLED)


@contextlib.contextmanager
def ray_start_quiet() -> Iterator[None]:
    """Within the block (``ray.init``), JAX's fork warning and Ray's "token authentication
    is enabled" line are not shown; every other warning and log line is."""
    quiet = _TokenEnabled()
    logger = logging.getLogger(TOKEN_LOGGER)
    logger.addFilter(quiet)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=FORK_WARNING, category=RuntimeWarning)
            yield
    finally:
        logger.removeFilter(quiet)
