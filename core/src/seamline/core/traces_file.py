"""What may stand at the jsonl span exporter's file: one answer for ``validate`` and the run.

The exporter (``seamline.adapters.telemetry_setup``) refuses, before the run starts, a
traces file that is a directory, a FIFO, a device or a link, a file with other names
(hard links), another user's file, or a name under a file (``afile/t.jsonl``, ``afile``
a file); but the pipeline's validation did not ask, so ``seamline validate`` said ok to a
pipeline whose run was then refused. Both now ask here: validation before anything runs,
placed where the file is named (:mod:`seamline.core.config.overlap`), and the exporter
again when it opens the file (on the open descriptor, as what is on disk may change in
between).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from seamline.contracts.ownership import describe_user, owned_by_another
from seamline.contracts.sink_kit import blocked_folder
from seamline.contracts.untrusted import kind_of

TRACES_FILE = "telemetry.traces_file or SEAMLINE_TRACES_FILE"
"""Where the traces file is named, for messages."""


def traces_file_problem(path: Path) -> str | None:
    """Why spans can never be written at ``path``, in one sentence, or None (nothing there
    yet, or a regular file of its own)."""
    try:
        found = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):  # not there; or a name under a file
        blocker = blocked_folder(path)
        if blocker:
            return (
                f"the traces file {str(path)!r} ({TRACES_FILE}) cannot be made: {blocker}, "
                "not a folder; name a file under a folder (or remove what is there)"
            )
        return None
    except ValueError:  # a NUL byte: refused where the name is given
        return None
    except OSError as err:
        return traces_file_unusable(path, err)
    return traces_file_status_problem(path, found)


def traces_file_status_problem(path: Path, found: os.stat_result) -> str | None:
    """Why the file ``found`` (its ``lstat``, or ``fstat`` once opened) at ``path`` is no
    traces file, or None: it is not a regular file, it has other names (hard links:
    spans written to it would empty and fill the file behind each of them, a pipeline file
    or an input among them), or it is another user's (one made in advance, 0666, in a
    shared folder had the run's spans appended for its owner to read)."""
    if not stat.S_ISREG(found.st_mode):
        return (
            f"the traces file {str(path)!r} ({TRACES_FILE}) is {kind_of(found.st_mode)}, not "
            "a regular file: name a file for the spans to be written to"
        )
    if found.st_nlink > 1:
        return (
            f"the traces file {str(path)!r} ({TRACES_FILE}) is a file with {found.st_nlink} "
            "names (hard links): writing spans to it would change the file behind its other "
            "names too. Name a file of its own for the spans"
        )
    if owned_by_another(found) is not None:
        return (
            f"the traces file {str(path)!r} ({TRACES_FILE}) belongs to another user, "
            f"{describe_user(found.st_uid)}, who would read every span the run writes (its "
            "documents' ids, the pipeline's settings, errors) and could change them; it was "
            "not written to. Name a file of your own for the spans (in a folder of yours)"
        )
    return None


def traces_file_unusable(path: Path, err: OSError) -> str:
    """Why the traces file at ``path`` cannot be written, from the ``OSError`` that said so."""
    return (
        f"cannot write the traces file {str(path)!r} ({TRACES_FILE}): "
        f"{err.strerror or err}; name a file that can be written"
    )
