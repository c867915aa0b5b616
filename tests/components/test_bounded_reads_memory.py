"""A bounded read costs memory for what the file holds, not for its bound.

``handle.read(LIMIT + 1)`` makes CPython allocate ``LIMIT + 1`` bytes before it reads
one: under ``ulimit -v 1500000`` a run failed with a ``MemoryError`` traceback reading a
checkpoint's 20-byte ``config.json`` (the ledger's bound is 256 MiB). Each reader is run
here in a child process whose address space is capped a little above what it uses
already (``RLIMIT_AS``), far below the bounds, on tiny files and a tiny pipe.
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pathlib import Path

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads the address space from /proc"
)

CHILD = r"""
import resource, sys
from pathlib import Path

from seamline.adapters.cli import query_lines
from seamline.components.loaders.text_files import TextFilesConfig, TextFilesLoader
from seamline.components.models.file_ledger import FILE_LIMIT, FileLedger
from seamline.contracts import untrusted
from seamline.contracts.manifest import read_manifest_text

folder = Path(sys.argv[1])
status = Path("/proc/self/status").read_text()
used = int(next(l for l in status.splitlines() if l.startswith("VmSize:")).split()[1]) * 1024
headroom = 12 << 20  # below the queries' 16 MiB bound, far below the ledger's 256 MiB
assert FILE_LIMIT > 2 * headroom  # the bound alone would not fit
resource.setrlimit(resource.RLIMIT_AS, (used + headroom, resource.RLIM_INFINITY))

checkpoint = folder / "ckpt"
assert FileLedger(checkpoint).read(checkpoint / "config.json") == b'{"hidden_size": 32}'
assert untrusted.read_regular(checkpoint / "config.json", 1 << 30) == b'{"hidden_size": 32}'
assert read_manifest_text(folder / "emb.manifest.json") == "{}"
config = TextFilesConfig(root=str(folder / "docs"), max_bytes=1 << 30)
[item] = list(TextFilesLoader(config).read())
assert item.item.text == "a short document", item
assert query_lines._read("-", "--queries -") == b"one query\n"
print("read")
"""


def test_reads_bounded_far_above_the_file_allocate_no_more_than_the_file(tmp_path: Path) -> None:
    (tmp_path / "ckpt").mkdir()
    (tmp_path / "ckpt" / "config.json").write_bytes(b'{"hidden_size": 32}')
    (tmp_path / "emb.manifest.json").write_text("{}", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.txt").write_text("a short document", encoding="utf-8")
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(tmp_path)],
        input=b"one query\n",
        capture_output=True,
        timeout=120,
        check=False,
    )
    err = child.stderr.decode(errors="replace")
    assert child.returncode == 0, err[-3000:]
    assert "MemoryError" not in err
    assert child.stdout.decode().strip() == "read"
