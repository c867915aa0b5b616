"""A component's message about settings filled from environment variables, without their values.

A value filled from ``${VAR}`` may be a secret (a token, a password in a URL), so an
error about it names the variable and never prints the value. Core's own messages are
written that way; a component's are not (its ``Config``'s validators, its refusal when
it is built or run), and core cannot know which of its words came from which setting.
So every such message goes through one rule, the same for every component:

- each occurrence of a value of :data:`SHORTEST` or more characters becomes the name
  of its variable, ``${VAR}``. A shorter value (``1``, ``a``) is left alone: it would
  match unrelated text (a line number, a letter of a word) and reveals little;
- if what is left still holds :data:`PIECE` characters in a row of a value, ignoring
  case, the message quotes a part or a changed form of it (a tokenizer's pieces,
  ``'hunter', '##2'``; an upper-cased copy; an escaped one), which no replacement can
  be sure to catch: the whole message is withheld, and seamline says in its own words
  which variable's value it quoted, where that is written, and how to see the message.
  Such a run is not looked for inside a plain word of the component's own wording: a
  word of letters alone, in lower, Title or UPPER case, outside quotes (``'...'``,
  ``"..."``), that is not the whole value in another case. Every loader message was
  withheld for ``SEAMLINE_CORPUS=my-texts`` ("text" of "text-files loader") or for any
  ``*.jsonl`` path ("JSON line"). A quoted word still counts (a tokenizer's pieces are
  quoted), as does a run over more than one word or with a digit or a sign in it.

seamline's own messages about a pipeline have their values replaced too, with every
value of the document (:func:`scrubbed`): they quote what the file names (a component
``no loader component named '...'``, a path that overlaps another, a list of trusted
distributions), and each such message written to quote a setting was one more place a
secret filled from ``${VAR}`` was printed. They quote a value as it is (or as Python's
``repr`` escapes it, which is replaced too), never a piece of it, so they are not searched
for pieces: their own words share letters with many a value (``s3cr3t-value`` with "write
the value itself"), and would have been withheld for it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from seamline.contracts import ConfigError
from seamline.core.config.located import Located
from seamline.core.config.located import Path as DataPath

SHORTEST = 3
"""A value shorter than this is not looked for in a message (it would match unrelated text)."""

PIECE = 4
"""A run of this many characters of a value (ignoring case) left once the value itself is
replaced is taken for a piece of it, and the message is withheld."""


@dataclass(frozen=True, slots=True)
class Filled:
    """One environment variable's value in one string of a document, and where it is."""

    path: DataPath
    place: str
    """``file:line:column`` of the string that holds ``${name}``."""
    name: str
    value: str = field(repr=False)

    @property
    def dotted(self) -> str:
        """The setting's path as the pipeline writes it (``model.with.prefix.document``)."""
        return ".".join(map(str, self.path))


def filled_under(located: Located | None, base: DataPath) -> tuple[Filled, ...]:
    """Every variable's value in the strings at or under ``base``, in the document's order
    (empty values left out: there is nothing in them to hide)."""
    if located is None:
        return ()
    return tuple(
        Filled(path, located.where(path), name, value)
        for path, variables in located.interpolated.items()
        if path[: len(base)] == tuple(base)
        for name, value in variables.items()
        if value
    )


@dataclass(frozen=True, slots=True)
class Shown:
    """What to print for a message: ``text``, and, when the message was withheld, the
    place of the first setting whose value it quoted (else None: keep the place)."""

    text: str
    place: str | None = None


def scrub(
    message: str,
    filled: Sequence[Filled],
    owner: str,
    *,
    verbatim: str = "",
) -> Shown:
    """``message``, which ``owner`` (``model 'bert-encoder'``) wrote about settings filled as
    ``filled``, made safe to print by the rule of this module.

    ``verbatim`` is text that comes before ``message`` and never quotes the input
    (pydantic's own words: ``Input should be 'auto' or 'native'``, built from the schema):
    it is kept as it is, neither replaced nor searched for pieces, which a value that is a
    near miss of an allowed word (``nativ``) would always leave.
    """
    values = _names_by_value(filled)
    if not values:
        return Shown(verbatim + message)
    pattern, names = _replacing(values, filled)
    left = pattern.sub("\0", message)
    quoted = [f for f in filled if len(f.value) >= SHORTEST and _holds_piece(left, f.value)]
    if quoted:
        return Shown(withheld(owner, quoted), quoted[0].place)
    return Shown(verbatim + pattern.sub(lambda found: names[found[0]], message))


def scrubbed(problem: ConfigError, located: Located | None) -> ConfigError:
    """``problem``, a message of seamline's own about the document ``located``, with each
    value the document took from ``${VAR}`` (and its ``repr`` escaped form) replaced by the
    variable's name; ``problem`` itself when it quotes none of them.

    Every message resolution raises passes through here, so a message written later that
    quotes a setting is covered too, not only those written with a variable in mind.
    """
    filled = filled_under(located, ())
    values = dict(_names_by_value(filled))
    for value, name in list(values.items()):
        values.setdefault(repr(value)[1:-1], name)
    if not values:
        return problem
    pattern, names = _replacing(values, filled)
    text = pattern.sub(lambda found: names[found[0]], problem.detail)
    return problem if text == problem.detail else ConfigError(text, problem.location)


