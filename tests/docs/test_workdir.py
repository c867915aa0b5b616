"""The docs tests' corpus is removed when the process that wrote it exits.

(tests/docs/workdir.py; every suite run left a corpus folder per worker in the temporary
directory, a hundred of them after a day's runs.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.docs.workdir import ROOT


def test_the_small_corpus_is_removed_when_its_process_exits(tmp_path: Path) -> None:
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    program = "from tests.docs.workdir import small_corpus; print(small_corpus())"
    written = subprocess.run(
        [sys.executable, "-c", program],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.strip()
    corpus = Path(written)
    assert corpus.is_relative_to(tmp_path), written
    assert corpus.name == "topics"
    assert not corpus.parent.exists(), sorted(tmp_path.rglob("*"))[:5]
    assert list(tmp_path.iterdir()) == []
