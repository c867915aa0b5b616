"""A corpus of hostile documents, written at test time, with the outcome each must have.

Every kind is something a real corpus holds sooner or later, or an attacker plants:
files that are not files, bytes that are not text, JSON that is not an object, ids
that collide, inputs built to exhaust memory or recursion. :func:`build` writes
them under a directory (nothing binary is committed) and returns one :class:`Case`
per kind, saying which loader reads it, what must become of it and what the
recorded reason must say. The tests in this folder run the corpus and hold the run
to those outcomes; :mod:`tests.hostile.outcomes` renders the same run as the table
in ``docs/reliability.md``.

Outcomes: ``written`` (it has records in the output), ``dead-lettered`` (an error
record of stage ``load`` or ``prepare``), ``skipped`` (an error record of stage
``skip``: set aside by a rule the pipeline chose), ``not read`` (not an item at all:
a directory that matches the glob, a blank line).
"""

from __future__ import annotations

import json
import os
import random
from dataclasses import dataclass, field
from pathlib import Path

WRITTEN = "written"
DEAD = "dead-lettered"
SKIPPED = "skipped"
NOT_READ = "not read"

MAX_BYTES = 2_000_000
"""The corpus pipelines' ``max_bytes``: above the 1 MB line, below the 3 MB document."""

TINY = 3000
"""How many tiny documents each loader reads (the "huge number of tiny documents")."""

TOKENIZER_FAILURE = "boom"
"""The text the fixture model (``tests.core.toy.ToyModel``) raises on in ``prepare``."""


@dataclass(frozen=True)
class Case:
    """One hostile kind: what it is, where it is, what must become of it."""

    kind: str
    loader: str
    """``text-files``, ``jsonl`` or ``parquet``."""
    ids: tuple[str, ...]
    """The ids its items have in the output or the errors file (none when ``not read``)."""
    outcome: str
    reason: str = ""
    """A part of the recorded reason (for a set-aside item)."""
    stage: str = ""
    """The recorded stage (for a set-aside item)."""
    line: int | None = None
    """The jsonl line it is on: an error record must name it, so it can be re-run."""


@dataclass
class Corpus:
    """What :func:`build` wrote: the three inputs and the cases in them."""

    files_root: Path
    jsonl_path: Path
    parquet_root: Path
    cases: list[Case] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """Kinds left out on this machine, and why (an unreadable file, when running as root)."""

    def of(self, loader: str) -> list[Case]:
        return [case for case in self.cases if case.loader == loader]

    def items(self, loader: str) -> int:
        """How many items the loader must yield: every id of every case that is read."""
        return sum(len(case.ids) for case in self.of(loader) if case.outcome != NOT_READ)


def build(directory: Path) -> Corpus:
    """Write the hostile corpus under ``directory``; the cases, in the order written."""
    corpus = Corpus(directory / "files", directory / "docs.jsonl", directory / "parquet")
    _text_files(corpus, directory)
    _jsonl(corpus)
    _parquet(corpus)
    return corpus


# -- text-files ---------------------------------------------------------------------------


