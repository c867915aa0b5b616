"""A checkpoint's small files, each read once and remembered by the digest of what was read.

Besides its weights, an encoder reads a checkpoint's configuration and tokenizer files
(``config.json``, ``tokenizer.json``, ``modules.json``, the pooling configuration...)
when it is built, and each of them changes what a text embeds to: an edited
``tokenizer.json`` cuts texts into other tokens, an edited pooling file pools them
otherwise. So a run pins them beside the weights (model contract 1.4): the ledger's
:meth:`~FileLedger.digest` — every file looked for, named relative to the checkpoint,
with the SHA-256 of the bytes read or ``absent`` — goes into ``files_sha256``, and an
encoder built later from the pinned configuration (a worker, a resume, a search of the
index) compares its own ledger with it.

The bytes digested are the bytes used: the JSON files are parsed from them and the
tokenizer is built from them, so nothing can change between the check and the use.
Each file is opened as untrusted input (a FIFO or a device in its place is refused, not
waited on) and read with a bound, and only from the checkpoint's own folder: a file
that is a symbolic link out of it (``1_Pooling/config.json`` linked to a file elsewhere)
is refused, as a module folder that leads out is (:func:`checkpoint_folder`).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from seamline.contracts import WeightsError
from seamline.contracts.untrusted import (
    NotRegularFile,
    cut,
    open_regular,
    opened_path,
    read_at_most,
)

FILE_LIMIT = 256 << 20
"""Bytes a configuration or tokenizer file may have (large multilingual tokenizers are
tens of megabytes)."""

ABSENT = "absent"
"""A file looked for and not there: its absence is part of the digest (an optional file
that appears later changes what the encoder does)."""


@dataclass
class FileLedger:
    """The small files read from one checkpoint, in the order they were read."""

    root: Path
    entries: list[tuple[str, str]] = field(default_factory=list)
    """``(name relative to root, hex SHA-256 or ABSENT)`` for each file looked for."""
    folder: Path = field(init=False)
    """Where every file read must really lie (:func:`checkpoint_folder`)."""

    def __post_init__(self) -> None:
        self.folder = checkpoint_folder(self.root)

    def read(self, path: Path) -> bytes | None:
        """The bytes of the file at ``path``, or None when there is none; recorded either way."""
        name = self._name(path)
        try:
            with open_regular(path) as handle:  # checked where it was opened: no race
                self.check_inside(path, opened_path(handle))
                data = read_at_most(handle, FILE_LIMIT)
        except (FileNotFoundError, NotADirectoryError):
            self.entries.append((name, ABSENT))
            return None
        except NotRegularFile as err:
            raise WeightsError(f"{path} is {err}; restore the checkpoint's file there") from err
        except OSError as err:
            raise WeightsError(f"{path} could not be read ({err}); restore the file") from err
        if len(data) > FILE_LIMIT:
            raise WeightsError(
                f"{path} is larger than {FILE_LIMIT >> 20} MiB, more than any checkpoint's "
                "configuration or tokenizer file; restore the checkpoint's file"
            )
        self.entries.append((name, hashlib.sha256(data).hexdigest()))
        return data

    def digest(self) -> str:
        """One hex SHA-256 for every file looked for: its name, and its bytes' digest or absence."""
        listing = "".join(f"{name}\t{digest}\n" for name, digest in self.entries)
        return hashlib.sha256(listing.encode("utf-8")).hexdigest()

    def check_inside(self, path: Path, real: Path | None = None) -> None:
        """Refuse ``path`` if it really is (``real``, else its links followed) outside
        the checkpoint's folder: a link out would have the encoder use another file
        (another model's pooling, a tokenizer anyone may edit) under this checkpoint's name."""
        real = real if real is not None else path.resolve()
        if not real.is_relative_to(self.folder):
            raise WeightsError(
                f"{path} leads through a symbolic link to {cut(str(real), 120)}, outside the "
                f"checkpoint's folder {self.folder}; a checkpoint's files are read from its own "
                "folder only: put the file itself there in place of the link"
            )

    def _name(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()


def checkpoint_folder(root: Path) -> Path:
    """The folder a checkpoint's files must really lie in: ``root``, its own links followed.

    A file may be a link to another file inside it. For a snapshot of the Hugging Face
    cache (``models--<org>--<name>/snapshots/<revision>/``), whose every file is a link
    into the model's ``blobs/``, it is the model's cache folder ``models--<org>--<name>``.
    """
    real = root.resolve()
    if real.parent.name == "snapshots" and real.parent.parent.name.startswith("models--"):
        return real.parent.parent
    return real


def verify_files(root: Path, actual: str, expected: str) -> None:
    """Refuse a checkpoint whose configuration and tokenizer files are not the pinned ones."""
    if actual != expected.lower():
        raise WeightsError(
            f"the configuration and tokenizer files of {root} (config.json, tokenizer.json, "
            f"modules.json, ...) have files_sha256 {actual}, not the {expected.lower()} that "
            "'files_sha256' pins (set in the pipeline, or recorded in an index's manifest by "
            "the run that made it): one of them was edited or belongs to another model. "
            "Restore the files it pins; or, to use these, update 'files_sha256' in the "
            "pipeline and run it again (an index made with other files is made anew)"
        )
