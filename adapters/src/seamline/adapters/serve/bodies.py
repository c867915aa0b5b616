"""Request bodies: read within a byte limit, parsed as JSON, checked field by field.

Everything a client sends is untrusted: the body is counted as it arrives (a
``Content-Length`` is not believed, nor needed), parsed as strict JSON (no ``NaN``; a
nesting too deep to parse is a 400, not a crash), and each field is checked before
anything is queued, with a message that names the field (``param``) and, for a limit,
the option that sets it.

A refused field or value is a 400, as OpenAI answers it (its clients raise
``BadRequestError`` for it: a 422 or 413 was ``UnprocessableEntityError`` or a bare
``APIStatusError``, which ``except openai.BadRequestError`` never caught), a limit on
the texts included; 413 is only the body's byte limit, a bound of HTTP's own.
"""

from __future__ import annotations

import json
import math
import sys
from dataclasses import dataclass
from typing import Any, Literal

from starlette.requests import Request

from seamline.adapters.search import MAX_K, unicode_problem
from seamline.adapters.serve.budget import Held
from seamline.adapters.serve.errors import ApiError
from seamline.adapters.serve.foreign import input_type_hint, refuse_foreign_fields
from seamline.adapters.serve.limits import Limits
from seamline.contracts.documents import blank_kind
from seamline.contracts.untrusted import is_count

MAX_WHERE_CHARS = 4096
"""The longest ``where`` filter ``/v1/search`` accepts."""


@dataclass(frozen=True, slots=True)
class EmbeddingsRequest:
    texts: list[str]
    encoding_format: Literal["float", "base64"]
    characters: int
    queries: bool = False
    """``input_type: "query"``: embed the texts as search queries (the model's query side)."""
    single: bool = False
    """``input`` was one string, not an array: an error names it ``input``, not ``input[0]``."""
    model: str | None = None
    """The ``model`` the client named: not checked, only logged when it is not the one
    served (:class:`~.catalog.ModelNames`)."""


DEFAULT_K = 10
"""How many hits a ``/v1/search`` body without ``k`` asks for."""


@dataclass(frozen=True, slots=True)
class SearchRequest:
    query: str
    k: int
    where: str | None
    per_document: bool = False
    """The best window of each of ``k`` documents, not the ``k`` best windows."""


async def read_body(request: Request, limit: int, held: Held | None = None) -> bytes:
    """The body, counted as it arrives: 413 past ``limit`` bytes, 415 if it is compressed;
    its bytes held in ``held``'s budget (429 past it), the declared ones before any is read."""
    _uncompressed(request.headers.get("content-encoding", ""))
    declared = request.headers.get("content-length", "")
    if is_count(declared) and int(declared) > limit:  # a header the client wrote
        raise _too_large(limit)
    if held is not None and is_count(declared):
        held.cover(int(declared))
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        if held is not None:
            held.cover(size)
        chunks.append(chunk)
    return b"".join(chunks)


def _uncompressed(encoding: str) -> None:
    """415 for a compressed body: a gzip body was a 400 "not valid JSON ('utf-8' codec
    can't decode byte 0x8b ...)", which did not say what to change."""
    codings = [coding.strip().lower() for coding in encoding.split(",")]
    if any(coding not in ("", "identity") for coding in codings):
        shown = encoding.strip()[:60]
        raise ApiError(
            415,
            f"compressed request bodies are not supported (Content-Encoding: {shown}): "
            "send the body uncompressed",
            code="unsupported_content_encoding",
        )


def parse_json(body: bytes) -> Any:
    """``body`` parsed as strict JSON; 400 if it is not JSON.

    Objects and numbers are made by functions written in Python, as ``json`` itself would
    make them: a thread parsing a large body (:mod:`.checking`) then lets the event loop
    run at each of them, where ``json.loads``'s C code alone holds the GIL to its end
    (a 16 MiB body of ``{}`` or of ``1``: 0.8 s in which no client was answered).
    """
    try:
        return json.loads(
            body,
            object_pairs_hook=_json_object,
            parse_int=_integer,
            parse_float=_float,
            parse_constant=_no_constant,
        )
    except _TooManyDigits as err:
        raise ApiError(400, str(err), code="invalid_json") from None
    except (ValueError, RecursionError) as err:
        reason = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise ApiError(
            400, f"the request body is not valid JSON ({reason})", code="invalid_json"
        ) from None


def _json_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(pairs)  # as json's own: the last of a repeated key wins


class _TooManyDigits(ValueError):
    """An integer longer than Python converts (``sys.get_int_max_str_digits()``)."""


def _integer(digits: str) -> int:
    """The integer; past Python's bound on the digits it converts (4,300), a refusal that
    says so: Python's own message told the client to call ``sys.set_int_max_str_digits()``,
    which only the server can."""
    try:
        return int(digits)
    except ValueError:
        count = len(digits.lstrip("-"))
        raise _TooManyDigits(
            f"the request body holds an integer of {count:,} digits: integers of more than "
            f"{sys.get_int_max_str_digits():,} digits are refused"
        ) from None


