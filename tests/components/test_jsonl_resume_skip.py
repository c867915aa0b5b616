"""A resume far into a JSON Lines file: lines before the cursor are parsed only while their
ids are still learned (max_tracked_ids), and a long read says how far it has got."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import structlog

from seamline.components.loaders import _seen_ids
from seamline.components.loaders.jsonl import JsonlLoader, JsonlLoaderConfig
from tests.fresh_logging import logging_as_in_a_fresh_process


def _file(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "docs.jsonl"
    lines = [json.dumps({"id": f"d{i}", "text": f"text {i}"}) for i in range(1, count + 1)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _parsed_lines(monkeypatch: pytest.MonkeyPatch, method: str = "_identified") -> list[int]:
    parsed: list[int] = []
    parse = getattr(JsonlLoader, method)

    def counting(self: JsonlLoader, lineno: int, raw: bytes, mark: int = 0) -> Any:
        parsed.append(lineno)
        return parse(self, lineno, raw, mark)

    monkeypatch.setattr(JsonlLoader, method, counting)
    return parsed


def test_lines_before_the_cursor_are_not_parsed_once_the_id_table_is_full(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loader = JsonlLoader(JsonlLoaderConfig(path=_file(tmp_path, 20), max_tracked_ids=3))
    parsed = _parsed_lines(monkeypatch)
    made = _parsed_lines(monkeypatch, "_parse")  # a document made: only of lines loaded
    with structlog.testing.capture_logs() as logs:
        items = list(loader.read(after="15"))
    assert [item.cursor for item in items] == ["16", "17", "18", "19", "20"]
    # Lines 1-3 fill the table, line 4 brings the warning; nothing is learned after it.
    assert parsed == [1, 2, 3, 4, 16, 17, 18, 19, 20]
    assert made == [16, 17, 18, 19, 20]
    warned = [log for log in logs if "too many ids" in log["event"]]
    assert [log["line"] for log in warned] == [4]


def test_a_repeat_of_a_remembered_id_is_still_refused_after_a_resume(tmp_path: Path) -> None:
    path = _file(tmp_path, 10)
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[2] = json.dumps({"id": "d3", "text": 7})  # set aside, but its id is kept
    lines[4] = "not json"
    lines += [json.dumps({"id": i, "text": "again"}) for i in ("d2", "d3")]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    loader = JsonlLoader(JsonlLoaderConfig(path=path, max_tracked_ids=4))
    whole = [item.item for item in loader.read()]
    resumed = [item.item for item in loader.read(after="8")]
    assert resumed == whole[8:]
    reasons = [getattr(item, "reason", "") for item in resumed[-2:]]
    assert "duplicate id 'd2', first seen at line 2" in reasons[0]
    assert "duplicate id 'd3', first seen at line 3" in reasons[1]


def test_a_long_read_up_to_the_cursor_says_how_far_it_has_got(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_seen_ids, "SKIP_REPORT_SECONDS", 0.0)
    loader = JsonlLoader(JsonlLoaderConfig(path=_file(tmp_path, 9000), max_tracked_ids=0))
    # an info line: a CLI test before this one in the worker leaves a warning-level filter
    with logging_as_in_a_fresh_process(), structlog.testing.capture_logs() as logs:
        items = list(loader.read(after="8999"))
    assert [item.cursor for item in items] == ["9000"]
    said = [log for log in logs if "reading up to where the run resumes" in log["event"]]
    assert [log["at"] for log in said] == [4096, 8192]
    assert said[0]["resumes_after"] == 8999
