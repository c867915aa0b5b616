"""The output fields every publishing sink has, declared once: ``path``, ``errors_path``, ``text``.

A sink's config subclasses :class:`OutputConfig` and adds only its own settings. The
paths are :data:`~._paths.OutputPath`: made absolute once, when the config is
validated, so that everything the sink derives from them (partial files, checkpoint,
lock, staging area, manifest) is spelled one way (:mod:`._paths`). The outputs a config
names, and the manifest the sink derives, are checked here to be distinct files, so a
config whose ``errors_path`` is the records file under another spelling never starts.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import ClassVar, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from seamline.contracts.component import ComponentConfig
from seamline.contracts.sink_kit._names import overlong
from seamline.contracts.sink_kit._paths import (
    OutputPath,
    blocked_folder,
    check_beside,
    check_distinct,
    occupant,
)
from seamline.contracts.sink_kit._records import default_errors_path, default_manifest_path


class OutputConfig(ComponentConfig):
    """The ``with:`` fields of a sink that publishes ``path`` (and its companions) whole."""

    path_is_folder: ClassVar[bool] = False
    """Whether ``path`` is a folder the sink replaces (a table), inside which no other
    output may lie."""
    folder_kind: ClassVar[str] = "output folder"
    """What such a folder is, in words: a run refuses, before its work, a ``path`` that
    is something else (``'out/emb.lance' is a file, not a LanceDB table folder``)."""

    path: OutputPath = Field(
        description="Where the output is published, with its errors file and manifest "
        "beside it; parent directories are created. A relative path is relative to the "
        "working directory of the run."
    )
    errors_path: OutputPath | None = Field(
        default=None,
        description="Where documents that were set aside are recorded, one JSON object each. "
        "Default: '<path stem>.errors.jsonl' beside path.",
    )
    text: bool = Field(
        default=True,
        description="Store each window's text beside its vector (what search shows as the "
        "snippet); false leaves it out.",
    )

    def other_outputs(self) -> list[tuple[str, Path]]:
        """The sink's other files, as ``(label, absolute path)`` (the npy sink's index).

        Checked to be distinct from the rest; a subclass with more output paths lists them.
        """
        return []

    def published_names(self) -> list[tuple[str, Path]]:
        """Every name the output is published under, as ``(what, path)``, ``path`` first.

        What the destination's lock covers (:mod:`._lock`): another output may share the
        errors file or the manifest (``emb.jsonl`` and ``emb.npy`` share
        ``emb.manifest.json``), and a run writing it must be refused as if it wrote
        ``path``.
        """
        return [
            ("path", self.path),
            *self.other_outputs(),
            ("the errors file", self.resolved_errors_path()),
            ("the manifest", self.manifest_path()),
        ]

    def relocated(self, directory: Path) -> Self:
        """This config with every output in ``directory``, under the same names (a part's)."""
        update = {
            "path": directory / self.path.name,
            "errors_path": directory / self.resolved_errors_path().name,
        }
        return self.model_copy(update=update)

    def resolved_errors_path(self) -> Path:
        return self.errors_path if self.errors_path is not None else default_errors_path(self.path)

    def manifest_path(self) -> Path:
        """``<path stem>.manifest.json`` beside ``path``: what made the output."""
        return default_manifest_path(self.path)

    def occupied(self) -> list[tuple[str, str]]:
        """``(field, problem)`` for each output whose name holds what it can never be
        published over (:func:`~._paths.occupant`): a directory, a device, a FIFO or a
        socket where a file goes, anything but a folder where a folder goes. ``field`` is
        the ``with:`` field the name comes from (a derived file's is ``path``).

        Asked while the pipeline is validated and again before the run's work
        (:meth:`PublishingSink.check_destination`), not by the config's own validation: a
        config is data, and what is on disk may change before the run. Before this, a
        directory at a file sink's ``path`` passed ``validate`` and failed the run only
        when it published, after every document was embedded. So is an output whose
        name leaves no room for the hidden working files named after it
        (:func:`~._names.overlong`).
        """
        fields = type(self).model_fields
        errors = "errors_path" if self.errors_path is not None else "path"
        outputs = [
            ("path", "path", self.path, self.path_is_folder),
            *((o if o in fields else "path", o, p, False) for o, p in self.other_outputs()),
            (errors, "the errors file", self.resolved_errors_path(), False),
            ("path", "the manifest", self.manifest_path(), False),
        ]
        found_there = [
            (field, f"{label} {str(path)!r} is {found}, {self._fix(found, folder=folder)}")
            for field, label, path, folder in outputs
            if (found := occupant(path, folder=folder))
        ]
        blocked = [
            (
                field,
                f"{blocker}, not a folder: {label} {str(path)!r} cannot be published "
                "inside it; give a path under a folder (or remove what is there)",
            )
            for field, label, path, _ in outputs
            if field != "path" or label == "path"  # derived files lie beside path
            if (blocker := blocked_folder(path))
        ]
        return found_there + blocked + overlong([(f, label, p) for f, label, p, _ in outputs])

    def _fix(self, found: str, *, folder: bool) -> str:
        """What a problem of :meth:`occupied` says after what was found."""
        if not folder and found == "a directory":
            return (
                "where the output is published as a file: remove the folder, or give a file "
                "path (such as a new name inside it)"
            )
        if not folder:
            return (
                "not a regular file: the output is published by renaming a new file over its "
                "name, which would replace it; give another path"
            )
        link = "it is not followed (it could point anywhere): " if "link" in found else ""
        return f"not a {self.folder_kind}; {link}remove it, or give another path"

    @field_validator("path", "errors_path", mode="before")
    @classmethod
    def _no_folder_spelling(cls, value: object, info: ValidationInfo) -> object:
        """A file's name written as a folder's (``results/``): the slash was dropped, and a
        file named ``results`` published where a folder was meant (``cp`` and ``open``
        refuse such a name)."""
        folder = cls.path_is_folder and info.field_name == "path"
        if isinstance(value, str) and value.endswith(("/", os.sep)) and not folder:
            raise ValueError(
                f"{value!r} ends with '/', which names a folder, and this is a file: give "
                f"its name inside that folder ({value.rstrip('/' + os.sep) or '.'}/NAME)"
            )
        return value

    @model_validator(mode="after")
    def _distinct_outputs(self) -> Self:
        errors = (
            "errors_path"
            if self.errors_path is not None
            else "the errors file ('<stem>.errors.jsonl')"
        )
        check_distinct(
            [
                ("path", self.path),
                *self.other_outputs(),
                (errors, self.resolved_errors_path()),
                ("the manifest", self.manifest_path()),
            ],
            folders={"path"} if self.path_is_folder else (),
        )
        for companion in (*self.other_outputs(), (errors, self.resolved_errors_path())):
            check_beside(companion, ("path", self.path))
        return self
