"""Where a sink's files are: one spelling for every path, and no two outputs in one file.

A path in a pipeline file is relative to the working directory of the run, and may
be spelled many ways (``out/emb.jsonl``, ``./out/emb.jsonl``, ``out/../out/emb.jsonl``,
``/abs/out/emb.jsonl``, a folder reached through a symbolic link). A sink compares
paths (its checkpoint names files beside a destination; a part's directory is
derived from its output's), and a comparison between two spellings of one file says
"different". So every path a first-party sink's config names is made absolute *once*,
when the config is validated (:data:`OutputPath`), and everything the sink derives
from it (partial files, checkpoint, lock, staging area, manifest) is absolute too.
That is where ``open()`` finds it (:func:`~seamline.contracts.workdir.absolute`): links
are *not* followed, so the sink writes where the path says, into the folder the user
named, and ``..`` leads where the file system leads it: after a linked folder, to the
parent of the folder the link names. ``os.path.abspath`` removed ``..`` from the text
instead: ``results/../emb.jsonl``, ``results`` a link to ``/elsewhere/results``, replaced
``./emb.jsonl`` while ``seamline search`` (which opens the path as given) looked in
``/elsewhere``.

Whether two configured outputs are *one file* is a different question, answered by
what the file system says (:func:`same_entry`): the folders' symbolic links followed,
so ``o6/emb.jsonl`` and ``link-to-o6/emb.jsonl`` are one. The last name is compared
as it is, not followed: a sink publishes by renaming over that name, so a link found
there is replaced, never written through (:mod:`._atomic`), and two outputs that are
links to one file today are two files once published. :func:`check_distinct`
refuses a config whose outputs collide (``errors_path`` naming the records file
through a linked folder, the manifest's own name, one of the sink's hidden working
files, or a file inside a table's folder) while the config is validated, so the run
never starts; before this, one output silently overwrote the other.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

from pydantic import AfterValidator, BeforeValidator

from seamline.contracts.component import NamedPath
from seamline.contracts.untrusted import kind_of
from seamline.contracts.workdir import absolute

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence


_URI = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def _local(value: object) -> object:
    """Refuse a URI: ``s3://bucket/emb.lance`` would be a local folder named ``s3:``."""
    if isinstance(value, str) and _URI.match(value):
        scheme = value.split(":", 1)[0]
        raise ValueError(
            f"{value!r} is a URI ({scheme}://); the first-party sinks write local paths "
            "only (a mounted bucket's folder works): give a path on this machine"
        )
    return value


def _named_output(value: object) -> object:
    """``value``, unless it is empty: refused with a hint for an output, not an input.

    :data:`NamedPath`'s own hint, ``'.' for the working directory``, is right for a folder
    to read; an output published at ``.`` is refused as a directory (:func:`occupant`).
    """
    if isinstance(value, str) and not value.strip():
        raise ValueError(
            "the path must not be empty: name where the output is published, a file such as "
            "'out/emb.jsonl' (a table's folder for a table)"
        )
    return value


def _utf8_name(path: Path) -> Path:
    """``path``, unless its own name holds a byte that is not UTF-8 (a lone surrogate).

    The manifest lists an output's files by name, as JSON text, which cannot hold such a
    byte: ``--set 'sink.with.path="out/caf\\udce9.jsonl"'`` published, and then every
    ``seamline search`` refused the manifest as "not as seamline wrote it: run the
    pipeline again", which wrote it the same way. Refused before the run instead. A
    folder above the output may have any name: the manifest does not record it.
    """
    name = path.name
    odd = next((at for at, char in enumerate(name) if "\udc80" <= char <= "\udcff"), None)
    if odd is None:
        return path
    byte = ord(name[odd]) - 0xDC00
    raise ValueError(
        f"the output's name {name!r} holds the byte 0x{byte:02X} (character {odd + 1}), "
        "which is not UTF-8: the manifest lists the output's files by name as UTF-8 text, "
        "so what the run published could not be searched. Name the output in UTF-8 (such "
        "as 'out/café.jsonl'); the folders above it may have any name"
    )


OutputPath = Annotated[
    NamedPath,
    BeforeValidator(_local),
    BeforeValidator(_named_output),
    AfterValidator(_utf8_name),
    AfterValidator(absolute),
]
"""The type of every config field that names a file or folder a sink writes."""


def located(path: Path) -> Path:
    """Where the name ``path`` really is: its folder with every link followed, and its name."""
    return Path(os.path.realpath(path.parent)) / path.name


