"""One run per destination: every first-party sink locks its destination from start to close.

A second writer is refused at once with the destination and the holder's pid, and
the first is not disturbed; the kernel frees the lock of a killed holder, so a
SIGKILL leaves nothing stale behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest

from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
from seamline.components.sinks.npy import NpySink, NpySinkConfig
from seamline.contracts import DocumentError, OutputRecord, UserError
from seamline.contracts.sink_kit._lock import lock_path

if TYPE_CHECKING:
    from pathlib import Path

MANIFEST = {"seamline_manifest": 1, "pipeline": "lock", "model": {"use": "toy", "with": {}}}


def jsonl(out: Path) -> Any:
    return JsonlSink(JsonlSinkConfig(path=out / "emb.jsonl"))


def npy(out: Path) -> Any:
    return NpySink(NpySinkConfig(path=out / "emb.npy"))


def parquet(out: Path) -> Any:
    from seamline.components.sinks.parquet import ParquetSink, ParquetSinkConfig

    return ParquetSink(ParquetSinkConfig(path=out / "emb.parquet"))


def lancedb(out: Path) -> Any:
    from seamline.components.sinks.lancedb import LanceDbSink, LanceDbSinkConfig

    return LanceDbSink(LanceDbSinkConfig(path=out / "emb.lance"))


FACTORIES = {"jsonl": jsonl, "npy": npy, "parquet": parquet, "lancedb": lancedb}


def records(n: int) -> list[OutputRecord]:
    rng = np.random.default_rng(0)
    return [
        OutputRecord(f"d{i}", 0, (0, 1), rng.normal(size=4).astype(np.float32), {}, "t")
        for i in range(n)
    ]


def destination(sink: Any) -> Path:
    path: Path = sink.config.path
    return path


@pytest.mark.parametrize("kind", FACTORIES)
@pytest.mark.parametrize("how", ["start", "recover"])
def test_a_second_writer_is_refused_and_the_first_is_not_disturbed(
    tmp_path: Path, kind: str, how: str
) -> None:
    make = FACTORIES[kind]
    first = make(tmp_path / "out")
    first.start(MANIFEST)
    first.write(records(3))
    first.commit("2")
    second = make(tmp_path / "out")
    with pytest.raises(UserError) as refused:
        getattr(second, how)(MANIFEST)
    message = str(refused.value)
    # In one process, as here: said so (an operator looked for another process).
    held = f"another run in this process (pid {os.getpid()}: another thread, or a run not closed)"
    assert f"{held} is writing to {str(destination(first))!r}" in message
    # Both spellings: a notebook's second run was told only the command's --resume.
    assert "stop it and run again with --resume (run(resume=True) from Python)" in message
    second.close(complete=False)  # a refused sink's close must not free the holder's lock
    assert lock_path(destination(first)).exists()
    first.write(records(5)[3:])
    first.close()
    assert destination(first).exists(), "the first run published"
    assert not lock_path(destination(first)).exists(), "closing releases (and removes) the lock"
    third = make(tmp_path / "out")
    third.start(MANIFEST)  # free again
    third.close(complete=False)


def test_a_killed_holder_leaves_no_stale_lock(tmp_path: Path) -> None:
    out = tmp_path / "out"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pathlib import Path
        from seamline.components.sinks.jsonl import JsonlSink, JsonlSinkConfig
        sink = JsonlSink(JsonlSinkConfig(path=Path({str(out / "emb.jsonl")!r})))
        sink.start({MANIFEST!r})
        print("locked", flush=True)
        time.sleep(60)
        """
    )
    holder = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        assert holder.stdout.readline().strip() == "locked"
        with pytest.raises(UserError, match=rf"another run \(pid {holder.pid}\)"):
            jsonl(out).start(MANIFEST)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    sink = jsonl(out)
    sink.start(MANIFEST)  # the kernel released the dead holder's lock
    sink.close(complete=False)


