"""A failed run's reason is one line, whatever the component's error holds.

LanceDB's error for a staged file deleted under a run embeds a Python traceback: the
run's "failed:" line was 30 lines with the paths of LanceDB's build.
"""

from __future__ import annotations

from seamline.contracts import ShardFailed
from seamline.core.worker import one_line

LANCE = (
    "lance error: Not found: out/.emb.lance.partial.tmp/emb.lance/data/x.lance, "
    "/root/.cargo/registry/src/lance-io-13.0.0/src/local.rs:273:40. Detail: Python "
    "exception: Traceback (most recent call last):\n"
    '  File "/venv/lib/python3.11/site-packages/lancedb/table.py", line 4807, in gen\n'
    "    for batch in reader:\n"
    "RuntimeError: lance error: Not found\n"
)


def test_a_page_of_message_is_cut_to_its_first_line() -> None:
    reason = one_line(RuntimeError(LANCE))
    assert reason.startswith("RuntimeError: lance error: Not found: out/.emb.lance.partial.tmp")
    assert reason.endswith("Python exception: Traceback (most recent call last):…")
    failed = str(ShardFailed(0, 1, "sink 'lancedb' (close, from seamline-components)", reason))
    assert len(failed.splitlines()) == 1
    assert "--resume" in failed


def test_a_one_line_message_is_kept_whole_and_a_long_one_is_bounded() -> None:
    assert one_line(ValueError("bad value")) == "ValueError: bad value"
    assert one_line(KeyError()) == "KeyError"
    long = one_line(OSError("x" * 2_000))
    assert len(long) == len("OSError: ") + 500
    assert long.endswith("x…")


def test_the_places_in_a_rust_librarys_source_are_left_out() -> None:
    # LanceDB's close under a read-only /tmp: the run's one line ended with two .rs files of
    # its build, nothing a user can act on.
    error = RuntimeError(
        "lance error: Failed to create temp dir: LanceError(IO): Read-only file system (os "
        'error 30) at path "/tmp/.tmpX63IQj", /root/.cargo/registry/src/index.crates.io-1949'
        "/lance-core-13.0.0/src/utils/tempfile.rs:52:23, /root/.cargo/registry/src/index."
        "crates.io-1949/lance-13.0.0/src/dataset/write/merge_insert.rs:2266:28"
    )
    assert one_line(error) == (
        "RuntimeError: lance error: Failed to create temp dir: LanceError(IO): Read-only file "
        'system (os error 30) at path "/tmp/.tmpX63IQj"'
    )
