"""``text-files``: one document per file under a directory.

The order is the sorted POSIX path of each file relative to ``root``, so it is the
same on every machine and every run whatever order the file system lists
directories in; that relative path is both the document id and the resume cursor.
A file that cannot be read or decoded becomes a :class:`DocumentError` so one bad
file is reported and set aside instead of ending the run; a ``root`` that does not
exist is the user's mistake and is raised as a :class:`UserError`.

Only regular files under ``root`` are documents. A match that is a FIFO, a socket or
a device (itself, or through a symbolic link) is set aside without reading a byte:
it is opened non-blocking and checked on the open descriptor, so a pipe cannot hang
the run and ``/dev/zero`` cannot fill memory. A symbolic link whose target lies
outside ``root`` is set aside too, so a planted link cannot pull another file of
the machine into the output. No file in a folder linked under ``root`` is read: such a
link is named in an error record of its own, as is each file reached through one. A
file larger than ``max_bytes`` is set aside after reading at most ``max_bytes + 1``
bytes of it.

Ids, cursors and the ``path`` metadata are the names' bytes read as UTF-8, whatever
the locale (:func:`~seamline.contracts.json_safe.name_text`): under an ISO-8859-1
locale ``türkçe.txt`` was another id, and a sync replaced every such file. A file name
that is not valid UTF-8 (Python holds its odd bytes as lone surrogates) gets an id with
each such byte written as its escape text (``\udcff``), so that every output can hold
it; the cursor keeps the lone surrogates.
"""

from __future__ import annotations

import codecs
import errno
import fnmatch
import os
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Annotated, Any, ClassVar

from pydantic import Field, field_validator

from seamline.components.loaders import _count
from seamline.components.loaders._blank import blank_reason, is_blank, skip_empty_field
from seamline.components.loaders._listing import absent, refuse_unlistable
from seamline.contracts import (
    ComponentConfig,
    Document,
    DocumentError,
    Loaded,
    Loader,
    NamedPath,
    Shard,
    UserError,
)
from seamline.contracts.json_safe import name_text, safe_text
from seamline.contracts.loader import InputGlobUnder, input_glob_under, refuse_repeated_globstar
from seamline.contracts.untrusted import (
    NotRegularFile,
    open_regular,
    opened_path,
    read_at_most,
    undecodable_offset,
)

if TYPE_CHECKING:
    from collections.abc import Iterator

_WHOLE = Shard()
"""The default shard: all of the input."""

DEFAULT_MAX_BYTES = 10 * 1024 * 1024
"""10 MiB: far above any text a model reads whole, far below a machine's memory."""


