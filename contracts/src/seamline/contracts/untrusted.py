"""Opening files that seamline did not just write: regular files only, without blocking,
read with a bound, and only inside the folder they belong to.

A loader's documents, an output's manifest and the records it names: whoever can write
those folders can put a FIFO in place of a file (opening it for reading waits for a
writer, forever), a device (``/dev/zero`` never ends), a symbolic link to a file
elsewhere, or a name that climbs out of the folder (``../../home/me/.ssh/id_rsa``).
Every such file is opened through here, so that each of those is refused in one place:

- :func:`open_regular` opens non-blocking (a FIFO returns at once instead of waiting)
  and checks the *open descriptor* (``fstat``), so that what is read is what was checked;
- :func:`read_regular` reads at most one byte past a limit, so a huge file, or one that
  grows while it is read, costs no more memory than the limit; :func:`read_at_most`
  does so on an open stream, and a small file costs memory for what it holds, not for
  the limit;
- :func:`bounded_lines` reads lines of at most a limit each (a file without newlines is
  one line);
- :func:`within` resolves a name a file gave against the folder it must stay in, and
  :func:`opened_path` says where an open file really is, for a check that cannot be
  raced; :func:`planted_entry` finds a link or a FIFO anywhere in a folder a library
  will open whole;
- :func:`visible` makes text read from such a file safe to print on a terminal;
- :func:`is_count` says whether a number read from one can be given to ``int()``.

The errors are plain exceptions that say what happened; the caller knows which file
it was and what the user can do, and says so (a loader sets the document aside, a
reader of an output raises a ``UserError``).
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
import unicodedata
from collections.abc import Iterator
from pathlib import Path, PurePath
from typing import Any, BinaryIO

FILE_KINDS = {
    stat.S_IFREG: "a regular file",
    stat.S_IFDIR: "a directory",
    stat.S_IFIFO: "a FIFO (named pipe)",
    stat.S_IFSOCK: "a socket",
    stat.S_IFCHR: "a character device",
    stat.S_IFBLK: "a block device",
    stat.S_IFLNK: "a symbolic link",
}
"""What a file is, in words (for a message saying it is not what was expected)."""


class NotRegularFile(Exception):
    """The path opened is not a regular file; the message says what it is."""


def kind_of(mode: int) -> str:
    """What a file of ``mode`` (``st_mode``) is, in words: ``a FIFO (named pipe)``, ..."""
    return FILE_KINDS.get(stat.S_IFMT(mode), "not a file")


class LineTooLong(Exception):
    """A line is longer than the limit; ``number`` is its line number (1-based)."""

    def __init__(self, number: int, limit: int) -> None:
        self.number = number
        self.limit = limit
        super().__init__(f"line {number} is longer than {limit:,} bytes")


class OutsideFolder(Exception):
    """A name leads outside the folder it must stay in; the message says how."""


def open_regular(path: str | os.PathLike[str], *, follow: bool = True) -> BinaryIO:
    """``path`` opened for reading in binary, if it is a regular file; else ``NotRegularFile``.

    Opened non-blocking, so that opening a FIFO returns at once instead of waiting for a
    writer, and checked on the open descriptor, so that what is read is what was checked.
    ``follow=False`` refuses a symbolic link at ``path`` itself (``NotRegularFile``).
    """
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow:
        flags |= getattr(os, "O_NOFOLLOW", 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        if not follow and os.path.islink(path):
            raise NotRegularFile(FILE_KINDS[stat.S_IFLNK]) from None
        _refuse_irregular(path, follow=follow)
        raise
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise NotRegularFile(kind_of(mode))
        # Reads of a regular file never block; clear the flag so that nothing downstream
        # (a library given this handle) meets EAGAIN semantics it does not expect.
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _refuse_irregular(path: str | os.PathLike[str], *, follow: bool) -> None:
    """``NotRegularFile`` if ``path``, which could not be opened, is no regular file.

    A socket cannot be opened at all (ENXIO): it was set aside as "cannot read: No such
    device or address", not as what it is, a socket, which is not a regular file.
    """
    try:
        mode = os.stat(path, follow_symlinks=follow).st_mode
    except OSError:
        return
    if not stat.S_ISREG(mode):
        raise NotRegularFile(kind_of(mode)) from None


def read_regular(path: str | os.PathLike[str], limit: int | None, *, follow: bool = True) -> bytes:
    """At most ``limit + 1`` bytes of the regular file at ``path`` (all of it when no limit).

    One byte past the limit, so that the caller can tell a file over it from one exactly
    at it, and a huge file costs no more memory than the limit even when it grows after
    it was listed.
    """
    with open_regular(path, follow=follow) as handle:
        return handle.read() if limit is None else read_at_most(handle, limit)


READ_CHUNK = 1 << 20
"""What :func:`read_at_most` asks for at a time where the size is not known (a pipe)."""


def read_at_most(stream: BinaryIO, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of ``stream``, in memory for what it holds, not for the limit.

    ``stream.read(limit + 1)`` allocates ``limit + 1`` bytes before it reads one (CPython
    sizes its buffer to the request): a checkpoint's 20-byte ``config.json``, read under
    a 256 MiB limit, failed with ``MemoryError`` under a memory limit (``ulimit -v``).
    A regular file is asked for its size plus one (a file that grew since is read on a
    MiB at a time, up to the limit); a stream of no known size (a pipe) a MiB at a time.
    """
    wanted = limit + 1
    try:
        size = os.fstat(stream.fileno()).st_size  # 0 for a pipe
    except (OSError, ValueError, AttributeError):  # no descriptor (an in-memory stream)
        size = 0
    step = size + 1 if size else READ_CHUNK
    blocks: list[bytes] = []
    got = 0
    while got < wanted:
        block = stream.read(min(step, wanted - got))
        if not block:
            break
        blocks.append(block)
        got += len(block)
        step = READ_CHUNK
    return b"".join(blocks)