@pytest.mark.parametrize(
    "content",
    [b"\0" * (64 << 20), b"\xff\xfe not a pid", b"\x1b[31m123"],
    ids=["huge", "bytes", "escape"],
)
def test_a_held_lock_file_of_any_content_is_read_only_as_far_as_a_pid(
    tmp_path: Path, content: bytes
) -> None:
    """Whoever can open the lock file can hold its flock and fill it: its holder is read as
    untrusted (a 500 MB one was read whole, and bytes that were not UTF-8 ended the run)."""
    import fcntl
    import resource

    out = tmp_path / "out"
    out.mkdir()
    lock = lock_path(out / "emb.jsonl")
    lock.write_bytes(content)
    with lock.open("rb") as holder:
        fcntl.flock(holder.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        with pytest.raises(UserError, match=r"another run \(pid \?\) is writing") as refused:
            jsonl(out).start(MANIFEST)
        grown_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    assert len(str(refused.value)) < 500
    assert grown_kib < 16 << 10, f"memory grew {grown_kib} KiB reading the lock file"


@pytest.mark.parametrize("how", ["start", "recover"])
def test_outputs_sharing_a_stem_share_a_manifest_and_errors_file_so_one_run_at_a_time(
    tmp_path: Path, how: str
) -> None:
    """``emb.jsonl`` and ``emb.npy`` in one folder share ``emb.errors.jsonl`` and
    ``emb.manifest.json``: each locked only its own path, so two runs at once wiped each
    other's partial errors file, and the later replaced the other's manifest."""
    out = tmp_path / "out"
    first = jsonl(out)
    first.start(MANIFEST)
    first.write(records(2))
    first.write_error(DocumentError("bad", "too long"))
    first.commit("1")
    second = npy(out)
    with pytest.raises(UserError) as refused:
        getattr(second, how)(MANIFEST)
    message = str(refused.value)
    assert (
        f"another run in this process (pid {os.getpid()}: another thread, or a run not closed) "
        f"is writing {str(out / 'emb.errors.jsonl')!r}"
    ) in message
    assert (
        f"which this npy sink publishes too (the errors file of {str(out / 'emb.npy')!r}" in message
    )
    assert "Nothing was written" in message
    second.close(complete=False)
    assert not lock_path(out / "emb.npy").exists(), "a refused run lets go of what it took"
    first.close()
    errors = (out / "emb.errors.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["id"] for line in errors] == ["bad"]
    assert (
        json.loads((out / "emb.manifest.json").read_text(encoding="utf-8"))["outputs"]["sink"]
        == "jsonl"
    )
    # Once the first has published, its manifest is there: the npy output would replace it,
    # leaving emb.jsonl without one (search refused it then), so it is refused at start.
    third = npy(out)
    with pytest.raises(UserError, match=r"is the manifest of another output .*\('emb\.jsonl'\)"):
        third.start(MANIFEST)
    third.close(complete=False)
    assert not (out / "emb.npy").exists()
    (out / "emb.jsonl").unlink()  # the other output gone: nothing is lost by replacing it
    fourth = npy(out)
    fourth.start(MANIFEST)
    fourth.close(complete=False)


def test_a_configured_errors_file_two_outputs_share_is_locked_too(tmp_path: Path) -> None:
    out = tmp_path / "out"
    shared = out / "errors.jsonl"
    first = JsonlSink(JsonlSinkConfig(path=out / "a.jsonl", errors_path=shared))
    first.start(MANIFEST)
    second = NpySink(NpySinkConfig(path=out / "b.npy", errors_path=shared))
    with pytest.raises(UserError, match=r"is writing '.*/errors\.jsonl', which this npy sink"):
        second.start(MANIFEST)
    second.close(complete=False)
    first.close(complete=False)


def test_which_manifests_are_another_outputs(tmp_path: Path) -> None:
    """Only a manifest of another output that is still there, named inside its folder."""
    from seamline.contracts.sink_kit._neighbour import other_output

    manifest = tmp_path / "emb.manifest.json"
    destination = tmp_path / "emb.npy"
    own = {manifest, tmp_path / "emb.errors.jsonl"}

    def other(outputs: object) -> list[str]:
        manifest.write_text(json.dumps({"outputs": outputs}), encoding="utf-8")
        return other_output(manifest, "npy", "records", destination, own)

    (tmp_path / "emb.jsonl").write_text("{}\n", encoding="utf-8")
    (tmp_path / "emb.json").write_text("{}\n", encoding="utf-8")
    errors = {"errors": "emb.errors.jsonl"}
    assert other({"sink": "jsonl", "files": {**errors, "records": "emb.jsonl"}}) == ["emb.jsonl"]
    assert other({"sink": "npy", "files": {**errors, "records": "emb.json"}}) == ["emb.json"]
    assert other({"sink": "npy", "files": {**errors, "records": "emb.npy"}}) == [], "its own"
    staged = [{"files": {"records": ".emb.npy.shards/r/part-00000-of-00001/emb.npy"}}]
    assert other({"sink": "npy", "parts": staged}) == [], "its own staged parts"
    assert other({"sink": "jsonl", "files": {"records": "gone.jsonl"}}) == [], "gone: no loss"
    hostile = {"records": "/etc/passwd", "a": "../emb.jsonl", "b": "x\0y", "c": 5}
    assert other({"sink": "jsonl", "files": hostile}) == [], "names outside its folder ignored"
    assert other("junk") == []
    manifest.write_text("[" * 10_000, encoding="utf-8")
    assert other_output(manifest, "npy", "records", destination, own) == []


@pytest.mark.parametrize("kind", FACTORIES)
def test_a_run_that_fails_before_writing_leaves_no_folder_it_made(
    tmp_path: Path, kind: str
) -> None:
    """``out/new/`` made for the lock of a run refused later (wrong weights, say) went away
    with it: the user found an empty folder where no output was ever written. Folders that
    were there, or that hold anything by then, stay."""
    failed = FACTORIES[kind](tmp_path / "out" / "new")
    failed.start(MANIFEST)
    assert (tmp_path / "out" / "new").is_dir()
    failed.close(complete=False)
    assert list(tmp_path.iterdir()) == [], "both folders the lock made are gone"

    (tmp_path / "kept").mkdir()
    failed = FACTORIES[kind](tmp_path / "kept" / "new")
    failed.start(MANIFEST)
    (tmp_path / "kept" / "new" / "mine.txt").write_text("someone's")
    failed.close(complete=False)
    assert (tmp_path / "kept" / "new" / "mine.txt").exists()

    done = FACTORIES[kind](tmp_path / "done")
    done.start(MANIFEST)
    done.write(records(2))
    done.close()
    assert destination(done).exists(), "a published output keeps its folder"
