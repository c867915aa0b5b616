"""What clients of other embedding servers send, and where seamline does that job instead.

A team moving from text-embeddings-inference (TEI), sentence-transformers or another
vendor's API keeps its request bodies: fields such as TEI's ``normalize`` (true by
default there) or ``truncate`` change the vectors those servers answer, and a server
that ignored them answered other vectors than the client asked for, with a 200. Each
such field is refused here, saying where seamline's equivalent lives; fields that do
not change the vectors (a client's own bookkeeping) are still ignored.
"""

from __future__ import annotations

from typing import Any

from seamline.adapters.serve.errors import ApiError

_NORMALIZE = (
    "the vectors are the pipeline's model's own: unit length where the model normalises "
    "(the model setting normalize, model.with.normalize in the pipeline file; "
    "docs/pipelines.md), as the default MiniLM does"
)
_TRUNCATE = (
    "a text longer than the model's window (model.with.max_length tokens) is embedded as "
    "the server's --long-text says: truncate (the default) keeps its first window, from "
    "its start; mean averages every window; no text is refused for its length "
    "(docs/serving.md)"
)
_PREFIX = (
    "prefixes are the pipeline's: model.with.prefix.document before every input, "
    "model.with.prefix.query before queries (docs/models.md); send "
    '"input_type": "query" to embed the inputs as queries'
)

FIELDS: dict[str, tuple[str, str]] = {
    "inputs": (
        "text-embeddings-inference's name for the texts",
        "this endpoint takes 'input', a string or an array of strings",
    ),
    "normalize": ("text-embeddings-inference's", _NORMALIZE),
    "normalized": ("Jina's", _NORMALIZE),
    "truncate": ("text-embeddings-inference's and Cohere's", _TRUNCATE),
    "truncation_direction": ("text-embeddings-inference's", _TRUNCATE),
    "prompt_name": ("text-embeddings-inference's and sentence-transformers'", _PREFIX),
    "prompt": ("sentence-transformers'", _PREFIX),
    "instruction": ("an instruction model's", _PREFIX),
    "task": ("Jina's", _PREFIX),
}
"""Fields of other servers' embedding requests that change the vectors they answer: who
sends each, and what seamline does instead (the message of its refusal)."""

INPUT_TYPES: dict[str, str] = {
    "passage": "NVIDIA NIM's",
    "search_document": "Cohere's",
    "search_query": "Cohere's",
}
"""Other APIs' ``input_type`` values that have an equivalent here, and whose they are."""

INPUT_TYPE_EQUIVALENTS = {"passage": "document", "search_document": "document"}
"""The seamline ``input_type`` for each of :data:`INPUT_TYPES` (``query`` where absent)."""


def refuse_foreign_fields(body: dict[str, Any]) -> None:
    """400 for the first field of :data:`FIELDS` the body gives a value (``null`` is as
    left out, as the server reads its own fields): naming the field, whose it is and
    what this server does instead. Before ``input`` is read, so that a TEI body of
    ``inputs`` alone hears of ``input`` rather than "'input' is required"."""
    for name, (whose, instead) in FIELDS.items():
        if body.get(name) is not None:
            raise ApiError(
                400,
                f"'{name}' ({whose}) is not a field of this server's /v1/embeddings: "
                f"{instead}. Leave '{name}' out",
                code="unsupported_field",
                param=name,
            )


def input_type_hint(asked: object) -> str:
    """For another API's ``input_type`` value, which of this server's it is; else ``""``."""
    if not isinstance(asked, str) or asked not in INPUT_TYPES:
        return ""
    ours = INPUT_TYPE_EQUIVALENTS.get(asked, "query")
    return f' ({INPUT_TYPES[asked]} "{asked}" is "{ours}" here)'


_EMBED = (
    "text-embeddings-inference's route: here POST /v1/embeddings, the texts in 'input' "
    "(not 'inputs'), answered in OpenAI's shape (docs/serving.md, Coming from "
    "text-embeddings-inference)"
)
ROUTES: dict[str, str] = {
    "/embed": _EMBED,
    "/embed_all": f"{_EMBED}; one vector per text, never one per token",
    "/embed_sparse": f"{_EMBED}; dense vectors only",
    "/info": (
        "text-embeddings-inference's route: here GET /v1/models names the model served "
        "and GET /healthz says whether it is ready, with its dimension"
    ),
    "/tokenize": (
        "text-embeddings-inference's route: this server does not tokenize on request; "
        "POST /v1/embeddings counts each request's tokens in usage.prompt_tokens"
    ),
    "/decode": "text-embeddings-inference's route: this server does not decode tokens",
}
"""text-embeddings-inference's routes, and where this server does their job: a client
moving from TEI was told only "no such endpoint"."""


def route_hint(path: str) -> str:
    """For a 404 of one of :data:`ROUTES`, where its job is done here; else ``""``."""
    hint = ROUTES.get(path.rstrip("/") or "/")
    return f"; {hint}" if hint else ""