class TextFilesConfig(ComponentConfig):
    """The ``with:`` block of the ``text-files`` loader."""

    root: NamedPath = Field(
        description="Directory to read; relative paths are relative to the working directory."
    )
    glob: Annotated[str, InputGlobUnder("root")] = Field(
        default="**/*.txt",
        description=(
            "Pattern, relative to root, of the files to read ('**' matches any number of "
            "directories). Directories that match are skipped."
        ),
    )
    encoding: str = Field(
        default="utf-8",
        description="Text encoding of the files; a file that does not decode becomes an error "
        "record. Use 'utf-8-sig' to drop a byte-order mark. With 'utf-16' a file without a "
        "UTF-16 byte-order mark, and with any UTF-16 encoding a file that reads as UTF-8, "
        "becomes an error record too: as UTF-16 it would decode, garbled.",
    )
    max_bytes: int | None = Field(
        default=DEFAULT_MAX_BYTES,
        description="Largest file to read, in bytes (default 10 MiB); a larger file becomes "
        "an error record and is never read further than the limit, so one enormous file "
        "cannot exhaust memory. Null means no limit.",
    )
    skip_empty: bool = skip_empty_field("files")

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
        refuse_repeated_globstar(value)
        return value

    @field_validator("encoding")
    @classmethod
    def _known_encoding(cls, value: str) -> str:
        try:
            codec = codecs.lookup(value)
        except LookupError:
            raise ValueError(
                f"unknown encoding {value!r}; use a Python codec name such as 'utf-8' or 'latin-1'"
            ) from None
        # rot13, bz2_codec, base64_codec...: codecs Python knows that do not turn bytes into
        # text (bytes.decode refuses them), which a run would find only at its first file.
        if not getattr(codec, "_is_text_encoding", True):
            raise ValueError(
                f"encoding {value!r} is a Python codec but not a text encoding (it does not "
                "decode bytes to text); use a text encoding such as 'utf-8' or 'latin-1'"
            )
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
    contract_version: ClassVar[str] = "1.3"  # 1.1: size; 1.2: position; 1.3: InputGlobUnder
    Config = TextFilesConfig

    def __init__(self, config: TextFilesConfig) -> None:
        super().__init__(config)
        self._root = _resolved(config.root)
        """``root`` with every link resolved: where a file must lie to be read."""

    def read(self, *, shard: Shard = _WHOLE, after: str | None = None) -> Iterator[Loaded]:
        files = self._list_files()
        self._root = _resolved(self.config.root)
        names = {relative for relative, _ in files}
        start = 0
        if after is not None:
            start = self._position_after(files, after)
        for position in range(start, len(files)):
            if shard.owns(position):
                relative, path = files[position]
                doc_id = safe_text(relative)
                if doc_id != relative and doc_id in names:
                    item: Document | DocumentError = DocumentError(
                        id=doc_id,
                        reason=f"duplicate id: the file name is not valid UTF-8, and its "
                        f"escaped form {doc_id!r} is the name of another file; rename one",
                        metadata={"path": safe_text(name_text(path.absolute()))},
                    )
                else:
                    item = self._load(doc_id, path)
                yield Loaded(cursor=relative, item=item)

    def size(self, *, shard: Shard = _WHOLE) -> int | None:
        """The number of matching files the shard owns (loader contract 1.1), by listing
        names only; None past :data:`~._count.LIMIT` files or :data:`~._count.SECONDS`
        of listing, or when ``root`` is not a directory (``read`` says why)."""
        if not self.config.root.is_dir():
            return None
        found = _count.bounded(self._matches())
        if found is None:
            return None
        return _count.owned(len({relative for relative, _ in found}), shard)

    def position(self, after: str, *, shard: Shard = _WHOLE) -> int | None:
        """The items :meth:`read` yields up to and including the file ``after``, from the
        listing of names alone; None when no listed file is ``after`` (``read`` says why)."""
        files = self._list_files()
        for position, (relative, _) in enumerate(files):
            if relative == after:
                if position < shard.index:  # round robin: the shard's items up to here
                    return 0
                return (position - shard.index) // shard.count + 1
        return None

    def _list_files(self) -> list[tuple[str, Path]]:
        """All matching files as ``(relative POSIX path, path)``, in the stable order."""
        root = self.config.root
        if not root.is_dir():
            what = "is not a directory" if root.exists() else absent(root)
            raise UserError(
                f"text-files loader: root {str(root)!r} {what} (looked in {root.absolute()}); "
                "set 'root' in the loader's 'with:' block to the directory holding your files"
            )
        refuse_unlistable(root, PurePosixPath(self.config.glob).parts, "text-files", hidden=True)
        files = sorted(dict(self._matches()).items())
        if not files:
            # As the parquet loader does: an empty run would publish an empty output over
            # the last one (a sync would delete every row), so a pattern that finds
            # nothing is the user's mistake, said before anything is written.
            raise UserError(
                f"text-files loader: glob {self.config.glob!r} matches no file under root "
                f"{str(root)!r} (looked in {root.absolute()}); nothing was written. Set 'glob' "
                "or 'root' in the loader's 'with:' block to where your files are"
            )
        return files

    def _matches(self) -> Iterator[tuple[str, Path]]:
        """Each match that is not a directory, as ``(relative POSIX path, path)``, as listed.

        Directories (and links to them) are not documents and are skipped. Everything
        else is kept, so that what cannot be a document (a broken link, a pipe) is
        reported, not silently dropped: _load checks what it is.
        """
        root = self.config.root
        for path in input_glob_under(root, self.config.glob):
            yield name_text(path.relative_to(root).as_posix()), path
        yield from self._linked_folders()

    def _linked_folders(self) -> Iterator[tuple[str, Path]]:
        """Each symbolic link to a folder that the pattern's ``**`` walks past, as a match.

        ``**`` does not follow such links (while a ``*`` part does), so the files in them
        were left out without a word; each one is listed instead, and :meth:`_load` sets
        it aside saying why. Only folders under the part of the pattern before its first
        ``**`` are ones the pattern would have walked into.
        """
        parts = PurePosixPath(self.config.glob).parts
        if "**" not in parts:
            return
        prefix = parts[: parts.index("**")]
        root = self.config.root
        for folder, names, _ in os.walk(root):
            here = Path(folder)
            for name in names:
                path = here / name
                relative = path.relative_to(root)
                if (
                    path.is_symlink()
                    and len(relative.parts) > len(prefix)
                    and all(map(fnmatch.fnmatchcase, relative.parts[: len(prefix)], prefix))
                ):
                    yield name_text(relative.as_posix()), path

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

    def _load(self, doc_id: str, path: Path) -> Document | DocumentError:
        absolute = safe_text(name_text(path.absolute()))
        where = {"path": absolute}

        def error(reason: str, **more: Any) -> DocumentError:
            return DocumentError(id=doc_id, reason=reason, metadata={**where, **more})

        linked = self._linked_folder_on(path)
        if linked is not None:
            return error(linked)
        outside = self._outside_root(path)
        if outside is not None:
            return error(outside)
        limit = self.config.max_bytes
        try:
            with open_regular(path) as handle:
                # Checked again on what was opened: the path may have been swapped for a
                # link to a file outside root since it was resolved above.
                outside = self._outside_root(path, opened_path(handle))
                if outside is not None:
                    return error(outside)
                data = handle.read() if limit is None else read_at_most(handle, limit)
        except OSError as err:
            return error(f"cannot read: {err.strerror or err}{_read_fix(err)}")
        except NotRegularFile as err:
            return error(f"not a regular file ({err}); only regular files are documents")
        if limit is not None and len(data) > limit:
            return error(f"larger than max_bytes={limit} (raise max_bytes to read it)")
        if (not_utf16 := _not_utf16(data, self.config.encoding)) is not None:
            return error(not_utf16, bytes=len(data))
        try:
            text = data.decode(self.config.encoding)
        except UnicodeDecodeError as err:
            at = undecodable_offset(data, err)
            reason = (
                f"not valid {self.config.encoding}: {err.reason} "
                f"at byte offset {at} (byte {data[at : at + 1]!r}); " + _encoding_hint(data)
            )
            return error(reason, bytes=len(data))
        if "\x00" in text and (codec := _utf16_without_mark(data)) is not None:
            # It decodes (NUL is a character), but as every other character: the text
            # embeds almost as the right one and shows as "T\x00h\x00e\x00" in every hit.
            return error(
                f"every other byte is 0: this looks like {codec.upper()} text without a "
                f"byte-order mark, not {self.config.encoding}; set the loader's encoding: "
                f"{codec} (or convert the files to UTF-8: iconv -f {codec.upper()} -t UTF-8)",
                bytes=len(data),
            )
        if self.config.skip_empty and is_blank(text):
            return DocumentError(
                id=doc_id,
                reason=blank_reason(text),
                metadata={**where, "bytes": len(data)},
                stage="skip",
            )
        return Document(id=doc_id, text=text, metadata={**where, "bytes": len(data)})

    def _linked_folder_on(self, path: Path) -> str | None:
        """Why ``path`` is not read if it is, or is reached through, a link to a folder.

        Files in a folder linked under ``root`` are not documents: ``**`` does not walk
        into such a folder, and one that leads inside ``root`` would give its files twice,
        under two ids. So the link (or each file a ``*`` part reaches through it) is set
        aside, named, whatever the pattern.
        """
        root = self.config.root
        relative = path.relative_to(root)
        for depth in range(1, len(relative.parts) + 1):
            step = root.joinpath(*relative.parts[:depth])
            if step.is_symlink() and step.is_dir():
                shown = PurePosixPath(*relative.parts[:depth]).as_posix()
                return (
                    f"{'a symbolic link' if step == path else 'reached through the link'} "
                    f"{safe_text(name_text(shown))!r} to a folder, which is not followed: no "
                    "file in a linked folder is read. Move or copy the files under root, or "
                    "point root at the folder the link leads to"
                )
        return None

    def _outside_root(self, path: Path, opened: Path | None = None) -> str | None:
        """Why ``path`` is not read if a symbolic link takes it outside ``root``; else None.

        ``opened``: where the file opened at ``path`` really is, when the system can say.
        """
        try:
            target = opened if opened is not None else path.resolve()
            inside = target.is_relative_to(self._root)
        except (OSError, RuntimeError):  # a link loop: opening it reports that
            return None
        if inside:
            return None
        return (
            f"a symbolic link that leads outside root (to {safe_text(name_text(target))!r}); only "
            "files under root are read: copy the file under root, or move root up"
        )