def occupant(path: Path, *, folder: bool) -> str:
    """What lies at ``path`` that an output can never be published over, in words, or "".

    A file output (``folder`` false) is renamed over its name, which fails on a directory
    and *replaces* a device, a FIFO or a socket with a regular file: ``--set
    sink.with.path=/dev/null`` run as root replaced the system's ``/dev/null``. So only a
    regular file, or a symbolic link (replaced, never written through), may be there. A
    folder output (a table) is replaced as a folder, so anything else there is refused, a
    link included. Nothing there yet is fine.
    """
    try:
        mode = os.lstat(path).st_mode
    except (OSError, ValueError):  # nothing there yet; or a name no file has (a NUL byte)
        return ""
    if not folder:
        return "" if stat.S_ISREG(mode) or stat.S_ISLNK(mode) else kind_of(mode)
    if stat.S_ISDIR(mode):
        return ""
    return "a file" if stat.S_ISREG(mode) else kind_of(mode)


def blocked_folder(path: Path) -> str:
    """What stands, in words, where a folder above ``path`` must be ("" if nothing does).

    Parent folders are created as needed; the first one that exists decides. A file there
    (``afile/emb.jsonl`` with ``afile`` a file), or a link to a folder that is gone, failed
    the run only at its end, as ``File exists`` with advice to ``--resume``.
    """
    for parent in path.parents:
        try:
            mode = os.lstat(parent).st_mode
        except (FileNotFoundError, NotADirectoryError):  # not there; or under a file
            continue
        except (OSError, ValueError):
            return ""
        if stat.S_ISDIR(mode) or os.path.isdir(parent):  # a folder, or a link to one
            return ""
        if stat.S_ISLNK(mode):
            gone = not os.path.exists(parent)
            return f"{str(parent)!r} is a link to {'nothing' if gone else 'what is not a folder'}"
        return f"{str(parent)!r} is {'a file' if stat.S_ISREG(mode) else kind_of(mode)}"
    return ""


def same_entry(one: Path, other: Path) -> bool:
    """Whether ``one`` and ``other`` are one name in one folder (the folders' links followed)."""
    return located(one) == located(other)


def _working_file_of(path: Path, output: Path) -> bool:
    """Whether ``path`` has a name the sink gives a hidden working file of ``output``.

    Every such name (partial files, the checkpoint, the lock, the staging folders and
    the temporaries of a commit) is ``.<output name>.<something>`` in ``output``'s folder.
    """
    return (
        path.name.startswith(f".{output.name}.") and located(path).parent == located(output).parent
    )


def check_distinct(outputs: Sequence[tuple[str, Path]], *, folders: Collection[str] = ()) -> None:
    """Refuse (``ValueError``, a config error) outputs that are one file, or in one another.

    ``outputs`` are ``(label, absolute path)`` pairs: every file the config names or
    the sink derives from it (the manifest). ``folders`` are the labels of outputs
    that are folders (a LanceDB table), inside which no other output may be.
    """
    for index, (label, path) in enumerate(outputs):
        for other_label, other in outputs[index + 1 :]:
            clash = _clash(label, path, other_label, other, folders)
            if clash:
                raise ValueError(f"{clash}; one would overwrite the other. Give them other names")


def _clash(label: str, path: Path, other_label: str, other: Path, folders: Collection[str]) -> str:
    """Why ``path`` and ``other`` cannot both be written, or "" if they can."""
    said = f"{label} ({str(path)!r}) and {other_label} ({str(other)!r})"
    if same_entry(path, other):
        shown = "" if path == other else f" ({str(located(path))!r})"
        return f"{said} are the same file{shown}"
    one, two = (label, path), (other_label, other)
    for (a_label, a), (b_label, b) in ((one, two), (two, one)):
        if _working_file_of(a, b):
            return f"{said} collide: {a_label} has the name of a hidden working file of {b_label}"
        if b_label in folders and located(a).is_relative_to(located(b)):
            return f"{said} collide: {a_label} is inside {b_label}, a folder the sink replaces"
    return ""


def check_beside(companion: tuple[str, Path], output: tuple[str, Path]) -> None:
    """Refuse (``ValueError``) a companion file outside the folder ``output`` is in.

    The manifest names an output's files relative to its own folder, and a reader refuses
    a manifest naming a file outside it (a tampered manifest must not choose what is
    read): a run that wrote its errors file elsewhere would publish an output that
    ``seamline search`` then refuses. So it is refused before the run starts.
    """
    label, path = companion
    output_label, output_path = output
    folder = located(output_path).parent
    if not located(path).is_relative_to(folder):
        raise ValueError(
            f"{label} ({str(path)!r}) is outside the folder of {output_label} "
            f"({str(folder)!r}): an output's files stay in its folder, where its manifest "
            f"names them. Put {label} in that folder (or a folder inside it), or leave it "
            "out for the default beside the output"
        )
