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
waited on) and read with a bound.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from seamline.contracts import WeightsError
from seamline.contracts.untrusted import NotRegularFile, read_regular

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

    def read(self, path: Path) -> bytes | None:
        """The bytes of the file at ``path``, or None when there is none; recorded either way."""
        name = self._name(path)
        try:
            data = read_regular(path, FILE_LIMIT)
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

    def _name(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return path.as_posix()


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
