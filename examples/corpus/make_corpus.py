"""Write a real text corpus from the documentation that ships with Python itself.

The example pipelines and tests need prose that nobody on the team wrote, so that
they exercise realistic lengths, vocabulary and Unicode rather than text shaped
to fit the code. Python's own documentation is such a corpus, is already on every
machine, and carries a clear licence (the PSF licence). This script writes:

* ``pydoc-<topic>.txt`` for each help topic of the language reference
  (``pydoc_data.topics``, the text ``help("if")`` shows),
* ``module-<name>.txt`` for each public standard-library module or submodule
  (``email.mime.text`` say) whose docstring has at least ``--min-chars``
  characters, and
* ``builtin-<name>.txt`` for each built-in function or type whose docstring is
  as long (``help(open)``), and
* with ``--members``, ``member-<module>.<name>.txt`` for each public function,
  class and method a standard-library module defines whose docstring is as long
  (the benchmark corpus: some thousands of documents, mostly short).

Submodules and built-ins are included because top-level modules and topics
alone come to fewer than two hundred documents, and fewer still on newer Pythons
that dropped deprecated modules.

Output is deterministic for a given Python version, and the script is idempotent:
it deletes the ``*.txt`` files already in OUTDIR before writing. It uses the
standard library only::

    python examples/corpus/make_corpus.py examples/corpus/docs
"""

from __future__ import annotations

import argparse
import builtins
import contextlib
import importlib
import inspect
import io
import pkgutil
import re
import sys
import warnings
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from collections.abc import Iterator
    from types import ModuleType

# Modules whose import does something (opens a browser, prints, touches the
# terminal or a display) or that are tools rather than libraries.
# sys.stdlib_module_names lists top-level names only, so exact names suffice.
SKIP: frozenset[str] = frozenset(
    (
        "antigravity",
        "this",
        "idlelib",
        "tkinter",
        "turtle",
        "turtledemo",
        "lib2to3",
        "ensurepip",
        "readline",
        "test",
        # Deprecated, and replaced by setuptools' copy where setuptools is installed: its
        # docstrings would depend on the environment, not on the Python version.
        "distutils",
    )
)
# Packages whose submodules are generated boilerplate (one codec each), and test suites.
NO_SUBMODULES: frozenset[str] = frozenset(("encodings",))
TEST_PACKAGES: frozenset[str] = frozenset(("test", "tests", "idle_test"))

DEFAULT_MIN_CHARS = 200


