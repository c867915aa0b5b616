"""``seamline search --queries FILE``: many queries, one a line, searched with one model.

Each ``seamline search`` builds the index's model (a second or two); a user with a
list of questions to try (an evaluation set, a log of searches) would pay that per
query. A file of queries, or ``-`` for standard input, is read here and searched
through one :class:`~seamline.adapters.search.Searcher`.

The file is input seamline did not write: read as a regular file (or the pipe),
bounded in bytes and in lines, decoded as UTF-8 (a byte-order mark is dropped), and
every line is checked as a query on the command line is before any model is built,
so a bad line is an error naming ``FILE:LINE`` and the fix, never a query silently
skipped. Lines end at ``\\n`` (a ``\\r`` before it is dropped), as an editor counts them.
"""

from __future__ import annotations

import sys

from seamline.adapters.search.query import query_problem
from seamline.contracts import UserError, untrusted
from seamline.contracts.workdir import gone_under

STDIN = "-"
MAX_BYTES = 16 * 1024 * 1024
"""The most a queries file may hold: 16 MiB."""
MAX_QUERIES = 10_000
"""The most queries one command searches."""


def read_queries(source: str) -> list[str]:
    """The queries in ``source`` (a path, or ``-`` for standard input), each checked."""
    name = "<stdin>" if source == STDIN else source
    data = _read(source, name)
    if len(data) > MAX_BYTES:
        raise UserError(
            f"{name} holds more than {MAX_BYTES // (1024 * 1024)} MiB: give at most "
            f"{MAX_QUERIES:,} queries, one a line, and split a longer list into several runs"
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        at = untrusted.undecodable_offset(data, err)
        number = data[:at].count(b"\n") + 1
        raise UserError(
            f"{name}:{number}: not UTF-8 text (byte {at + 1} is {data[at]:#04x}); "
            "save the queries as UTF-8"
        ) from None
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    if not lines:
        raise UserError(f"{name} holds no query: give one query a line")
    if len(lines) > MAX_QUERIES:
        raise UserError(
            f"{name} holds {len(lines):,} lines, more than {MAX_QUERIES:,} queries: split "
            "it into several runs"
        )
    queries = []
    for number, line in enumerate(lines, start=1):
        query = line.removesuffix("\r")
        problem = query_problem(query)
        if problem is not None:
            raise UserError(f"{name}:{number}: {problem}; one query a line, no blank lines")
        queries.append(query)
    return queries


def _read(source: str, name: str) -> bytes:
    if source == STDIN:
        if sys.stdin is None:  # `<&-`: Python has no stdin at all
            raise UserError(
                "--queries -: standard input is closed; pipe the queries in, one a line, or "
                "give them as arguments"
            )
        return untrusted.read_at_most(sys.stdin.buffer, MAX_BYTES)
    try:
        return untrusted.read_regular(source, MAX_BYTES)
    except FileNotFoundError:
        gone_under(source)  # from a deleted folder: cd again, though the name may exist
        raise UserError(f"{name} does not exist: name a file of queries, one a line") from None
    except untrusted.NotRegularFile as err:
        raise UserError(
            f"{name} is {err}, not a file of queries (to pipe them in, give --queries -)"
        ) from None
    except OSError as err:
        raise UserError(f"cannot read the queries in {name}: {err.strerror or err}") from None
