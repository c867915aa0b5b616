"""Every command that compiles a model keeps its programs in the persistent compile cache.

Only ``run`` and ``serve`` switched it on: each ``seamline search`` compiled its query's
programs again (seconds of every search, no cache hit ever), and so did each
``seamline profile``. Both now switch it on as ``run`` does, and
``--no-compile-cache`` leaves it off.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters import compile_cache, logging_setup
from seamline.adapters.cli.main import app
from seamline.core.registry import Registry
from tests.adapters.test_search import registry, write_index
from tests.core.toy import toy_registry

PIPELINE = """\
pipeline: profiled
loader: {use: list, with: {texts: ["a b", "c d e"]}}
model: {use: toy}
attention: {use: native}
sink: {use: memory}
run: {batch_size: 2, buckets: [4]}
"""


@pytest.fixture
def switched_on(monkeypatch: pytest.MonkeyPatch) -> list[None]:
    """Each time a command switches the cache on (not switched on here: the session's is).

    The command's logging set-up is left out: it would configure this process's logging.
    """
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    calls: list[None] = []
    monkeypatch.setattr(compile_cache, "enable_compile_cache", lambda: calls.append(None))
    return calls


@pytest.mark.parametrize("flag", [[], ["--no-compile-cache"]], ids=["default", "off"])
def test_search_keeps_its_programs_in_the_compile_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switched_on: list[None], flag: list[str]
) -> None:
    index = tmp_path / "emb.jsonl"
    write_index(tmp_path, f"{{use: jsonl, with: {{path: '{index}'}}}}")
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust=None: registry()))
    shown = CliRunner().invoke(app, ["search", str(index), "alpha", *flag])
    assert shown.exit_code == 0, shown.output
    assert len(switched_on) == (0 if flag else 1)


@pytest.mark.parametrize("flag", [[], ["--no-compile-cache"]], ids=["default", "off"])
def test_profile_keeps_its_programs_in_the_compile_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, switched_on: list[None], flag: list[str]
) -> None:
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: toy_registry()))
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(PIPELINE, encoding="utf-8")
    with structlog.testing.capture_logs():
        shown = CliRunner().invoke(
            app, ["profile", str(pipeline), "--out", str(tmp_path / "trace"), *flag]
        )
    assert shown.exit_code == 0, shown.output
    assert len(switched_on) == (0 if flag else 1)