def _float(number: str) -> float:
    return float(number)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _too_large(limit: int) -> ApiError:
    return ApiError(
        413,
        f"the request body is larger than {limit:,} bytes, this server's limit "
        "(--max-request-bytes): send fewer or shorter texts per request",
        code="request_too_large",
    )


def json_type(value: object) -> str:
    """The JSON name of a parsed value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    names: dict[type, str] = {str: "string", list: "array", dict: "object"}
    return names.get(type(value), type(value).__name__)


def embeddings_request(data: Any, limits: Limits, dimension: int) -> EmbeddingsRequest:
    """A ``/v1/embeddings`` body checked (see docs/serving.md for what each field does)."""
    body = _object(data, "input")
    refuse_foreign_fields(body, limits, dimension)  # TEI's normalize, inputs...: not ignored
    texts = _texts(body.get("input", _MISSING), limits)
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise _invalid("model", f"'model' must be a string, not {json_type(model)}")
    encoding: Literal["float", "base64"]
    asked = body.get("encoding_format")
    if asked is None or asked == "float":
        encoding = "float"
    elif asked == "base64":
        encoding = "base64"
    else:
        shown = json.dumps(asked)[:60]
        raise _invalid(
            "encoding_format", f'\'encoding_format\' must be "float" or "base64", not {shown}'
        )
    _dimensions(body.get("dimensions"), dimension)
    characters = sum(len(text) for text in texts)
    _within_the_queue(len(texts), characters, limits)
    return EmbeddingsRequest(
        texts,
        encoding,
        characters,
        _input_type(body.get("input_type")),
        single=isinstance(body.get("input"), str),
        model=model,
    )


def _within_the_queue(texts: int, characters: int, limits: Limits) -> None:
    """400 for a request more than the whole queue holds: a 429 would ask for a retry
    that never succeeds, however empty the queue. The command refuses such settings
    (:meth:`~.limits.Limits.problems`); limits built in code may still have them."""
    for count, bound, what, option in (
        (texts, limits.max_queue_texts, "texts", "--max-queue-texts"),
        (characters, limits.max_queue_chars, "characters", "--max-queue-chars"),
    ):
        if count > bound:
            raise ApiError(
                400,
                f"'input' has {count:,} {what}, more than this server's whole queue holds, "
                f"{bound:,} ({option}): send fewer or shorter texts per request",
                code="request_too_large",
                param="input",
            )


def _dimensions(asked: Any, dimension: int) -> None:
    """400 unless ``dimensions`` is absent or the model's own: a value that is no whole
    number (``"384"``, ``true``, ``1e400``) is told so, not told to give what it gave."""
    if asked is None:
        return
    if isinstance(asked, float) and math.isfinite(asked) and asked.is_integer():
        asked = int(asked)  # 384.0, as for 'k'
    if isinstance(asked, bool) or not isinstance(asked, int):
        shown = json.dumps(asked)[:60]  # 1e400 reads as Infinity
        raise _invalid(
            "dimensions",
            f"'dimensions' must be a whole number (this model's is {dimension}), "
            f"not {json_type(asked)} {shown}",
        )
    if asked != dimension:
        raise _invalid(
            "dimensions",
            f"this model makes vectors of {dimension} dimensions and cannot shorten them: "
            f"leave 'dimensions' out or give {dimension}",
        )


INPUT_TYPES = {"document": False, "query": True}
"""``input_type``'s values: whether the texts are embedded as search queries."""


def _input_type(asked: Any) -> bool:
    """Whether ``input_type`` asks for queries; documents when it is absent or null."""
    if asked is None:
        return False
    if isinstance(asked, str) and asked in INPUT_TYPES:
        return INPUT_TYPES[asked]
    shown = json.dumps(asked)[:60]
    raise _invalid(
        "input_type",
        f'\'input_type\' must be "document" (the default) or "query", not {shown}'
        f"{input_type_hint(asked)}",
    )


_MISSING = object()


