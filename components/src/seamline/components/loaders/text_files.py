"""``text-files``: one document per file under a directory.

The order is the sorted POSIX path of each file relative to ``root``, so it is the
same on every machine and every run whatever order the file system lists
directories in; that relative path is both the document id and the resume cursor.
A file that cannot be read or decoded becomes a :class:`DocumentError` so one bad
file is reported and set aside instead of ending the run; a ``root`` that does not
exist is the user's mistake and is raised as a :class:`UserError`.
"""

from __future__ import annotations

import codecs
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, ClassVar

from pydantic import Field, field_validator

from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    Loaded,
    Loader,
    Shard,
    UserError,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

_WHOLE = Shard()
"""The default shard: all of the input."""


class TextFilesConfig(ComponentConfig):
    """The ``with:`` block of the ``text-files`` loader."""

    root: Path = Field(
        description="Directory to read; relative paths are relative to the working directory."
    )
    glob: str = Field(
        default="**/*.txt",
        description=(
            "Pattern, relative to root, of the files to read ('**' matches any number of "
            "directories). Directories that match are skipped."
        ),
    )
    encoding: str = Field(
        default="utf-8",
        description="Text encoding of the files; a file that does not decode becomes an error "
        "record. Use 'utf-8-sig' to drop a byte-order mark.",
    )
    max_bytes: int | None = Field(
        default=None,
        description="Largest file size to read, in bytes; larger files become error records "
        "instead of being loaded into memory. Null means no limit.",
    )

    @field_validator("glob")
    @classmethod
    def _relative_pattern(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("glob must not be empty; the default is '**/*.txt'")
        pattern = PurePosixPath(value)
        if pattern.is_absolute() or value.startswith("\\"):
            raise ValueError(f"glob {value!r} must be relative to root, e.g. '**/*.md'")
        if ".." in pattern.parts:
            raise ValueError(f"glob {value!r} must not leave root ('..'); move root up instead")
        return value

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        try:
            codecs.lookup(value)
        except LookupError:
            raise ValueError(
                f"unknown encoding {value!r}; use a Python codec name such as 'utf-8' or 'latin-1'"
            ) from None
        return value

    @field_validator("max_bytes")
    @classmethod
    def _positive_limit(cls, value: int | None) -> int | None:
        if value is not None and value < 1:
            raise ValueError(f"max_bytes must be at least 1 (or null for no limit), not {value}")
        return value


class TextFilesLoader(Loader[TextFilesConfig]):
    """Yields every file matching ``glob`` under ``root`` as one document."""

    name: ClassVar[str] = "text-files"
    contract_version: ClassVar[str] = "1.0"
    Config = TextFilesConfig

    def read(self, *, shard: Shard = _WHOLE, after: str | None = None) -> Iterator[Loaded]:
        files = self._list_files()
        start = 0
        if after is not None:
            start = self._position_after(files, after)
        for position in range(start, len(files)):
            if shard.owns(position):
                relative, path = files[position]
                yield Loaded(cursor=relative, item=self._load(relative, path))

    def _list_files(self) -> list[tuple[str, Path]]:
        """All matching files as ``(relative POSIX path, path)``, in the stable order."""
        root = self.config.root
        if not root.is_dir():
            what = "is not a directory" if root.exists() else "does not exist"
            raise UserError(
                f"text-files loader: root {str(root)!r} {what} (looked in {root.absolute()}); "
                "set 'root' in the loader's 'with:' block to the directory holding your files"
            )
        found: dict[str, Path] = {}
        for path in root.glob(self.config.glob):
            # Broken symbolic links are kept so that they are reported, not silently dropped;
            # directories, sockets and pipes are not documents.
            if path.is_dir() or not (path.is_file() or path.is_symlink()):
                continue
            found[path.relative_to(root).as_posix()] = path
        return sorted(found.items())

    def _position_after(self, files: list[tuple[str, Path]], after: str) -> int:
        """Position of the first item after the cursor ``after``."""
        for position, (relative, _) in enumerate(files):
            if relative == after:
                return position + 1
        raise UserError(
            f"text-files loader cannot resume after {after!r}: no file with that path matches "
            f"{self.config.glob!r} under {str(self.config.root)!r} any more. The input changed "
            "since the checkpoint was written; restore the file or start the run afresh."
        )

    def _load(self, relative: str, path: Path) -> Document | DocumentError:
        absolute = str(path.absolute())
        limit = self.config.max_bytes
        try:
            with path.open("rb") as handle:
                # Read at most one byte past the limit, so a huge file costs no more memory
                # than the limit allows even when it grows after it was listed.
                data = handle.read() if limit is None else handle.read(limit + 1)
        except OSError as err:
            reason = f"cannot read: {err.strerror or err}"
            return DocumentError(id=relative, reason=reason, metadata={"path": absolute})
        if limit is not None and len(data) > limit:
            return DocumentError(
                id=relative,
                reason=f"larger than max_bytes={limit} (raise max_bytes to read it)",
                metadata={"path": absolute},
            )
        try:
            text = data.decode(self.config.encoding)
        except UnicodeDecodeError as err:
            reason = (
                f"not valid {self.config.encoding}: {err.reason} "
                f"at byte offset {err.start} (byte {data[err.start : err.start + 1]!r})"
            )
            return DocumentError(
                id=relative, reason=reason, metadata={"path": absolute, "bytes": len(data)}
            )
        return Document(id=relative, text=text, metadata={"path": absolute, "bytes": len(data)})