def _resolved(root: Path) -> Path:
    """``root`` with every link resolved, or as written where it cannot be: a link loop
    raised ``RuntimeError`` from the loader's constructor, a failure of the run advising
    ``--resume``. :meth:`TextFilesLoader._list_files` refuses such a root, naming it."""
    try:
        return root.resolve()
    except (OSError, RuntimeError):
        return root.absolute()


def _read_fix(err: OSError) -> str:
    """What to do about a file that could not be opened: the system's words name no fix."""
    if err.errno in (errno.EACCES, errno.EPERM):
        return "; make it readable by the user running seamline, or leave it out of the glob"
    return ""


def _encoding_hint(data: bytes) -> str:
    """What to set when a file does not decode: the decode error alone names no fix."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return (
            "it begins with a UTF-16 byte-order mark: convert it to UTF-8 (iconv -f UTF-16 "
            "-t UTF-8), or, if every file the glob matches is UTF-16, set the loader's "
            "encoding: utf-16"
        )
    if (codec := _utf16_without_mark(data)) is not None:
        return (
            f"every other byte is 0, as in {codec.upper()} text without a byte-order mark: "
            f"set the loader's encoding: {codec}"
        )
    return "if the files are in another encoding, set the loader's encoding (such as latin-1)"


_UTF16 = frozenset({"utf-16", "utf-16-le", "utf-16-be"})


def _not_utf16(data: bytes, encoding: str) -> str | None:
    """Why ``data`` is not read with ``encoding`` when that is UTF-16 and ``data`` plainly
    is not; None otherwise.

    Any even number of bytes decodes as UTF-16: with ``encoding: utf-16`` (the hint for
    one file with a byte-order mark) every UTF-8 file of the folder was embedded as
    CJK-looking garbage ('hello world!' as '敨汬...'), exit 0. ``utf-16`` needs
    the mark to know the byte order; ``utf-16-le`` and ``-be`` text has a 0 byte in
    every character below U+0100 (spaces, line ends), which UTF-8 text never has.
    """
    codec = codecs.lookup(encoding).name
    if codec not in _UTF16 or not data:
        return None
    try:
        data.decode("utf-8")
        utf8 = b"\x00" not in data
    except UnicodeDecodeError:
        utf8 = False
    convert = (
        f"it reads as UTF-8: convert it (iconv -f UTF-8 -t {codec.upper()}), or keep the "
        "UTF-8 files out of this loader's glob"
    )
    if codec != "utf-16":
        return f"not {codec} text: no byte is 0 and {convert}" if utf8 else None
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return None
    missing = "no UTF-16 byte-order mark, which encoding utf-16 needs to know the byte order"
    if utf8:
        return f"{missing}; {convert}"
    if (order := _utf16_without_mark(data)) is not None:
        return f"{missing}; every other byte is 0, as in {order.upper()}: set the encoding: {order}"
    return f"{missing}; convert the file to UTF-8, or set the encoding it is in"


def _utf16_without_mark(data: bytes) -> str | None:
    """``utf-16-le`` or ``utf-16-be`` if ``data`` looks like UTF-16 text with no byte-order
    mark, else None: nine in ten of the bytes at odd (little-endian) or even (big-endian)
    places are 0, as they are where most characters are below U+0100, and no text in an
    8-bit encoding has that many NULs."""
    pairs = len(data) // 2
    if pairs < 2:
        return None
    if data[1::2].count(0) >= 0.9 * pairs and data[0::2].count(0) < 0.5 * pairs:
        return "utf-16-le"
    if data[0::2].count(0) >= 0.9 * pairs and data[1::2].count(0) < 0.5 * pairs:
        return "utf-16-be"
    return None