def opened_path(handle: BinaryIO) -> Path | None:
    """Where the file open as ``handle`` really is (its links followed), or None if this
    system cannot say (Linux reads ``/proc/self/fd``, macOS asks ``F_GETPATH``).

    A path checked and then opened can be swapped in between (a file exchanged for a link
    to ``/etc/passwd``, a folder on the way for a link elsewhere); the descriptor's own
    path is what was opened, so a check of it cannot be raced.
    """
    descriptor = handle.fileno()
    proc = Path(f"/proc/self/fd/{descriptor}")
    try:
        if proc.parent.is_dir():
            return Path(os.readlink(proc))
        get_path = getattr(fcntl, "F_GETPATH", None)
        if get_path is not None:
            raw = fcntl.fcntl(descriptor, get_path, b"\0" * 1024)
            return Path(os.fsdecode(raw.rstrip(b"\0")))
    except OSError:
        return None
    return None


def bounded_lines(handle: BinaryIO, limit: int) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` for each non-blank line of ``handle``; ``LineTooLong`` past
    ``limit`` bytes (the newline not counted), so a file without newlines is read no further."""
    number = 0
    while True:
        line = handle.readline(limit + 2)
        if not line:
            return
        number += 1
        body = line[:-1] if line.endswith(b"\n") else line
        if len(body) > limit:
            raise LineTooLong(number, limit)
        if body.strip():
            yield number, body


class TooManyEntries(Exception):
    """A folder holds more entries than the limit it was walked with."""


def planted_entry(folder: Path, limit: int) -> tuple[str, int] | None:
    """The first entry under ``folder`` (at any depth, links not followed) that is neither
    a regular file nor a folder, with its ``st_mode``; None if there is none.

    For a folder a library opens whole (a LanceDB table): it follows whatever names are
    in it, so a symbolic link inside leads it elsewhere and a FIFO blocks it. Past
    ``limit`` entries, ``TooManyEntries``: the walk itself is bounded.
    """
    seen = 0
    for parent, folders, files in os.walk(folder):
        for name in [*folders, *files]:
            inner = os.path.join(parent, name)
            mode = os.lstat(inner).st_mode
            if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
                return inner, mode
        seen += len(folders) + len(files)
        if seen > limit:
            raise TooManyEntries(f"more than {limit:,} entries")
    return None


def within(folder: Path, name: str) -> Path:
    """The real path of ``name`` (relative to ``folder``, or absolute) if it lies in ``folder``.

    Refused (``OutsideFolder``): an empty name or one with a NUL; a name with a ``..``
    part, wherever it would lead; an absolute path, or one that a symbolic link on the way
    turns into a path, outside ``folder`` (after ``folder``'s own links are followed: a
    user's output folder may itself be a link). The file need not exist: a missing file
    is reported by whoever opens it, where it is known what it was for.
    """
    if not name or "\0" in name:
        raise OutsideFolder("is not a file name")
    pure = PurePath(name)
    if ".." in pure.parts:
        raise OutsideFolder("climbs out of its folder ('..')")
    try:
        base = folder.resolve(strict=True)
        real = (folder / pure).resolve()
    except (OSError, RuntimeError) as err:  # RuntimeError: a symbolic link loop
        raise OutsideFolder(f"cannot be resolved ({err})") from None
    if not real.is_relative_to(base):
        how = "is a path" if pure.is_absolute() else "leads through a symbolic link"
        raise OutsideFolder(f"{how} outside {base}")
    return real


def count_lines(path: str | os.PathLike[str]) -> int:
    """The newlines of the regular file at ``path`` (never through a link at it, never a
    FIFO waited on), read a MiB at a time: the records of a file of lines, in bounded
    memory. ``OSError`` or ``NotRegularFile`` when it cannot be read."""
    count = 0
    with open_regular(path, follow=False) as stream:
        while block := stream.read(1 << 20):
            count += block.count(b"\n")
    return count


def undecodable_offset(data: bytes, err: UnicodeDecodeError) -> int:
    """Where in ``data`` the byte ``err`` complains of is.

    A codec that drops a byte-order mark first (``utf-8-sig``) counts ``err.start`` in
    what follows the mark, so an error naming ``err.start`` of the file itself names the
    wrong byte (and, near a line's end, the wrong line): the codec's input is a tail of
    ``data``, and the difference in lengths is what it skipped.
    """
    return err.start + max(0, len(data) - len(err.object))


def strict_json(data: str | bytes, *, unique_keys: bool = False) -> Any:
    """``data`` parsed as strict JSON: ``NaN`` and ``Infinity`` (which Python's ``json``
    accepts) are refused. Raises ``ValueError`` (a ``JSONDecodeError`` with its place, or
    a ``UnicodeDecodeError``) or ``RecursionError`` (arrays nested thousands deep).

    ``unique_keys``: a key twice in one object is refused too. Python keeps the last, so
    what a file says would depend on the reader's parser: a tampered manifest or cache
    entry could show one value to a reviewer's tool and another to seamline. Off for
    records read by the million (a search index's lines), where it costs parse time.
    """
    if unique_keys:
        return json.loads(data, parse_constant=_no_constant, object_pairs_hook=_unique)
    return json.loads(data, parse_constant=_no_constant)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON value")


def _unique(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name, value in pairs:
        if name in found:
            raise ValueError(f"key {cut(name, 60)!r} appears twice in an object")
        found[name] = value
    return found


MAX_COUNT_DIGITS = 20
"""The most digits :func:`is_count` accepts: any 64-bit count has fewer."""


def is_count(text: str, digits: int = MAX_COUNT_DIGITS) -> bool:
    """Whether ``text`` is a non-negative integer in at most ``digits`` ASCII digits.

    ``str.isdigit`` accepts ``'²'`` and other digits that ``int()`` refuses (a
    ``ValueError``), and any length (``int()`` refuses past 4,300 digits); a number read
    from a file anyone can edit (a cursor, a pid) is checked with this before ``int()``.
    """
    return 0 < len(text) <= digits and text.isascii() and text.isdigit()


def cut(text: str, limit: int = 200) -> str:
    """``text`` for a message: whole, or its first ``limit`` characters and how long it was.

    A value read from a file or a command line may be a page long, or a megabyte (a
    4,000-digit number, a type of 50,000 fields); a message repeats it only this far.
    """
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


def a_type(value: object) -> str:
    """``value``'s type with its article, for a message: "an int", "a dict", "an object"."""
    name = type(value).__name__
    return f"{'an' if name[:1].lower() in 'aeio' else 'a'} {name}"


TELEMETRY_TEXT_CHARS = 256
"""How much of a text read from the input (a document id) a span or log line carries."""


def for_telemetry(text: str, limit: int = TELEMETRY_TEXT_CHARS) -> str:
    """``text``, read from the input, as a span attribute or log value carries it: cut.

    A loader takes ids of any length (they are data, and an index keeps them whole), but
    each span and log line repeated them: five ids of a megabyte made a trace batch larger
    than an OTLP receiver takes (4 MiB), and every span of the run was lost with it.
    """
    return cut(text, limit)


def unicode_problem(text: str, what: str = "the text") -> str | None:
    """Why ``text`` is not valid Unicode (it holds a lone surrogate), or None.

    A Python ``str`` may hold one (a byte that was not UTF-8, decoded with
    ``surrogateescape``; half of a surrogate pair from JSON's ``"\\ud800"``), and a
    tokenizer then fails with a message about its own types. ``what`` names the text
    (``the query``, ``texts[2]``).
    """
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as err:
        return (
            f"{what} is not valid Unicode: it holds a lone surrogate {text[err.start]!r} "
            f"at offset {err.start} (a byte that is not UTF-8, or half of a surrogate pair): "
            f"give {what} as UTF-8 text"
        )
    return None


def visible(text: str, keep: str = "") -> str:
    """``text`` with each control character (but those in ``keep``) and each bidirectional
    override shown as "\ufffd".

    Text read from a file anyone can edit (a stored window, an id, a file name in an
    error message) is data: printed as is, an escape sequence in it would drive the
    user's terminal (clear it, retitle it, write the clipboard), and a bidirectional
    override would reorder what is shown. Rich drops some control characters, not ESC.
    """
    return "".join("\ufffd" if _hidden(ch) and ch not in keep else ch for ch in text)


def _hidden(ch: str) -> bool:
    if unicodedata.category(ch) == "Cc":
        return True
    return "\u202a" <= ch <= "\u202e" or "\u2066" <= ch <= "\u2069"


LINE_BREAKS_ESCAPED = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})
"""For ``str.translate`` of JSON text: NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR as JSON
escapes. JSON leaves them as they are, and Python's ``str.splitlines`` (and other line
readers) break a line there: a JSON Lines record holding one read back as two broken
lines. The value parsed is the same."""

SHOWN_JSON_ESCAPED = {
    **LINE_BREAKS_ESCAPED,
    **{code: f"\\u{code:04x}" for code in range(0x7F, 0x206A) if _hidden(chr(code))},
}
"""For ``str.translate`` of JSON text a person's terminal shows: :data:`LINE_BREAKS_ESCAPED`,
and every character :func:`visible` hides that JSON leaves as it is (DEL, the C1 controls
U+0080 to U+009F, such as U+009B, which xterm takes for CSI, and the bidirectional
overrides and isolates) as a JSON escape: still valid JSON, parsed to the same value, and
neither a terminal nor a line reader acts on it. Other text (CJK, accents) stays
readable; JSON escapes the C0 controls itself."""
