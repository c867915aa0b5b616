"""``seamline search``: the documents of an index nearest to a query."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import user_errors
from seamline.adapters.cli.options import (
    CompileCache,
    FormatOption,
    as_utf8,
    compile_cache_on,
    output_format,
    whole_number,
)

IndexArg = Annotated[
    str,  # as typed: Path("./~/x") is Path("~/x"), and "./" said "not the home folder"
    typer.Argument(
        help="An index a pipeline wrote: a LanceDB table (out/emb.lance), a Parquet, JSON "
        "Lines or .npy file, or its .manifest.json.",
        metavar="INDEX",
        show_default=False,
    ),
]
Query = Annotated[
    str | None,
    typer.Argument(
        help="The text to search for (or give --queries).", metavar="QUERY", show_default=False
    ),
]
QueriesOption = Annotated[
    str | None,
    typer.Option(
        "--queries",
        help="A UTF-8 file of queries, one a line (- reads them from standard input), "
        "searched with one model: a table each, or one JSON document a line.",
        metavar="FILE",
        show_default=False,
    ),
]
TopK = Annotated[
    int,
    typer.Option(
        "--top-k",
        "-k",
        help="How many results (1 to 10,000).",
        metavar="N",
        parser=whole_number("-k", "from 1 to 10,000"),
    ),
]
AttentionOption = Annotated[
    str | None,
    typer.Option(
        "--attention",
        help="Embed the query with this attention instead of the index's recorded choice.",
        metavar="NAME",
    ),
]
Exact = Annotated[
    bool,
    typer.Option(
        "--exact", help="Compare with every vector even where the table has a vector index."
    ),
]
Where = Annotated[
    str | None,
    typer.Option(
        "--where",
        help="A SQL filter on a LanceDB table's rows, applied before the nearest are "
        'chosen: "metadata.bytes > 1000".',
        metavar="SQL",
    ),
]

PerDocument = Annotated[
    bool,
    typer.Option(
        "--per-document",
        help="The best window of each document, k documents (not k windows, several of one "
        "document): for a prompt that cites k sources.",
    ),
]


def search(
    index: IndexArg,
    query: Query = None,
    queries: QueriesOption = None,
    k: TopK = 5,
    attention: AttentionOption = None,
    exact: Exact = False,
    where: Where = None,
    per_document: PerDocument = False,
    format_: FormatOption = "text",
    compile_cache: CompileCache = True,
) -> None:
    """Embed QUERY with the index's own model and attention; print the nearest documents.

    INDEX is what a sink published (or its .manifest.json): the manifest beside it
    names the model, the attention and where every file or table is. A LanceDB
    table is searched through its vector index when it has one; files are scanned.
    With --queries, every query of the file is searched with one model, in order.
    The query's programs are kept in the compile cache, as a run's are.
    With --per-document, each document is listed once, by its best window.
    """
    from seamline.adapters.cli.render import as_json, listing
    from seamline.adapters.cli.render.console import warn
    from seamline.adapters.logging_setup import configure_logging
    from seamline.adapters.search import Searcher, check_k

    show = (listing if output_format(format_) == "text" else as_json).search_hits
    configure_logging(level="warning")
    user_errors(lambda: check_k(k, "-k"))
    if (query is None) == (queries is None):
        user_errors(lambda: _one_source(query))
    texts = [as_utf8(query)] if query is not None else _lines(queries or "")
    found_at = user_errors(lambda: _at_home(index))
    compile_cache_on(compile_cache)  # the query's programs: compiled once, not every search
    with user_errors(lambda: Searcher(loading.registry(), found_at, attention)) as searcher:
        if searcher.version_warning:  # once, on stderr: stdout holds the results alone
            warn(searcher.version_warning)
        answers = user_errors(
            partial(
                searcher.find_each, texts, k, exact=exact, where=where, per_document=per_document
            )
        )
        for text in texts:  # each shown as it is found; a read of the output serves many
            show(text, user_errors(partial(next, answers)))


def _at_home(index: str) -> Path:
    """``~/out/emb.lance`` quoted (no shell made it the home folder) as ``open_index`` and
    every path of a pipeline take it: under the home folder; ``./~/emb.lance`` (what a run
    summary prints for a folder called ``~``) in that folder, here."""
    from seamline.contracts import UserError
    from seamline.contracts.component import from_here

    try:
        return from_here(index)
    except ValueError as err:
        raise UserError(f"INDEX: {err}") from None


def _lines(source: str) -> list[str]:
    """The queries of ``--queries``, each checked, or exit code 2 naming the bad line."""
    from seamline.adapters.cli.query_lines import read_queries

    return user_errors(lambda: read_queries(source))


def _one_source(query: str | None) -> None:
    """Refuse a command that gives both QUERY and --queries, or neither."""
    from seamline.contracts import UserError

    if query is None:
        raise UserError(
            "give the text to search for (QUERY), or --queries FILE with one query a line"
        )
    raise UserError("give QUERY or --queries FILE, not both")
