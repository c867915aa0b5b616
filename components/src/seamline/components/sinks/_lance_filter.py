"""A ``where`` filter handed to LanceDB as one whole expression, or refused.

LanceDB's SQL parser (DataFusion's) stops at the end of the first complete expression and
drops the rest without a word: ``metadata.bytes > 1000 AN metadata.bytes < 1200`` (a typo
for ``AND``) filtered on ``> 1000`` alone, and a search answered with rows the user had
excluded, exit 0; so did a missing ``AND``, or ``; ...`` after the filter. Inside
parentheses the parser must reach the closing one, so the filter is given as
``(FILTER)``: what it cannot read is then an error naming it. That holds only if the
closing parenthesis is the wrapper's own, so a filter whose parentheses do not pair up
(outside its quoted strings, names and comments) is refused before LanceDB sees it:
``b > 5) garbage (b < 7`` would otherwise pair its own.

A filter is run as written, no values bound to it: a placeholder (``id = ?``, ``$1``,
``:name``) made LanceDB's planner panic (a traceback and exit 1 from ``seamline search``,
a 500 from a server), as did a ``$$``-quoted string, which starts as ``$`` does; both are
refused before LanceDB sees them.
"""

from __future__ import annotations

import re

from seamline.contracts.readback import FilterRefused

_QUOTES = "'\"`"
"""A string literal, a quoted name, a back-quoted name: parentheses inside are text."""


def one_expression(where: str) -> str:
    """``where`` wrapped so that LanceDB reads all of it, or a ``FilterRefused``.

    The line break before the closing parenthesis ends a ``--`` comment the filter may
    end with, which would otherwise hide it.
    """
    problem = _unpaired(where)
    if problem:
        raise FilterRefused(
            f"where {where!r} is not a filter LanceDB can apply: it has {problem}. Pair "
            "its parentheses (a ')' or '(' inside a string belongs in quotes)"
        )
    costly = _COSTLY_CALL.search(_code_of(where))
    if costly:
        raise FilterRefused(
            f"where {where!r} calls {costly[1].lower()}(), which builds values far larger "
            f"than the rows it reads: refused in a filter ({', '.join(COSTLY)}), whose cost "
            "LanceDB does not bound (repeat(text, 300000) on 30 rows took 5 s and 1 GiB)"
        )
    placeholder = _placeholder(where)
    if placeholder:
        raise FilterRefused(
            f"where {where!r} is not a filter LanceDB can apply: it has {placeholder}. "
            "Write the value itself, a string in single quotes (id = 'd1')"
        )
    return f"({where}\n)"


COSTLY = (
    "repeat",
    "lpad",
    "rpad",
    "array_repeat",
    "list_repeat",
    "array_resize",
    "list_resize",
    "range",
    "generate_series",
)
"""DataFusion's functions whose result's size is set by an argument, not by the row: a
filter evaluates them on a whole batch of rows at once, and LanceDB's query timeout is
checked only between batches, so one call could hold the CPU and memory for as long and
as much as it asked (the OOM killer's to end). Aliases count (``list_repeat`` is
``array_repeat``). This is not a bound on a filter's cost: nested ``replace`` calls
(each multiplying a text's length) or long concatenations still build large values,
which is why serving.md says a ``where`` is for clients the operator trusts."""
_COSTLY_CALL = re.compile(rf"(?<![\w.])({'|'.join(COSTLY)})\s*\(", re.IGNORECASE)


_PLACEHOLDER = re.compile(
    r"(?P<quoted>(?<![\w$@#])\$\w*\$)"  # $$ or $tag$: a $-quoted string starts
    r"|(?<![\w$@#])\$\w*"  # $1, $name: a $ that continues no name (a$b is one)
    r"|\?\d*"  # ?, ?1
    r"|(?<!:):\w+"  # :name, :1; not ::, a cast
)
"""What DataFusion's parser reads as a value to bind, or as a ``$``-quoted string (whose
``$`` starts as a placeholder's does): both made LanceDB's planner panic. A ``:`` inside
``[...]`` is a slice's (``[1:n]``), which :func:`_placeholder` leaves out."""


def _placeholder(where: str) -> str:
    """The first placeholder or ``$``-quoted string in ``where``'s code ("" if none)."""
    code = _code_of(where)
    for found in _PLACEHOLDER.finditer(code):
        if found[0].startswith(":") and _in_brackets(code, found.start()):
            continue
        at = found.start() + 1
        if found["quoted"]:
            return f"a $-quoted string at character {at} ({found[0]}...), which LanceDB cannot read"
        return (
            f"a placeholder at character {at} ({found[0]}), and a search binds no values "
            "to a filter"
        )
    return ""


def _in_brackets(code: str, at: int) -> bool:
    """Whether character ``at`` of ``code`` lies inside ``[...]``."""
    before = code[:at]
    return before.count("[") > before.count("]")


def _code_of(where: str) -> str:
    """``where`` with its string literals, quoted names and comments blanked, each by as
    many spaces as it had characters (a place in the code is the same in ``where``)."""
    out, at = [], 0
    while at < len(where):
        ch, start = where[at], at
        if ch in _QUOTES:
            end = where.find(ch, at + 1)
            at = len(where) if end < 0 else end + 1
        elif where.startswith("--", at):
            end = where.find("\n", at)
            at = len(where) if end < 0 else end + 1
        elif where.startswith("/*", at):
            end = where.find("*/", at + 2)
            at = len(where) if end < 0 else end + 2
        else:
            out.append(ch)
            at += 1
            continue
        out.append(" " * (at - start))
    return "".join(out)


def _unpaired(where: str) -> str:
    """The first parenthesis of ``where`` that has no partner ("" if all pair up)."""
    depth, at, opened = 0, 0, [-1]
    while at < len(where):
        ch = where[at]
        if ch in _QUOTES:  # '' inside a literal: it closes, and a new one opens at once
            end = where.find(ch, at + 1)
            at = len(where) if end < 0 else end + 1  # unclosed: LanceDB says so
            continue
        if where.startswith("--", at):
            end = where.find("\n", at)
            at = len(where) if end < 0 else end + 1
            continue
        if where.startswith("/*", at):
            end = where.find("*/", at + 2)
            at = len(where) if end < 0 else end + 2
            continue
        if ch == "(":
            depth += 1
            opened.append(at)
        elif ch == ")":
            if depth == 0:
                return f"a ')' at character {at + 1} that closes no '('"
            depth -= 1
            opened.pop()
        at += 1
    return f"a '(' at character {opened[-1] + 1} that is never closed" if depth else ""
