"""``explain`` prints one table for neighbouring buckets whose verdicts are all the same.

The examples' pipeline has five buckets, and ``explain`` printed five tables of nine
identical rows; what differed (the shapes) was in the titles, and a bucket decided
otherwise was lost among them. The JSON document keeps one entry per bucket.
"""

from __future__ import annotations

import pytest

from seamline.adapters.cli.render.plan import plan as print_plan
from seamline.core import BucketPlan, Plan
from seamline.core.attention.planner import MeasuredTimes, Refusal
from seamline.core.config import AttentionMode, Selection

SERVED = "highest priority for this shape, and it supports it"


def bucket(length: int, *, short_only: bool = False, **changes: object) -> BucketPlan:
    refusal = ("only up to 32 tokens",) if short_only else ()
    fields: dict[str, object] = {
        "length": length,
        "batch_size": 256 // length,
        "signature": f"B{256 // length}xT{length}",
        "order": ("short", "native"),
        "chosen": "native" if short_only else "short",
        "reason": SERVED,
        "refusals": (Refusal("short", refusal),) if short_only else (),
        "spare": () if short_only else (Refusal("native", ()),),
    }
    fields.update(changes)
    return BucketPlan(**fields)  # type: ignore[arg-type]


def printed(
    buckets: list[BucketPlan], capsys: pytest.CaptureFixture[str], **changes: object
) -> str:
    settings: dict[str, object] = {
        "pipeline": "p",
        "mode": AttentionMode.AUTO,
        "select": Selection.PRIORITY,
        "reference": "native",
        "verify": True,
        "on_failure": "fallback",
        "shadow_every": 0,
        "require_conformance": False,
        "weights_loaded": False,
        "buckets": buckets,
    }
    settings.update(changes)
    print_plan(Plan(**settings))  # type: ignore[arg-type]
    return capsys.readouterr().out


def test_buckets_alike_share_a_table_and_one_decided_otherwise_has_its_own(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    shown = printed([bucket(16), bucket(32), bucket(64, short_only=True), bucket(128)], capsys)
    lines = [line.rstrip() for line in shown.splitlines()]
    tables = [i for i, line in enumerate(lines) if line.startswith("┃ candidate")]
    assert len(tables) == 3, shown  # 16 and 32 together; 64 alone; 128 not joined to 16
    assert lines[1:3] == ["length 16 × batch 16: B16xT16", "length 32 × batch 8: B8xT32"]
    assert lines[tables[0] + 2].split() == ["│", "short", "│", "chosen", "│", *SERVED.split(), "│"]
    assert "length 64 × batch 4: B4xT64" in lines
    assert sum("only up to 32 tokens" in line for line in lines) == 1
    assert lines.count("length 128 × batch 2: B2xT128") == 1


def test_under_select_measure_each_bucket_keeps_its_table_and_cache_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    timed = MeasuredTimes({"short": 0.001, "native": 0.002}, cached=True, key="k")
    buckets = [bucket(16, measured=timed), bucket(32, measured=timed)]
    shown = printed(buckets, capsys, select=Selection.MEASURE)
    assert shown.count("┃ candidate") == 2
    assert shown.count("tuning cache: k") == 2
