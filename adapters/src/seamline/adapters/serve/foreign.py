"""What clients of other embedding servers send, and where seamline does that job instead.

A team moving from text-embeddings-inference (TEI), sentence-transformers or another
vendor's API keeps its request bodies: fields such as TEI's ``normalize`` (true by
default there) or ``truncate`` change the vectors those servers answer, and a server
that ignored them answered other vectors than the client asked for, with a 200. Each
such field is refused here, saying where seamline's equivalent lives; fields that do
not change the vectors (a client's own bookkeeping) are still ignored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from seamline.adapters.serve.errors import ApiError
from seamline.adapters.serve.limits import Limits

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
_DIMENSION = (
    "the vectors have the model's dimension; OpenAI's 'dimensions' may name it, and a "
    "value equal to it is accepted here"
)
_DTYPE = (
    "the vectors are float32, sent as numbers or as base64 ('encoding_format'); quantize "
    "them in the client (docs/python.md, precision=); a float type is accepted here"
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
    "truncation": ("Voyage's", _TRUNCATE),
    "truncate_prompt_tokens": ("vLLM's", _TRUNCATE),
    "late_chunking": ("Jina's", "each input is embedded on its own, as the model makes it"),
    "output_dimension": ("Voyage's", _DIMENSION),
    "dimensionality": ("Nomic's", _DIMENSION),
    "output_dtype": ("Voyage's and Mistral's", _DTYPE),
    "embedding_type": ("Jina's", _DTYPE),
    "embedding_types": ("Cohere's", _DTYPE),
}
"""Fields of other servers' embedding requests that change the vectors they answer: who
sends each, and what seamline does instead (the message of its refusal)."""

Same = Callable[[object, Limits, int], bool]


def _keeps_the_start(value: object, limits: Limits, dimension: int) -> bool:
    """Truncation asked as this server does it: cut at the window, the start kept (TEI's
    and Voyage's ``true``, Cohere's ``END``), under ``--long-text truncate``."""
    return limits.long_text == "truncate" and (value is True or value == "END")


def _cuts_the_right(value: object, limits: Limits, dimension: int) -> bool:
    return limits.long_text == "truncate" and value in ("Right", "right")


def _the_dimension(value: object, limits: Limits, dimension: int) -> bool:
    return type(value) is int and value == dimension


def _floats(value: object, limits: Limits, dimension: int) -> bool:
    floats = ("float", "float32")
    return value in floats or (
        isinstance(value, list) and bool(value) and all(kind in floats for kind in value)
    )


def _off(value: object, limits: Limits, dimension: int) -> bool:
    return value is False


SAME: dict[str, Same] = {
    "truncate": _keeps_the_start,
    "truncation": _keeps_the_start,
    "truncation_direction": _cuts_the_right,
    "late_chunking": _off,
    "output_dimension": _the_dimension,
    "dimensionality": _the_dimension,
    "output_dtype": _floats,
    "embedding_type": _floats,
    "embedding_types": _floats,
}
"""For a field of :data:`FIELDS`, the values that ask for what this server does anyway:
accepted, as OpenAI's ``dimensions`` equal to the model's is. Voyage's client sends
``truncation: true`` with every request; refusing it refused every such client for a
value that changes nothing."""

INPUT_TYPES: dict[str, str] = {
    "passage": "NVIDIA NIM's",
    "search_document": "Cohere's",
    "search_query": "Cohere's",
}
"""Other APIs' ``input_type`` values that have an equivalent here, and whose they are."""

INPUT_TYPE_EQUIVALENTS = {"passage": "document", "search_document": "document"}
"""The seamline ``input_type`` for each of :data:`INPUT_TYPES` (``query`` where absent)."""


def refuse_foreign_fields(body: dict[str, Any], limits: Limits, dimension: int) -> None:
    """400 for the first field of :data:`FIELDS` the body gives a value that would change
    the vectors (``null`` is as left out, as the server reads its own fields; a value
    asking for what this server does anyway, :data:`SAME`, passes): naming the field,
    whose it is and what this server does instead. Before ``input`` is read, so that a
    TEI body of ``inputs`` alone hears of ``input`` rather than "'input' is required"."""
    for name, (whose, instead) in FIELDS.items():
        value = body.get(name)
        if value is None or ((same := SAME.get(name)) and same(value, limits, dimension)):
            continue
        fix = "rename it 'input'" if name == "inputs" else f"leave '{name}' out"
        raise ApiError(
            400,
            f"'{name}' ({whose}) is not a field of this server's /v1/embeddings: "
            f"{instead}. {fix[0].upper()}{fix[1:]}",
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
_ROOT = (
    "text-embeddings-inference's root route, where huggingface_hub's InferenceClient "
    "posts feature_extraction: this server answers OpenAI's POST /v1/embeddings, the "
    "texts in 'input', which that client cannot send; use an OpenAI client (docs/serving.md, "
    "Coming from text-embeddings-inference)"
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
    "/": _ROOT,
    "/v1": _ROOT,
    "/predict": _EMBED,
    "/health": "text-embeddings-inference's route: here GET /healthz",
}
"""text-embeddings-inference's routes, and where this server does their job: a client
moving from TEI was told only "no such endpoint"."""


def route_hint(path: str) -> str:
    """For a 404 of one of :data:`ROUTES`, where its job is done here; else ``""``."""
    hint = ROUTES.get(path.rstrip("/") or "/")
    return f"; {hint}" if hint else ""
