"""Where a run's output is, and whether ``seamline search`` can read it: for the summary.

A sink built on the sink kit says where it publishes (``OutputConfig.path``) and where
set-aside documents go (``resolved_errors_path``); a sink that names a reader (sink
contract 1.4) can be searched. A third party's sink that says neither leaves both
unknown, and the summary says less rather than guess.

A run split into shards by a sink that keeps its parts (``jsonl``, ``npy``) publishes no
errors file at ``resolved_errors_path``: each part has its own, and the manifest lists
them. So the errors files are read from the manifest the run published, not derived from
the config (the summary once named ``out/emb.errors.jsonl``, which did not exist).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from seamline.contracts import UserError
from seamline.contracts.manifest import load_manifest, output_files
from seamline.contracts.sink_kit import OutputConfig
from seamline.contracts.untrusted import visible

if TYPE_CHECKING:
    from seamline.core import Pipeline

SEARCH_QUERY = "your question"
"""The query the summary's search command shows, for the user to replace."""


@dataclass(frozen=True, slots=True)
class OutputPlace:
    """The sink's output and errors file (as the user would type them), and how to search."""

    sink: str
    path: str | None = None
    errors_path: str | tuple[str, ...] | None = None
    """The errors file; for an output published as parts, each part's, in shard order."""
    searchable: bool = False
    manifest: str | None = None
    """The manifest that lists the parts' files, where the output was published as parts."""

    @property
    def search_command(self) -> str | None:
        """``seamline search <path> "..."``, quoted for a shell (:func:`shell_quoted`); None
        if not searchable.

        A relative path that starts with ``-`` is written ``./-out.jsonl``: as it is, the
        command line would read it as options (``No such option: -o``).
        """
        if self.path is None or not self.searchable:
            return None
        path = f"./{self.path}" if self.path.startswith("-") else self.path
        return f'seamline search {shell_quoted(path)} "{SEARCH_QUERY}"'


def shell_quoted(word: str) -> str:
    """``word`` quoted for a shell: as ``shlex.quote`` does, or, when it holds a character
    a terminal acts on or that :func:`~seamline.contracts.untrusted.visible` masks (a
    control character, a newline, a bidirectional override), as bash's ``$'...'`` with
    each such character escaped (``$'out/e\\x1b[5m.jsonl'``), as ``ls`` quotes such a name.

    Printed as it is, the command would drive the terminal; masked (``'out/e\ufffd[5m.jsonl'``,
    as the summary printed it) it named a file that does not exist. ``$'...'`` is read by
    bash, zsh and ksh (and POSIX sh since 2024).
    """
    if visible(word) == word:
        return shlex.quote(word)
    escaped = []
    for ch in word:
        if ch in "\\'":
            escaped.append("\\" + ch)
        elif visible(ch) != ch:
            code = ord(ch)
            escaped.append(f"\\x{code:02x}" if code < 0x80 else f"\\u{code:04x}")
        else:
            escaped.append(ch)
    return "$'" + "".join(escaped) + "'"


def output_place(pipeline: Pipeline) -> OutputPlace:
    """Where ``pipeline``'s sink publishes, from its validated config and its class."""
    choice = pipeline.resolved.sink
    config = choice.config
    info = pipeline.registry.get("sink", choice.name)
    searchable = info.cls is not None and getattr(info.cls, "reader", None) is not None
    if isinstance(config, OutputConfig):
        output, manifest = shown(config.path), config.manifest_path()
        parts = parts_errors(manifest)
        if parts is not None:
            return OutputPlace(choice.name, output, parts, searchable, shown(manifest))
        return OutputPlace(choice.name, output, shown(config.resolved_errors_path()), searchable)
    path = getattr(config, "path", None)
    return OutputPlace(choice.name, shown(path) if isinstance(path, Path) else None)


def parts_errors(manifest: Path) -> tuple[str, ...] | None:
    """Each part's errors file, as the published ``manifest`` lists them (shard order);
    None when it publishes a whole output (or none, or one this cannot read: then the
    configured errors file is named, as before)."""
    try:
        outputs = load_manifest(manifest).outputs
        if outputs is None or outputs.parts is None:
            return None
        files = output_files(outputs, manifest)
    except (OSError, UserError):
        return None
    return tuple(shown(part["errors"]) for part in files if "errors" in part)


def shown(path: Path) -> str:
    """``path`` relative to the working directory when it lies under it, else absolute.

    A relative path whose first folder is named ``~`` (or ``~name``) is written ``./~/...``:
    every seamline path, and a shell, reads a leading ``~`` as a home folder, so the
    summary's ``seamline search '~/emb.jsonl'`` searched the home folder's index.
    """
    relative = os.path.relpath(path)
    if relative.startswith(".."):
        return path.as_posix()
    text = Path(relative).as_posix()
    return f"./{text}" if text.startswith("~") else text