def safe_name(name: str) -> str:
    """A file-name-safe form of a topic or module name."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def normalise(text: str) -> str:
    """Clean indentation and trailing spaces, end with one newline: stable bytes on disk."""
    lines = inspect.cleandoc(text).splitlines()
    return "\n".join(line.rstrip() for line in lines).strip() + "\n"


def topic_documents() -> dict[str, str]:
    """The language-reference help topics, keyed by file name."""
    from pydoc_data.topics import topics

    return {f"pydoc-{safe_name(topic)}.txt": normalise(text) for topic, text in topics.items()}


def import_quietly(name: str) -> ModuleType | None:
    """Import the standard-library module ``name``, or return None if it cannot be.

    Imports with warnings silenced and standard streams captured, so deprecated or
    chatty modules neither clutter the output nor stop the script.
    """
    sink = io.StringIO()
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
    ):
        warnings.simplefilter("ignore")
        try:
            return importlib.import_module(name)
        except Exception:  # missing C extension, wrong platform, ...
            return None


def public_submodules(name: str, module: ModuleType) -> list[str]:
    """Names of the public submodules of package ``module``, sorted (empty for a module)."""
    path = getattr(module, "__path__", None)
    if path is None or name in NO_SUBMODULES:
        return []
    return sorted(
        f"{name}.{info.name}"
        for info in pkgutil.iter_modules(path)
        # "_" also excludes __main__, whose import would run a program.
        if not info.name.startswith("_") and info.name not in TEST_PACKAGES
    )


def stdlib_modules() -> Iterator[tuple[str, ModuleType]]:
    """Every public standard-library module and submodule that imports, depth first, sorted."""
    pending = [
        name
        for name in sorted(sys.stdlib_module_names, reverse=True)
        if not name.startswith("_") and name not in SKIP
    ]
    while pending:
        name = pending.pop()
        module = import_quietly(name)
        if module is None:
            continue
        yield name, module
        pending.extend(reversed(public_submodules(name, module)))


def module_documents(min_chars: int) -> dict[str, str]:
    """Public standard-library module docstrings of at least ``min_chars`` characters."""
    documents: dict[str, str] = {}
    for name, module in stdlib_modules():
        doc = getattr(module, "__doc__", None)
        if isinstance(doc, str):
            text = normalise(doc)
            if len(text) >= min_chars:
                documents[f"module-{safe_name(name)}.txt"] = text
    return documents


def member_documents(min_chars: int) -> dict[str, str]:
    """Docstrings of the public functions and classes each standard-library module defines.

    Thousands of documents, most of them a paragraph long: the short end of a real
    corpus, next to the long module and topic texts. A name a module only imports
    from elsewhere is left to the module that defines it, so nothing is written twice.
    """
    documents: dict[str, str] = {}

    def add(qualified: str, value: object) -> None:
        doc = getattr(value, "__doc__", None)
        if isinstance(doc, str) and len(text := normalise(doc)) >= min_chars:
            documents[f"member-{safe_name(qualified)}.txt"] = text

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # typing.io and friends warn when looked at
        for name, module in stdlib_modules():
            for member, value in sorted(vars(module).items()):
                defined_here = getattr(value, "__module__", None) == name
                if member.startswith("_") or not defined_here:
                    continue
                if inspect.isfunction(value):
                    add(f"{name}.{member}", value)
                elif inspect.isclass(value):
                    add(f"{name}.{member}", value)
                    for method, function in sorted(vars(value).items()):
                        if not method.startswith("_") and inspect.isfunction(function):
                            add(f"{name}.{member}.{method}", function)
    return documents


def builtin_documents(min_chars: int) -> dict[str, str]:
    """Docstrings of the public built-in functions and types of at least ``min_chars``."""
    documents: dict[str, str] = {}
    for name, value in sorted(vars(builtins).items()):
        doc = getattr(value, "__doc__", None)
        if name.startswith("_") or not callable(value) or not isinstance(doc, str):
            continue
        text = normalise(doc)
        if len(text) >= min_chars:
            documents[f"builtin-{safe_name(name)}.txt"] = text
    return documents


def write_corpus(
    outdir: Path, min_chars: int = DEFAULT_MIN_CHARS, members: bool = False
) -> tuple[int, int]:
    """Replace OUTDIR's ``*.txt`` with the corpus; return (documents, characters)."""
    documents = {
        **topic_documents(),
        **module_documents(min_chars),
        **builtin_documents(min_chars),
        **(member_documents(min_chars) if members else {}),
    }
    outdir.mkdir(parents=True, exist_ok=True)
    for old in outdir.glob("*.txt"):
        old.unlink()
    for file_name in sorted(documents):
        (outdir / file_name).write_text(documents[file_name], encoding="utf-8", newline="\n")
    return len(documents), sum(len(text) for text in documents.values())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("outdir", type=Path, help="directory to (re)write the *.txt files in")
    parser.add_argument(
        "--min-chars",
        type=int,
        default=DEFAULT_MIN_CHARS,
        help=f"shortest module or built-in docstring kept (default {DEFAULT_MIN_CHARS})",
    )
    parser.add_argument(
        "--members",
        action="store_true",
        help="also the docstring of every public function and class the standard library "
        "defines (some thousands more, mostly short: the benchmark corpus)",
    )
    args = parser.parse_args(argv)
    count, characters = write_corpus(args.outdir, args.min_chars, args.members)
    print(f"wrote {count} documents ({characters} characters) to {args.outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
