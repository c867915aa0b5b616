"""The signatures docs/python.md writes out are the library's: the page left ``queries`` out of
``encode`` while documenting ``encode(texts, queries=True)`` a few lines below."""

from __future__ import annotations

import dataclasses
import inspect
import re

import seamline.api
from seamline.api import Embedder, Pipeline
from seamline.contracts import RunCounts
from tests.docs.workdir import ROOT


def test_the_encode_signature_on_the_page_is_the_methods() -> None:
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"^`encode\((.*)\)`:$", page, re.M)
    parameters = list(inspect.signature(Embedder.encode).parameters.values())[1:]
    written = ", ".join(
        f"{p.name}={p.default!r}" if p.default is not p.empty else p.name for p in parameters
    )
    assert shown == written.replace("texts, ", "texts, *, ", 1)


def test_the_page_names_what_an_application_can_use() -> None:
    # python.md left out restart= (and ResumeRefused, which it raises), max_wait=,
    # abandon() and three of RunCounts' fields: an application found them in the source.
    page = (ROOT / "docs" / "python.md").read_text(encoding="utf-8")
    names = set(seamline.api.__all__) | {f.name for f in dataclasses.fields(RunCounts)}
    for function in (Pipeline.run, Embedder.__init__, Embedder.from_pipeline):
        names |= set(inspect.signature(function).parameters) - {"self"}
    names |= {name for name in vars(Embedder) if not name.startswith("_")}
    # from_resolved takes seamline.core's types (a manifest's model side), for seamline's
    # own use. (run()'s extra_monitors was left out too, though it is a keyword as well.)
    names -= {"from_resolved"}
    unnamed = [n for n in sorted(names) if not re.search(rf"`[^`\n]*\b{n}\b[^`\n]*`", page)]
    assert unnamed == []


def test_the_run_signature_in_architecture_md_is_the_methods() -> None:
    # architecture.md wrote run(extra_monitors=(), resume=False): restart= was missing.
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"^`Pipeline\.from_yaml\(.*\)\.run\((.*)\)`\.$", page, re.M)
    parameters = list(inspect.signature(Pipeline.run).parameters.values())[1:]
    written = [f"{p.name}={p.default!r}" for p in parameters]
    first_keyword = next(
        k for k, p in enumerate(parameters) if p.kind is inspect.Parameter.KEYWORD_ONLY
    )
    written.insert(first_keyword, "*")
    assert shown == ", ".join(written)
