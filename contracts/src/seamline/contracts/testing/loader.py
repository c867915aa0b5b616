"""``LoaderContract``: stable ids and order, disjoint and complete shards, exact resume.

The suite cannot know a loader's input format, so the author's one fixture,
``make_loader``, writes inputs holding given texts (``None`` standing for one
unreadable item) into a directory, in that order, and returns a loader over them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

import pytest

from seamline.contracts.component import Component
from seamline.contracts.conformance import CONFIG_FREE_KINDS
from seamline.contracts.documents import Document, DocumentError, Loaded, Shard
from seamline.contracts.input_files import input_entries, shown_files
from seamline.contracts.loader import Loader
from seamline.contracts.seams import check_loaded
from seamline.contracts.testing._common import ComponentContract
from seamline.contracts.versions import Kind, parse_version

MakeLoader = Callable[[Path, Sequence[str | None]], Loader[Any]]

#: Ten items: two unreadable, one empty, one long, non-ASCII and multi-line texts.
SAMPLE_TEXTS: tuple[str | None, ...] = (
    "alpha beta",
    "",
    "ünïcödé ✓ — text",
    None,
    "line one\nline two",
    "long " * 1000,
    "gamma",
    None,
    "delta",
    "epsilon",
)


class LoaderContract(ComponentContract):
    """Subclass it and provide ``make_loader(directory, texts) -> Loader``."""

    kind: ClassVar[Kind] = "loader"
    config_in_record: ClassVar[bool] = "loader" not in CONFIG_FREE_KINDS

    @pytest.fixture
    def make_loader(self) -> MakeLoader:
        raise NotImplementedError(
            "provide a 'make_loader' fixture: (directory, texts) -> a loader over inputs "
            "holding those texts in that order, None meaning one unreadable item"
        )

    @pytest.fixture
    def loader(self, make_loader: MakeLoader, tmp_path: Path) -> Loader[Any]:
        return make_loader(tmp_path / "input", SAMPLE_TEXTS)

    @pytest.fixture
    def component(self, loader: Loader[Any]) -> Component[Any]:
        return loader

    # -- helpers ---------------------------------------------------------------------------

    @staticmethod
    def read(loader: Loader[Any], shard: Shard = Shard(), after: str | None = None) -> list[Loaded]:
        return [check_loaded(loader.name, item) for item in loader.read(shard=shard, after=after)]

    @staticmethod
    def ids(items: Sequence[Loaded]) -> list[str]:
        return [item.item.id for item in items]

    @staticmethod
    def fingerprinted(loader: Loader[Any]) -> set[str]:
        """The real paths of the files the host fingerprints as the loader's input."""
        return {os.path.realpath(name) for name, _ in shown_files(input_entries(loader.config))}

    def contents(self, loader: Loader[Any]) -> list[tuple[str, str, str | None]]:
        """What a read yields: each item's cursor, id and text (None for an error)."""
        return [
            (i.cursor, i.item.id, i.item.text if isinstance(i.item, Document) else None)
            for i in self.read(loader)
        ]

    # -- the checks ------------------------------------------------------------------------

    def test_reads_every_item_in_order(self, loader: Loader[Any]) -> None:
        items = self.read(loader)
        assert len(items) == len(SAMPLE_TEXTS), (
            f"loader {loader.name!r} yielded {len(items)} items for {len(SAMPLE_TEXTS)} inputs "
            "(unreadable ones must be yielded as DocumentError, never dropped)"
        )
        for position, (loaded, text) in enumerate(zip(items, SAMPLE_TEXTS, strict=True)):
            item = loaded.item
            if text is None:
                assert isinstance(item, DocumentError), (
                    f"loader {loader.name!r}: unreadable input {position} became "
                    f"{type(item).__name__}, not a DocumentError record"
                )
                assert item.reason.strip(), f"loader {loader.name!r}: an error without a reason"
            else:
                assert isinstance(item, Document), (
                    f"loader {loader.name!r}: readable input {position} became an error: "
                    f"{getattr(item, 'reason', item)}"
                )
                assert item.text == text, (
                    f"loader {loader.name!r}: input {position} reads as {item.text[:40]!r}, "
                    f"expected {text[:40]!r}"
                )

    def test_ids_and_order_are_stable(
        self, loader: Loader[Any], make_loader: MakeLoader, tmp_path: Path
    ) -> None:
        first = self.read(loader)
        ids = self.ids(first)
        assert len(set(ids)) == len(ids), f"loader {loader.name!r} repeats ids: {ids}"
        again = self.read(loader)
        other = self.read(make_loader(tmp_path / "input", SAMPLE_TEXTS))
        for name, items in (("a second read", again), ("a new loader on the same input", other)):
            pairs = [(i.cursor, i.item.id) for i in items]
            assert pairs == [(i.cursor, i.item.id) for i in first], (
                f"loader {loader.name!r}: {name} gives other ids, cursors or order"
            )

    @pytest.mark.parametrize("count", [2, 3])
    def test_shards_are_disjoint_and_complete(self, loader: Loader[Any], count: int) -> None:
        everything = self.ids(self.read(loader))
        seen: list[str] = []
        for index in range(count):
            part = self.ids(self.read(loader, Shard(index, count)))
            overlap = set(part) & set(seen)
            assert not overlap, (
                f"loader {loader.name!r}: shard {index}/{count} repeats {sorted(overlap)}"
            )
            order = [doc_id for doc_id in everything if doc_id in set(part)]
            assert part == order, (
                f"loader {loader.name!r}: shard {index}/{count} is not in the stable order"
            )
            seen.extend(part)
        missing = set(everything) - set(seen)
        assert not missing, f"loader {loader.name!r}: {count} shards miss {sorted(missing)}"

    def test_resume_yields_exactly_the_rest(self, loader: Loader[Any]) -> None:
        items = self.read(loader)
        ids = self.ids(items)
        for position, item in enumerate(items):
            rest = self.ids(self.read(loader, after=item.cursor))
            assert rest == ids[position + 1 :], (
                f"loader {loader.name!r}: resuming after item {position} ({item.item.id!r}) "
                f"yields {rest}, expected {ids[position + 1 :]}"
            )

    def test_resume_within_a_shard(self, loader: Loader[Any]) -> None:
        shard = Shard(1, 2)
        items = self.read(loader, shard)
        ids = self.ids(items)
        for position, item in enumerate(items):
            rest = self.ids(self.read(loader, shard, after=item.cursor))
            assert rest == ids[position + 1 :], (
                f"loader {loader.name!r}: resuming shard 1/2 after {item.item.id!r} yields "
                f"{rest}, expected {ids[position + 1 :]}"
            )

    @pytest.mark.parametrize("count", [1, 2, 3])
    def test_size_is_unknown_or_exact(self, loader: Loader[Any], count: int) -> None:
        """A loader that says its size (contract 1.1) says the number of items it reads."""
        for index in range(count):
            shard = Shard(index, count)
            said = loader.size(shard=shard)
            if said is None:
                continue
            read = len(self.read(loader, shard))
            assert said == read, (
                f"loader {loader.name!r}: size(shard={index}/{count}) says {said}, "
                f"read yields {read}"
            )

    @pytest.mark.parametrize("count", [1, 2])
    def test_position_is_unknown_or_exact(self, loader: Loader[Any], count: int) -> None:
        """``position(cursor)`` (contract 1.2) counts the items read up to and including the
        cursor's: the host checks a resumed run's commit against it, so a wrong count
        refuses a good checkpoint or lets a moved one through."""
        if parse_version(loader.contract_version) < (1, 2):
            pytest.skip(f"loader {loader.name!r} declares contract {loader.contract_version}")
        for index in range(count):
            shard = Shard(index, count)
            for read, item in enumerate(self.read(loader, shard), start=1):
                said = loader.position(item.cursor, shard=shard)
                assert said is None or said == read, (
                    f"loader {loader.name!r}: position({item.cursor!r}, shard={index}/{count}) "
                    f"says {said}, but {item.item.id!r} is item {read} of what read yields: "
                    "it counts the items up to and including the cursor's (None is allowed "
                    "where that is not cheap to tell)"
                )

    def test_it_reads_only_files_the_host_fingerprints(
        self, make_loader: MakeLoader, tmp_path: Path
    ) -> None:
        """A resume is refused when the loader's input changed, as the host fingerprints it:
        the files of its ``Path`` fields, of its ``InputGlob`` patterns and, for a folder
        an ``InputGlobUnder`` pattern picks from (contract 1.3), of the pattern's matches.
        A file the loader reads and the fingerprint leaves out can change, and the resumed
        run splices output of the old and the new text. So files written beside its input
        that the fingerprint leaves out (an editor's swap file, a log, another suffix), and
        every file under the input folder it leaves out, removed, must not change a read."""
        directory = tmp_path / "input"
        loader = make_loader(directory, SAMPLE_TEXTS)
        if not input_entries(loader.config):
            pytest.skip(
                f"loader {loader.name!r} has no Path or InputGlob field: its input is "
                "covered by the hash of its with: block"
            )
        if not directory.is_dir():
            pytest.skip(f"make_loader wrote no folder at {str(directory)!r} to write beside")
        before = self.contents(loader)
        folders = [directory, *(p for p in directory.rglob("*") if p.is_dir())]
        strays = [
            folder / name
            for folder in folders
            for name in (".stray.txt.swp", "stray.log", "stray.md", "stray.json")
        ]
        for stray in strays:
            stray.write_text("not an input\n", encoding="utf-8")
        listed = self.fingerprinted(loader)
        for stray in strays:  # one the fingerprint lists is an input (a change is seen)
            if os.path.realpath(stray) in listed:
                stray.unlink()
        beside = [stray for stray in strays if stray.exists()]
        assert self.contents(loader) == before, _unlisted(loader, "written beside", beside)
        removed = [
            path
            for path in directory.rglob("*")
            if path.is_file() and os.path.realpath(path) not in listed
        ]
        for path in removed:
            path.unlink()
        assert self.contents(loader) == before, _unlisted(loader, "removed from", removed)


def _unlisted(loader: Loader[Any], how: str, paths: list[Path]) -> str:
    """The failure of :meth:`LoaderContract.test_it_reads_only_files_the_host_fingerprints`."""
    names = sorted(path.name for path in paths)
    return (
        f"loader {loader.name!r} reads files the host does not fingerprint as its input: a "
        f"read changed with files the fingerprint leaves out {how} its input ({names}), so "
        "a resume would not see them change. Type the fields naming its input Path or "
        "InputGlob, or mark its pattern InputGlobUnder(folder) and list the files with "
        "input_glob_under"
    )
