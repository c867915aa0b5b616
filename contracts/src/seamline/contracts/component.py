"""What every component declares, whatever its kind.

A component is a class registered under an entry point. It declares, as class
attributes, the name it is registered under, the contract and contract version it
implements, and a pydantic ``Config`` model that is both its constructor's input
and the schema of its ``with:`` block in a pipeline file.
"""

from __future__ import annotations

import os
import sys
import types
import typing
from dataclasses import dataclass
from pathlib import Path, PurePath
from typing import Annotated, Any, ClassVar, Generic, TypeVar

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
)

from seamline.contracts.home import expand_tilde, no_home_reason
from seamline.contracts.versions import Kind


def _numeric(annotation: Any) -> bool:
    """Whether a field of this type takes a number and not a boolean (``int``,
    ``float | None``, ``Annotated[int, ...]``)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _numeric(typing.get_args(annotation)[0])
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = typing.get_args(annotation)
        return bool not in members and any(_numeric(member) for member in members)
    return annotation in (int, float)


def refuse_a_boolean_for_a_number(model: type[BaseModel], value: Any, info: ValidationInfo) -> Any:
    """``value``, unless it is a boolean given to a number field.

    pydantic reads ``true`` as 1 and ``false`` as 0 for an integer, so ``--set
    run.checkpoint_every=false`` switched checkpoints off without a word, and
    ``max_length: true`` was a window of one token. A boolean is never meant as a number.
    """
    field = model.model_fields.get(info.field_name or "")
    if isinstance(value, bool) and field is not None and _numeric(field.annotation):
        raise ValueError(f"expects a number, not the boolean {str(value).lower()}")
    return value


def refuse_an_empty_path(value: Any) -> Any:
    """``value``, unless it is an empty string: ``Path("")`` is ``.``, the working
    directory, never what was meant (a variable set to "" in ``${CORPUS}``)."""
    if isinstance(value, str) and not value.strip():
        raise ValueError(
            "the path must not be empty: name a file or folder ('.' for the working directory)"
        )
    return value


def expand_home(value: Any) -> Any:
    """``value`` with a leading ``~`` (or ``~user``) made the home folder, as a shell makes it.

    A pipeline's ``path: ~/out/emb.jsonl`` is what a user types in a shell; taken as it is,
    it named a folder called ``~`` in the working directory, which the run created and
    wrote into (and which a later ``rm -rf ~`` to remove it would mistake for home).
    A ``~user`` that names no user of this machine is refused. ``./~`` names a folder
    called ``~``.
    """
    if not isinstance(value, str | PurePath) or not str(value).startswith("~"):
        return value
    text = str(value)
    home = expand_tilde(text)  # ~ and ~/: an absolute $HOME, else the user database's
    if home is None:
        raise ValueError(
            f"{text!r} starts with '~', but {no_home_reason()}: write the folder out in full "
            f"(or './{text}' for a folder called '~')"
        )
    expanded = os.path.expanduser(home)
    if expanded.startswith("~"):
        head = text.split("/", 1)[0]
        raise ValueError(
            f"{text!r} starts with {head!r}, but no user of this machine is called "
            f"{head[1:]!r}: write the folder out in full (or './{text}' for a folder of "
            "that name)"
        )
    return expanded if isinstance(value, str) else type(value)(expanded)


def from_here(text: str) -> Path:
    """The path a user typed: a leading ``~`` the home folder (:func:`expand_home`), and
    ``./~/x`` the folder called ``~`` here.

    ``Path("./~/x")`` is ``Path("~/x")``: the ``./`` that said "not home" is dropped, and a
    later ``expanduser`` (``open_index``'s) went to the home folder's index, though the
    run summary had printed ``seamline search './~/emb.jsonl'`` to name this one. Such a
    path is made absolute here, where its meaning is still known. A ``ValueError`` for a
    ``~user`` that names no user.
    """
    path = Path(expand_home(text))
    if not text.startswith("~") and str(path).startswith("~"):
        return Path.cwd() / path
    return path


NAME_MAX = 255
"""Bytes a file system allows in one name of a path (Linux's, and the common limit)."""
PATH_MAX = 4096
"""Bytes the kernel takes in a whole path."""


def refuse_an_impossible_path(value: Any) -> Any:
    """``value``, unless no file system could hold it: a lone surrogate, a NUL byte, a name
    over ``NAME_MAX`` bytes or a path over ``PATH_MAX``. The first use of such a path raised
    ``OSError: File name too long`` (or ``ValueError: embedded null byte``) from wherever it
    happened to be used, as a traceback, or failed the run after it was validated; refused
    here, the problem is placed where the path was given."""
    if not isinstance(value, str | PurePath):
        return value
    text = str(value)
    try:
        os.fsencode(text)
    except UnicodeEncodeError as err:  # `"\ud800"`: the raw codec error was the message
        if not "\ud800" <= text[err.start] <= "\udfff":
            raise ValueError(_not_in_the_locale(text, err.start)) from None
        raise ValueError(
            f"the path holds a lone surrogate {text[err.start]!r} (character {err.start + 1}), "
            "which no file or folder name can hold: give the path as UTF-8 text"
        ) from None
    nul = text.find("\0")
    if nul >= 0:
        raise ValueError(
            f"the path holds a NUL byte (character {nul + 1}), which no file or folder "
            "name may hold: remove it"
        )
    if len(os.fsencode(text)) >= PATH_MAX:
        raise ValueError(
            f"the path is {len(os.fsencode(text)):,} bytes long; a path may have at most "
            f"{PATH_MAX - 1:,}"
        )
    for name in PurePath(text).parts:
        if len(os.fsencode(name)) > NAME_MAX:
            raise ValueError(
                f"the path holds a name of {len(os.fsencode(name)):,} bytes ({name[:20]!r}...); "
                f"a file or folder name may have at most {NAME_MAX}"
            )
    return value


def _not_in_the_locale(text: str, at: int) -> str:
    """Why ``text``, valid Unicode, cannot be a path here: the file system encoding (the
    locale's: ASCII under ``LC_ALL=C`` with UTF-8 mode off) has no bytes for character
    ``at``. It was called a lone surrogate, and "give the path as UTF-8 text" sent the user
    to a file that already was; the locale is what to change."""
    named = next(
        (
            f"{name}={os.environ[name]}"
            for name in ("LC_ALL", "LC_CTYPE", "LANG")
            if name in os.environ
        ),
        "no LC_ALL, LC_CTYPE or LANG set",
    )
    return (
        f"the path holds {text[at]!r} (U+{ord(text[at]):04X}, character {at + 1}), which file "
        f"names cannot hold here: Python's file system encoding is "
        f"{sys.getfilesystemencoding()}, the locale's ({named}); run under a UTF-8 locale "
        "(LC_ALL=C.UTF-8) or set PYTHONUTF8=1"
    )


def named_path(value: Any) -> Any:
    """A config path as given: not empty, ``~`` expanded, one a file system can hold."""
    return refuse_an_impossible_path(expand_home(refuse_an_empty_path(value)))


NOT_BLANK: dict[str, Any] = {"minLength": 1, "pattern": r"\S"}
"""What :func:`refuse_an_empty_path` refuses, as a JSON Schema says it (``seamline schema``):
an editor's validator passed ``root: ''``, which ``validate`` refuses."""
NamedPath = Annotated[Path, BeforeValidator(named_path), Field(json_schema_extra=NOT_BLANK)]
"""A config field naming a file or folder: a ``Path`` that may not be given as "" (nor
blank), and whose leading ``~`` is the home folder, as in a shell."""


class ComponentConfig(BaseModel):
    """Base of every component's ``Config``: unknown fields are errors, values are frozen.

    ``extra="forbid"`` is what lets a typo in a pipeline file be reported with the
    list of allowed fields instead of being silently ignored; a boolean given to a number
    field is refused (:func:`refuse_a_boolean_for_a_number`).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    @field_validator("*", mode="before")
    @classmethod
    def _no_boolean_for_a_number(cls, value: Any, info: ValidationInfo) -> Any:
        return refuse_a_boolean_for_a_number(cls, value, info)


@dataclass(frozen=True, slots=True)
class LeavesMachine:
    """Marks a config field whose value is sent off this machine: a URL, an address.

    Used as ``Annotated`` metadata, ``address: Annotated[str | None, LeavesMachine(
    "a Ray cluster's address")] = None``; the whole value is covered, whatever its
    type (a mapping of headers, say). A pipeline fills such a field from an
    environment variable (``${TOKEN}``) only when the user's own config names the
    variable in ``trust.network_variables``: otherwise a pipeline file could send a
    secret of the environment to any host, in a URL's path or a host name's DNS
    lookup. Core checks this for every marked field of every component's ``Config``
    (and of the pipeline's own sections) when it resolves a pipeline.
    """

    what: str
    """What the value is, for messages: "an OTLP receiver's URL"."""
    carries: tuple[str, ...] = ()
    """Environment variables sent along to the destination this field names (the OTLP
    exporters send ``OTEL_EXPORTER_OTLP_HEADERS``): when a pipeline file sets the
    field, each one that is set must be named in ``trust.network_variables`` too."""


@dataclass(frozen=True, slots=True)
class AddedLater:
    """Marks a config field added after outputs were first written, whose default computes
    exactly what the component computed before the field existed.

    Used as ``Annotated`` metadata, ``window_edges: Annotated[Literal["tokens", "words"],
    AddedLater("2026-12-06")] = "tokens"``. A manifest and a checkpoint record the model's
    settings, defaults included (so a later change of a default cannot silently change a
    rebuilt model); a marked field is left out of that record while it holds its default.
    An older seamline, whose ``Config`` forbids the field it never had, then still reads
    the output (``seamline search`` after a rollback) and resumes the checkpoint, and this
    one fills the default back in: both compute the same vectors. Set to anything else,
    the field is recorded, and an older seamline refuses it, as it must (it cannot compute
    it). Mark only a field whose default changes nothing: a new setting that changes what
    its default computes is a changed model, not an added setting.
    """

    since: str
    """When the field was added (a date, or the first version that had it), for readers."""


ConfigT = TypeVar("ConfigT", bound=ComponentConfig)


class Component(Generic[ConfigT]):
    """Base of all components.

    Subclasses set ``name``, ``contract_version`` and ``Config`` explicitly: the
    contract version is the one the author wrote against, which is why it is not
    inherited from seamline at import time.
    """

    kind: ClassVar[Kind]
    name: ClassVar[str]
    contract_version: ClassVar[str]
    Config: ClassVar[type[ComponentConfig]] = ComponentConfig

    def __init__(self, config: ConfigT) -> None:
        self.config: ConfigT = config

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this component cannot be used on this machine at all, or None (the default).

        Optional, for any contract version: the host asks it only to list components
        (``seamline components`` shows ``unavailable`` and this reason, where it said
        ``ok`` of the ray executor without Ray and of cpu-flash without its compiled
        library, which then failed the run). It must be cheap and import nothing heavy
        (``importlib.util.find_spec``, not ``import``); the refusal a run meets stays where
        it is (the constructor, ``supports()``).
        """
        return None

    def close(self) -> None:
        """Release resources. The orchestrator calls it once, at the end of a run."""

    def describe(self) -> dict[str, str]:
        """Attributes that identify this instance in spans, logs and listings."""
        return {"kind": self.kind, "name": self.name, "contract_version": self.contract_version}
