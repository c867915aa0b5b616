"""The signatures docs/python.md writes out are the library's: the page left ``queries`` out of
``encode`` while documenting ``encode(texts, queries=True)`` a few lines below."""

from __future__ import annotations

import inspect
import re

from seamline.api import Embedder
from tests.docs.workdir import ROOT


def test_the_encode_signature_on_the_page_is_the_methods() -> None:
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"^`encode\((.*)\)`:$", page, re.M)
    parameters = list(inspect.signature(Embedder.encode).parameters.values())[1:]
    written = ", ".join(
        f"{p.name}={p.default!r}" if p.default is not p.empty else p.name for p in parameters
    )
    assert shown == written.replace("texts, ", "texts, *, ", 1)
