"""A run on the ``ray`` executor prints none of the two lines ``ray.init`` caused.

Every run printed JAX's ``RuntimeWarning: os.fork() was called ... will likely lead to a
deadlock`` (Ray starts its processes with a ``preexec_fn``, which forks; the child execs
at once) and Ray's ``Token authentication is enabled for this Ray cluster ...``, where
docs/scaling.md promises none of Ray's own lines. Ray's warning that token
authentication is *disabled* is still shown.

The tests here check the silencing itself; that a real ``seamline run`` which starts Ray
prints neither line is checked on the stderr of both drivers of
``tests/scaling/test_ray_sigterm.py`` (each starts a Ray of its own, the second runs to
the end), so that no third driver starts a Ray only for it.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import warnings

import jax
import pytest

from seamline.adapters.executors._ray_quiet import TOKEN_LOGGER, ray_start_quiet

ENABLED = (
    "Token authentication is enabled for this Ray cluster. Set RAY_AUTH_MODE=disabled to "
    "opt out. For more information, see https://docs.ray.io/en/latest/ray-security/token-auth.html"
)
DISABLED = "Token authentication is disabled for this Ray cluster. Anyone with network access"


def fork_warnings() -> list[str]:
    """The warnings a fork (as Ray starts a process: ``preexec_fn``) gives, JAX loaded."""
    jax.devices()  # JAX's backend up: its at-fork warning is installed
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with ray_start_quiet():
            subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, check=True)
        inside = [str(w.message) for w in caught]
        subprocess.run([sys.executable, "-c", "pass"], preexec_fn=lambda: None, check=True)
    return [*inside, "--", *(str(w.message) for w in caught[len(inside) :])]


def test_jaxs_fork_warning_is_silenced_only_while_ray_starts() -> None:
    shown = fork_warnings()
    cut = shown.index("--")
    assert shown[:cut] == []
    assert any("os.fork() was called" in message for message in shown[cut + 1 :])


def test_rays_token_note_is_silenced_and_its_real_warning_kept(
    caplog: pytest.LogCaptureFixture,
) -> None:
    logger = logging.getLogger(TOKEN_LOGGER)
    with caplog.at_level(logging.WARNING, logger=TOKEN_LOGGER), ray_start_quiet():
        logger.warning(ENABLED)
        logger.warning(DISABLED)
    logger.warning(ENABLED)
    assert [record.getMessage()[:40] for record in caplog.records] == [DISABLED[:40], ENABLED[:40]]
