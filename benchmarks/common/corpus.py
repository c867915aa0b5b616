"""The documents every side of a benchmark reads, and where they came from.

Two corpora, both written by ``examples/corpus/make_corpus.py``:

* **the ``make run`` corpus** (``build/corpus``): :func:`select_corpus` copies its first
  N documents (sorted by name) into a run's own folder, writing the corpus first into
  that folder when ``build/corpus`` is missing;
* **the benchmark corpus** (``build/corpus-bench``, ``--members --min-chars 100``: 2,252
  real documents from 100 characters to 62 KB): :func:`bench_corpus` writes it on first
  use; :func:`corpus_texts` cuts its documents into texts of a given length, for the
  benchmarks that send texts rather than files (``serve_load``, ``encode_vs_run``).

:func:`read_documents` reads a folder as the ``text-files`` loader does.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common.paths import MAKE_CORPUS, ROOT
from seamline.adapters.measure.progress import Say, say_to_stderr

BUILT_CORPUS = ROOT / "build" / "corpus"
"""The corpus ``make run`` embeds (``make corpus`` writes it)."""
BENCH_CORPUS = ROOT / "build" / "corpus-bench"
"""The benchmark corpus: the standard library's members too, at least 100 characters each."""
BENCH_CORPUS_ARGS = ("--members", "--min-chars", "100")


@dataclass(frozen=True)
class Corpus:
    """The documents every side reads: a folder of ``*.txt`` files and where they came from."""

    path: Path
    documents: int
    source: str


def make_run_corpus(workdir: Path) -> tuple[Path, str]:
    """The corpus ``make run`` embeds: ``build/corpus`` if it is there, else one written
    into ``workdir/full-corpus`` by ``examples/corpus/make_corpus.py``; and which it was."""
    if any(BUILT_CORPUS.glob("*.txt")):
        return BUILT_CORPUS, f"reused {BUILT_CORPUS.relative_to(ROOT)}"
    source = workdir / "full-corpus"
    subprocess.run(
        [sys.executable, str(MAKE_CORPUS), str(source)], check=True, stdout=subprocess.DEVNULL
    )
    return source, f"built with {MAKE_CORPUS.relative_to(ROOT)}"


def select_corpus(docs: int, workdir: Path, say: Say = say_to_stderr) -> Corpus:
    """Copy the first ``docs`` documents (sorted by name) of the ``make run`` corpus.

    ``build/corpus`` if it is there, else ``examples/corpus/make_corpus.py`` writes one
    into ``workdir``. The copy goes to ``workdir/corpus``, so every side reads exactly it.
    """
    source, described = make_run_corpus(workdir)
    names = sorted(path.name for path in source.glob("*.txt"))
    if len(names) < docs:
        say(f"only {len(names)} documents in the corpus; using them all")
    target = workdir / "corpus"
    target.mkdir()
    for name in names[:docs]:
        shutil.copyfile(source / name, target / name)
    return Corpus(target, min(docs, len(names)), described)


def bench_corpus() -> Path:
    """``build/corpus-bench``, written by ``make_corpus.py --members --min-chars 100`` if it
    holds no document yet."""
    if not any(BENCH_CORPUS.glob("*.txt")):
        subprocess.run(
            [sys.executable, str(MAKE_CORPUS), *BENCH_CORPUS_ARGS, str(BENCH_CORPUS)],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return BENCH_CORPUS


def corpus_texts(count: int, chars: int) -> list[str]:
    """``count`` texts from the benchmark corpus, in its order (sorted by name): each
    document's text with its whitespace made single spaces, cut to its first ``chars``
    characters (at the last space before them, where there is one).

    Past the corpus's last document the texts begin again from its first, so more texts
    than documents repeat them in the same order (no side keeps anything between texts,
    so a repeated text costs what it cost the first time).
    """
    texts = []
    for path in sorted(bench_corpus().glob("*.txt"))[:count]:
        text = " ".join(path.read_text(encoding="utf-8").split())
        if len(text) > chars:
            text = text[: text.rfind(" ", 0, chars) if " " in text[:chars] else chars]
        texts.append(text)
    return [texts[k % len(texts)] for k in range(count)]


def first_of_bench_corpus(docs: int | None, workdir: Path) -> tuple[Path, int]:
    """The benchmark corpus, or a copy of its first ``docs`` documents in ``workdir/corpus``;
    and how many documents that is."""
    files = sorted(bench_corpus().glob("*.txt"))
    if docs is None:
        return BENCH_CORPUS, len(files)
    chosen = workdir / "corpus"
    chosen.mkdir()
    for path in files[:docs]:
        shutil.copy2(path, chosen / path.name)
    return chosen, min(docs, len(files))


def read_documents(corpus: Path) -> Iterator[Any]:
    """The corpus as the ``text-files`` loader reads it: sorted names, UTF-8, id = name."""
    from seamline.contracts import Document

    for path in sorted(corpus.glob("*.txt")):
        yield Document(id=path.name, text=path.read_bytes().decode("utf-8"))