def span_hidden(filled: Sequence[Filled], allowed: Collection[str]) -> dict[str, str]:
    """What a span attribute shows instead of each value in ``filled`` whose variable
    ``allowed`` (``trust.network_variables``) does not name: ``{value: "${NAME}"}``, the
    value's ``repr`` escaped form too (a setting described as a mapping quotes it so).

    Spans leave the machine (an OTLP receiver, wherever the environment or the pipeline
    file points it), and a component describes itself on every span with its settings
    (``bert-encoder``'s ``prefix``): a value the file took from the environment goes
    there only as a variable the user allows to leave may, as for the fields marked
    ``LeavesMachine``. Values under :data:`SHORTEST` characters are left alone, as in
    messages: they would match unrelated text.
    """
    values = dict(_names_by_value([f for f in filled if f.name not in allowed]))
    for value, name in list(values.items()):
        values.setdefault(repr(value)[1:-1], name)
    return values


def _replacing(
    values: Mapping[str, str], filled: Sequence[Filled]
) -> tuple[re.Pattern[str], Mapping[str, str]]:
    """What finds each of ``values`` in a message, and what replaces each find.

    A variable's name already in the message (a message scrubbed once, "got the value of
    ${TOKEN}") is found too, and replaced by itself: it is not searched for pieces, which
    TOKEN=token-1 would have it withheld for, nor replaced inside.
    """
    names: dict[str, str] = {f"${{{f.name}}}": f"${{{f.name}}}" for f in filled}
    names.update(values)
    found = "|".join(re.escape(v) for v in sorted(names, key=len, reverse=True))
    return re.compile(found), names


def withheld(owner: str, quoted: Sequence[Filled]) -> str:
    """seamline's words for a message of ``owner``'s that quoted the values ``quoted``:
    which variables, which settings, and how to see the message (give the value on the
    command line, where it is the user's own text and is shown)."""
    names = _listed(dict.fromkeys(f"${{{f.name}}}" for f in quoted))
    settings = list(dict.fromkeys(f.dotted for f in quoted))
    what = "the value" if len(quoted) == 1 else "the values"
    given = " ".join(f"--set {dotted}=..." for dotted in settings)
    return (
        f"{settings[0]}: {owner} refused its settings in a message that quotes {what} of "
        f"{names} (whole or in part), which may be a secret, so the message is not shown; "
        f"fix {what}, or give {'it' if len(settings) == 1 else 'them'} with {given} to see "
        "the message"
    )


def _names_by_value(filled: Sequence[Filled]) -> Mapping[str, str]:
    """Each value long enough to look for, and what replaces it: its variable's name, or
    the names of all the variables that hold it (``${A} or ${B}``)."""
    names: dict[str, dict[str, None]] = {}
    for one in filled:
        if len(one.value) >= SHORTEST:
            names.setdefault(one.value, {})[f"${{{one.name}}}"] = None
    return {value: " or ".join(those) for value, those in names.items()}


_QUOTED = re.compile(r"""(?<!\w)'[^'\n]*'(?!\w)|(?<!\w)"[^"\n]*"(?!\w)""")
"""A quoted span (``'x'``, ``"x"``); an apostrophe within a word (``loader's``) opens none."""
_WORD = re.compile(r"[^\W\d_]+")
"""A run of letters."""


def _holds_piece(text: str, value: str) -> bool:
    """Whether ``text`` holds, ignoring case, :data:`PIECE` characters in a row of ``value``
    (all of it when it is shorter) other than within one plain word of the message's own
    wording (:func:`_own_words`)."""
    lowered, searched = value.lower(), text.lower()
    # A letter whose lower case is longer ('İ') would shift every place: no word is own then.
    own = _own_words(text, lowered) if len(searched) == len(text) else [0] * len(searched)
    size = min(PIECE, len(lowered))
    for piece in {lowered[i : i + size] for i in range(len(lowered) - size + 1)}:
        for found in re.finditer(re.escape(piece), searched):
            word = own[found.start()]
            if not word or own[found.end() - 1] != word:  # not within one plain word
                return True
    return False


def _own_words(text: str, value: str) -> list[int]:
    """For each character of ``text``, the number (from 1) of the plain word of the
    message's own wording it is in, or 0: a word of letters alone, in lower, Title or
    UPPER case, outside quotes, that is not ``value`` (lower-cased) itself."""
    quoted = [False] * len(text)
    for span in _QUOTED.finditer(text):
        quoted[span.start() : span.end()] = [True] * (span.end() - span.start())
    words = [0] * len(text)
    for number, word in enumerate(_WORD.finditer(text), start=1):
        letters = word[0]
        plain = letters.islower() or letters.isupper() or letters.istitle()
        if plain and letters.lower() != value and not any(quoted[word.start() : word.end()]):
            words[word.start() : word.end()] = [number] * len(letters)
    return words


def _listed(items: Mapping[str, None]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    names = list(items)
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
