"""A Ctrl-C that Python dropped while an index is searched stops the search (core.stops).

Landing in JAX's garbage-collection callback, it was printed as "Exception ignored" and the
search ran on (a scan of a large output, a model built for the first query). ``find`` now
keeps such a stop for the end of its read and raises it there, and gives the host its
``sys.unraisablehook`` back after.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

import seamline.adapters.search as search_module
from seamline.api import open_index
from tests.adapters.test_search import TEXTS, registry, write_index
from tests.core.test_stops import drop_a_stop


def host_hook(unraisable: object) -> None:
    """The host's own hook (an IPython kernel's, an application's)."""


def test_a_ctrl_c_python_dropped_during_a_scan_stops_the_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{out}'}}}}")
    scan = search_module.nearest_each

    def dropping(*args: Any) -> Any:
        drop_a_stop()  # as a GC callback would, during the scan
        return scan(*args)

    monkeypatch.setattr(sys, "unraisablehook", host_hook)
    with open_index(out, registry=registry()) as index:
        monkeypatch.setattr(search_module, "nearest_each", dropping)
        with pytest.raises(KeyboardInterrupt):
            index.find(TEXTS[1], k=1)
        assert sys.unraisablehook is host_hook, "the host's hook is back after the search"
        monkeypatch.setattr(search_module, "nearest_each", scan)
        assert index.find(TEXTS[1], k=1).hits[0].doc_id == "d1", "nothing stale is raised"