def _object(data: Any, required: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _invalid(
            None, f"the request body must be a JSON object with {required!r}, not {json_type(data)}"
        )
    return data


def _texts(raw: Any, limits: Limits) -> list[str]:
    if raw is _MISSING:
        raise _invalid("input", "'input' is required: a string or an array of strings")
    if isinstance(raw, str):
        texts = [raw]
    elif isinstance(raw, list):
        if not raw:
            raise _invalid("input", "'input' is an empty array: give at least one text", "empty")
        if _token_ids(raw):  # one text's token ids, as OpenAI's API takes them
            raise _not_text("input", raw)
        if len(raw) > limits.max_inputs:
            raise ApiError(
                400,
                f"'input' has {len(raw):,} texts; this server embeds at most "
                f"{limits.max_inputs:,} per request (--max-inputs): split the request",
                code="too_many_inputs",
                param="input",
            )
        for index, text in enumerate(raw):
            if not isinstance(text, str):
                raise _not_text(f"input[{index}]", text)
        texts = raw
    else:
        raise _not_text("input", raw)
    for index, text in enumerate(texts):
        where = "input" if isinstance(raw, str) else f"input[{index}]"
        if (what := blank_kind(text)) is not None:  # as a run skips such a document
            raise _invalid(where, f"{where} is {what}: there is nothing to embed", "empty")
        if len(text) > limits.max_input_chars:
            raise ApiError(
                400,
                f"{where} has {len(text):,} characters; this server takes at most "
                f"{limits.max_input_chars:,} per text (--max-input-chars)",
                code="input_too_long",
                param=where,
            )
    return texts


TOKEN_IDS_HINT = (
    "LangChain's OpenAIEmbeddings sends token ids unless it is given "
    "check_embedding_ctx_length=False (it tokenizes with tiktoken by default)"
)
"""Who sends token ids in practice, and the setting that makes it send the text."""


def _token_ids(value: object) -> bool:
    """Whether ``value`` is an array of integers: token ids, as OpenAI's API takes them."""
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(item, int) and not isinstance(item, bool) for item in value)
    )


def _array_kind(value: list[Any]) -> str:
    """What an array is, for a message: ``an array of strings``, ``an empty array``."""
    kinds = sorted({json_type(item) for item in value})
    if not kinds:
        return "an empty array"
    if len(kinds) == 1:
        return f"an array of {kinds[0]}s"
    return f"an array of {', '.join(kinds[:-1])} and {kinds[-1]} values"


def _not_text(where: str, value: object) -> ApiError:
    """The refusal of ``value`` where a text was expected, saying what it is.

    Token ids only for an array of integers: ``["a", ["b"]]`` was told "input[1] is array:
    token ids are not accepted here", which it is not. For token ids, the hint that helps
    their usual sender (LangChain's ``OpenAIEmbeddings``, which tokenizes by default).
    """
    shown = "'input'" if where == "input" else where
    if _token_ids(value):
        return _invalid(
            where,
            f"{shown} is an array of integers: token ids are not accepted here, send the "
            "text itself (this server tokenizes with the pipeline's own model). "
            f"{TOKEN_IDS_HINT}",
        )
    if isinstance(value, list):
        return _invalid(
            where,
            f"{shown} is {_array_kind(value)}, not a string: 'input' is a string or an array "
            "of strings, and arrays are not accepted inside it",
        )
    if where == "input":  # the field itself: an array of strings is valid too
        return _invalid(
            where, f"'input' must be a string or an array of strings, not {json_type(value)}"
        )
    return _invalid(where, f"{where} must be a string, not {json_type(value)}")


def _invalid(param: str | None, message: str, code: str = "invalid_value") -> ApiError:
    return ApiError(400, message, code=code, param=param)


def search_request(data: Any, limits: Limits) -> SearchRequest:
    """A ``/v1/search`` body: ``query`` (a text), ``k`` (1 to 10,000, default 10), ``where``,
    ``per_document`` (true or false, default false)."""
    body = _object(data, "query")
    query = body.get("query", _MISSING)
    if query is _MISSING:
        raise _invalid("query", "'query' is required: the text to search for")
    if not isinstance(query, str):
        raise _invalid("query", f"'query' must be a string, not {json_type(query)}")
    if (what := blank_kind(query)) is not None:
        raise _invalid("query", f"'query' is {what}: there is nothing to search for", "empty")
    if (problem := unicode_problem(query)) is not None:  # a lone surrogate
        raise _invalid("query", problem)
    if len(query) > limits.max_input_chars:
        raise ApiError(
            400,
            f"'query' has {len(query):,} characters; this server takes at most "
            f"{limits.max_input_chars:,} per text (--max-input-chars)",
            code="input_too_long",
            param="query",
        )
    k = body.get("k", DEFAULT_K)
    if isinstance(k, float) and math.isfinite(k) and k.is_integer():
        k = int(k)
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise _invalid("k", f"'k' (how many results) is a whole number from 1 to {MAX_K:,}")
    where = body.get("where")
    if where is not None and not isinstance(where, str):
        raise _invalid("where", f"'where' must be a string (a SQL filter), not {json_type(where)}")
    if where is not None and len(where) > MAX_WHERE_CHARS:
        raise _invalid("where", f"'where' is longer than {MAX_WHERE_CHARS:,} characters")
    per_document = body.get("per_document")
    if per_document is not None and not isinstance(per_document, bool):  # "false" is not false
        raise _invalid(
            "per_document", f"'per_document' must be true or false, not {json_type(per_document)}"
        )
    return SearchRequest(query, k, where or None, bool(per_document))
