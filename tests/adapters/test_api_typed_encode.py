"""``Embedder.encode``'s return type follows its call, for a user's mypy.

``encode("one text")`` is a ``[dim]`` array and ``encode(["a", "b"])`` a ``[2, dim]``
one; only ``long_text="windows"`` gives a list. It was typed ``ndarray | list[ndarray]``
whatever the call, so every user's ``encode(texts).shape`` was a mypy error (seamline's
own server and search carried a ``type: ignore`` for it).
"""

from __future__ import annotations

import subprocess
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

USER_CODE = """\
from __future__ import annotations

from seamline.api import Embedder


def use(embedder: Embedder, texts: list[str]) -> int:
    reveal_type(embedder.encode("one text"))
    reveal_type(embedder.encode(texts))
    reveal_type(embedder.encode(("a", "b"), normalize=True, queries=True))
    reveal_type(embedder.encode(texts, long_text="mean"))
    reveal_type(embedder.encode(texts, long_text="windows"))
    return int(embedder.encode(texts).shape[-1]) + len(embedder.encode("x").tolist())
"""

ARRAY = "numpy.ndarray["
LIST = "list[numpy.ndarray["


def test_each_call_of_encode_has_the_type_of_what_it_returns(tmp_path: Path) -> None:
    (tmp_path / "user.py").write_text(USER_CODE, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "user.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    revealed = [
        line.partition('Revealed type is "')[2].rstrip('"')
        for line in done.stdout.splitlines()
        if "Revealed type is" in line
    ]
    assert len(revealed) == 5, done.stdout
    assert all(kind.startswith(ARRAY) for kind in revealed[:4]), done.stdout
    assert revealed[4].startswith(LIST), done.stdout
    assert not any(" | " in kind or "Union" in kind for kind in revealed), done.stdout
    errors = [line for line in done.stdout.splitlines() if ": error:" in line]
    assert errors == [], done.stdout
