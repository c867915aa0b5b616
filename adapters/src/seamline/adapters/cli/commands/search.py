"""``seamline search``: the documents of an index nearest to a query."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from seamline.adapters.cli import loading
from seamline.adapters.cli.errors import user_errors
from seamline.adapters.cli.options import FormatOption, output_format

IndexArg = Annotated[
    Path,
    typer.Argument(
        help="An index a pipeline wrote: a LanceDB table (out/emb.lance), a Parquet, JSON "
        "Lines or .npy file, or its .manifest.json.",
        metavar="INDEX",
        show_default=False,
    ),
]
Query = Annotated[
    str, typer.Argument(help="The text to search for.", metavar="QUERY", show_default=False)
]
TopK = Annotated[
    int, typer.Option("--top-k", "-k", help="How many results (1 to 10,000).", metavar="N")
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


def search(
    index: IndexArg,
    query: Query,
    k: TopK = 5,
    attention: AttentionOption = None,
    exact: Exact = False,
    where: Where = None,
    format_: FormatOption = "text",
) -> None:
    """Embed QUERY with the index's own model and attention; print the nearest documents.

    INDEX is what a sink published (or its .manifest.json): the manifest beside it
    names the model, the attention and where every file or table is. A LanceDB
    table is searched through its vector index when it has one; files are scanned.
    """
    from seamline.adapters.cli.render import as_json, listing
    from seamline.adapters.logging_setup import configure_logging
    from seamline.adapters.search import check_k, find

    as_text = output_format(format_) == "text"
    configure_logging(level="warning")
    user_errors(lambda: check_k(k, "-k"))
    found = user_errors(
        lambda: find(loading.registry(), index, query, k, attention, exact=exact, where=where)
    )
    (listing if as_text else as_json).search_hits(query, found)