def _text_files(corpus: Corpus, directory: Path) -> None:
    root = corpus.files_root
    root.mkdir(parents=True)
    outside = directory / "outside.txt"
    outside.write_text("a file the corpus must not pull in")
    add = corpus.cases.append
    t = "text-files"

    def file(name: str, data: bytes) -> None:
        (root / name).write_bytes(data)

    file("plain.txt", b"an ordinary document")
    add(Case("an ordinary file", t, ("plain.txt",), WRITTEN))
    file("empty.txt", b"")
    add(Case("an empty file", t, ("empty.txt",), SKIPPED, "empty", "skip"))
    file("whitespace.txt", b" \n\t \r\n")
    add(Case("a whitespace-only file", t, ("whitespace.txt",), SKIPPED, "empty", "skip"))
    file("one-mb-line.txt", b"w " * 500_000)
    add(Case("a 1 MB single line", t, ("one-mb-line.txt",), WRITTEN))
    file("too-big.txt", b"x" * (MAX_BYTES + 1_000_000))
    add(Case("a file over max_bytes", t, ("too-big.txt",), DEAD, "larger than max_bytes", "load"))
    file("invalid-utf8.txt", b"caf\xe9 au lait")
    add(Case("invalid UTF-8", t, ("invalid-utf8.txt",), DEAD, "not valid utf-8", "load"))
    file("nul-bytes.txt", b"before\x00after")
    add(Case("NUL bytes in text", t, ("nul-bytes.txt",), WRITTEN))
    file("utf16.txt", "a document saved as UTF-16, with no byte-order mark".encode("utf-16-le"))
    add(Case("UTF-16 without a byte-order mark", t, ("utf16.txt",), DEAD, "UTF-16-LE", "load"))
    file("binary.txt", random.Random(0).randbytes(4096))
    add(Case("a binary file", t, ("binary.txt",), DEAD, "not valid utf-8", "load"))
    file("special-tokens.txt", b"[CLS] [SEP] [PAD]")
    add(Case("only special tokens", t, ("special-tokens.txt",), WRITTEN))
    file("tokenizer-failure.txt", TOKENIZER_FAILURE.encode())
    add(
        Case(
            "a tokenizer failure", t, ("tokenizer-failure.txt",), DEAD, "prepare failed", "prepare"
        )
    )

    (root / "loop.txt").symlink_to("loop.txt")
    add(Case("a symlink loop", t, ("loop.txt",), DEAD, "symbolic links", "load"))
    (root / "escape.txt").symlink_to(outside)
    add(Case("a symlink leaving root", t, ("escape.txt",), DEAD, "outside root", "load"))
    (root / "sub").mkdir()
    (root / "sub" / "dotdot.txt").symlink_to(Path("..") / ".." / "outside.txt")
    add(Case("a '..' link leaving root", t, ("sub/dotdot.txt",), DEAD, "outside root", "load"))
    (root / "zero.txt").symlink_to("/dev/zero")
    add(Case("a link to /dev/zero", t, ("zero.txt",), DEAD, "outside root", "load"))

    (root / "folder.txt").mkdir()
    add(Case("a directory named *.txt", t, (), NOT_READ))
    (root / "folder.txt" / "inside.txt").write_text("a file inside it is read")
    add(Case("a file inside that directory", t, ("folder.txt/inside.txt",), WRITTEN))
    (root / "folder-link.txt").symlink_to("folder.txt")
    add(
        Case(
            "a link to that directory",
            t,
            ("folder-link.txt",),
            DEAD,
            "to a folder, which is not followed",
            "load",
        )
    )
    os.mkfifo(root / "pipe.txt")
    add(Case("a FIFO named *.txt", t, ("pipe.txt",), DEAD, "FIFO", "load"))
    os.mkfifo(root / "pipe")
    (root / "pipe-link.txt").symlink_to("pipe")
    add(Case("a link to a FIFO", t, ("pipe-link.txt",), DEAD, "FIFO", "load"))

    odd = os.fsdecode(b"odd-\xff-name.txt")
    (root / odd).write_text("a file whose name is not UTF-8")
    add(Case("a file name not valid UTF-8", t, ("odd-\\udcff-name.txt",), WRITTEN))

    if os.geteuid() == 0:
        corpus.notes.append(
            "an unreadable file (mode 000) is left out: this runs as root, who reads any file"
        )
    else:
        file("unreadable.txt", b"secret")
        (root / "unreadable.txt").chmod(0)
        add(Case("an unreadable file", t, ("unreadable.txt",), DEAD, "Permission denied", "load"))

    (root / "tiny").mkdir()
    for i in range(TINY):
        (root / "tiny" / f"{i:05}.txt").write_bytes(b"w")
    ids = tuple(f"tiny/{i:05}.txt" for i in range(TINY))
    add(Case(f"{TINY} tiny documents", t, ids, WRITTEN))


# -- jsonl --------------------------------------------------------------------------------


def _jsonl(corpus: Corpus) -> None:
    lines: list[bytes] = []
    add = corpus.cases.append
    j = "jsonl"
    name = corpus.jsonl_path.name

    def line(raw: bytes | str) -> int:
        lines.append(raw.encode() if isinstance(raw, str) else raw)
        return len(lines)

    def obj(**fields: object) -> int:
        return line(json.dumps(fields))

    def dead(kind: str, raw: bytes | str, reason: str, doc_id: str | None = None) -> None:
        n = line(raw)
        add(Case(kind, j, (doc_id or f"{name}:{n}",), DEAD, reason, "load", n))

    n = obj(id="plain", text="an ordinary line")
    add(Case("an ordinary line", j, ("plain",), WRITTEN, line=n))
    n = obj(id="empty", text="")
    add(Case("an empty text", j, ("empty",), SKIPPED, "empty", "skip", line=n))
    n = obj(id="whitespace", text=" \t ")
    add(Case("a whitespace-only text", j, ("whitespace",), SKIPPED, "empty", "skip", line=n))
    line("")
    line("   ")
    add(Case("blank lines", j, (), NOT_READ))
    n = obj(id="one-mb", text="w " * 500_000)
    add(Case("a 1 MB single line", j, ("one-mb",), WRITTEN, line=n))
    dead("a line over max_bytes", json.dumps({"id": "huge", "text": "x" * MAX_BYTES}), "longer")
    dead("invalid UTF-8", b'{"id": "latin1", "text": "caf\xe9"}', "not valid utf-8")
    dead("invalid JSON", '{"id": "broken", "text": ', "invalid JSON")
    dead("not an object", "[1, 2, 3]", "expected a JSON object")
    n = obj(id="nul", text="before\u0000after")
    add(Case("NUL in text", j, ("nul",), WRITTEN, line=n))
    dead("a lone surrogate in text", '{"id": "sur", "text": "a\\ud800b"}', "lone surrogate", "sur")
    dead("a lone surrogate in id", '{"id": "x\\udc00", "text": "t"}', "lone surrogate")
    dead("text is a number", obj_text("t-num", 7), "must be a string, not int", "t-num")
    dead("text is a list", obj_text("t-list", ["a"]), "must be a string, not list", "t-list")
    dead("text is null", obj_text("t-null", None), "must be a string, not NoneType", "t-null")
    dead("a missing id", json.dumps({"text": "no id"}), "missing id field")
    n = obj(id="twice", text="the first of two")
    add(Case("a repeated id (first)", j, ("twice",), WRITTEN, line=n))
    dead("a repeated id (second)", json.dumps({"id": "twice", "text": "again"}), "duplicate id")
    deep = '{"id": "deep", "text": "x", "nest": ' + "[" * 5000 + "]" * 5000 + "}"
    dead("nested 5,000 deep", deep, "nested too deeply")
    digits = '{"id": "digits", "text": "x", "n": ' + "9" * 5000 + "}"
    dead("a 5,000-digit number", digits, "a number of more than")
    n = line('{"id": "nan", "text": "score is not a number", "score": NaN}')
    add(Case("NaN in metadata", j, ("nan",), WRITTEN, line=n))
    dead(
        "a lone surrogate in metadata",
        '{"id": "m-sur", "text": "t", "score": {"\\udc80": 1}}',
        "lone surrogate",
        "m-sur",
    )
    n = obj(id="special", text="[CLS] [SEP] [PAD]")
    add(Case("only special tokens", j, ("special",), WRITTEN, line=n))
    n = obj(id="boom", text=TOKENIZER_FAILURE)
    add(Case("a tokenizer failure", j, ("boom",), DEAD, "prepare failed", "prepare", n))
    first = len(lines) + 1
    for i in range(TINY):
        line(json.dumps({"id": f"t{i}", "text": "w"}))
    add(Case(f"{TINY} tiny documents", j, tuple(f"t{i}" for i in range(TINY)), WRITTEN, line=first))
    corpus.jsonl_path.write_bytes(b"\n".join(lines) + b"\n")


def obj_text(doc_id: str, text: object) -> str:
    """A line whose text field holds ``text`` (not a string)."""
    return json.dumps({"id": doc_id, "text": text})


# -- parquet ------------------------------------------------------------------------------

BOMB_CHARACTERS = 20_000_000
"""The decompression bomb's text: 20 million characters, a few kilobytes compressed."""


def _parquet(corpus: Corpus) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    root = corpus.parquet_root
    root.mkdir()
    add = corpus.cases.append
    p = "parquet"

    def write(name: str, ids: list[object], texts: list[str | None]) -> str:
        path = root / name
        pq.write_table(pa.table({"id": ids, "text": texts}), path, compression="zstd")
        return str(path)

    rows: list[tuple[object, str | None]] = [
        ("p-plain", "an ordinary row"),
        ("p-twice", "the first of two"),
        ("p-twice", "again"),
        (None, "a row without an id"),
        ("p-null-text", None),
        ("p-empty", ""),
        ("p-long", "x" * (MAX_BYTES + 1_000_000)),
        ("p-special", "[CLS] [SEP] [PAD]"),
        ("p-boom", TOKENIZER_FAILURE),
    ]
    write("a.parquet", [i for i, _ in rows], [t for _, t in rows])
    a = "a.parquet"  # a place's name in ids: the file's path from the pattern's folder
    add(Case("an ordinary row", p, ("p-plain",), WRITTEN))
    add(Case("a repeated id (first)", p, ("p-twice",), WRITTEN))
    add(Case("a repeated id (second)", p, (f"{a}#0:2",), DEAD, "duplicate id", "load"))
    add(Case("a null id", p, (f"{a}#0:3",), DEAD, "must hold a non-empty string", "load"))
    add(Case("a null text", p, ("p-null-text",), DEAD, "is null", "load"))
    add(Case("an empty text", p, ("p-empty",), SKIPPED, "empty", "skip"))
    add(Case("a text over max_bytes", p, ("p-long",), DEAD, "longer than max_bytes", "load"))
    add(Case("only special tokens", p, ("p-special",), WRITTEN))
    add(Case("a tokenizer failure", p, ("p-boom",), DEAD, "prepare failed", "prepare"))

    write("b.parquet", [7, 8], ["an integer id", "another"])
    add(Case("integer ids", p, ("7", "8"), WRITTEN))

    write("bomb.parquet", ["p-beside", "p-bomb"], ["small", "a" * BOMB_CHARACTERS])
    size = (root / "bomb.parquet").stat().st_size
    kind = f"{BOMB_CHARACTERS:,} characters in a {size // 1000 + 1} kB file"
    add(Case(kind, p, ("p-bomb",), DEAD, "not read: its row group's columns", "load"))
    add(Case("a row in the same row group", p, ("p-beside",), DEAD, "not read", "load"))

    junk = root / "junk.parquet"
    junk.write_bytes(b"PAR1 this is not a parquet file PAR1")
    add(
        Case(
            "a file that is not Parquet",
            p,
            ("junk.parquet",),
            DEAD,
            "not a readable Parquet",
            "load",
        )
    )

    ids = [f"pt{i}" for i in range(TINY)]
    write("tiny.parquet", list(ids), ["w"] * TINY)
    add(Case(f"{TINY} tiny rows", p, tuple(ids), WRITTEN))
