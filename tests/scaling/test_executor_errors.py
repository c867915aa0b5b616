"""What a user sees when the executor cannot do its work: one line, the place, the fix.

A bad executor field is caught at validation (``tests/core/bad_pipelines`` has the
located messages); these are the problems only running can find: a cluster that
does not answer, Ray not installed, a shard that fails for good. User errors exit
with code 2, a failed shard with 1, never with a traceback.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from seamline.adapters import logging_setup, telemetry_setup
from seamline.adapters.cli.main import app
from seamline.adapters.executors.ray_actors import driver_paths, merge_paths, thread_caps
from seamline.core.registry import Registry
from tests.scaling.test_ray_executor import pipeline_text


@pytest.fixture
def cli(monkeypatch: pytest.MonkeyPatch, scale_registry: Registry) -> CliRunner:
    """The CLI with the test components, leaving global logging and tracing alone."""
    monkeypatch.setattr(Registry, "discover", classmethod(lambda cls, trust: scale_registry))
    monkeypatch.setattr(logging_setup, "configure_logging", lambda **_: None)
    monkeypatch.setattr(telemetry_setup, "configure_telemetry", lambda *_, **__: None)
    monkeypatch.setattr(telemetry_setup, "shutdown_telemetry", lambda: None)
    return CliRunner()


def invoke(cli: CliRunner, tmp_path: Path, *args: str, **extra: object) -> tuple[int, str]:
    pipeline = tmp_path / "p.yaml"
    pipeline.write_text(pipeline_text(tmp_path, **extra), encoding="utf-8")  # type: ignore[arg-type]
    result = cli.invoke(app, [args[0], str(pipeline), *args[1:]], env={"COLUMNS": "400"})
    return result.exit_code, " ".join(result.output.split())


def test_set_chooses_the_executor(cli: CliRunner, tmp_path: Path) -> None:
    code, output = invoke(cli, tmp_path, "validate", "--set", "run.executor.use=ray")
    assert code == 0, output
    assert "executor ray" in output
    code, output = invoke(cli, tmp_path, "validate", "--set", "run.executor.with.actors=0")
    assert code == 2
    assert "--set run.executor.with.actors=0: unknown field 'run.executor.with.actors'" in output


def test_an_unreachable_cluster_is_named_with_its_place(cli: CliRunner, tmp_path: Path) -> None:
    executor = '{use: ray, with: {address: "127.0.0.1:9"}}'
    code, output = invoke(cli, tmp_path, "run", executor=executor)
    assert code == 2, output
    assert f"error: {tmp_path / 'p.yaml'}:7:" in output  # the run line, where address is
    assert "cannot reach a Ray cluster at '127.0.0.1:9'" in output
    assert "ray start --head" in output
    assert "Traceback" not in output


@pytest.mark.parametrize("address", ["127.0.0.1:\u00b2", "127.0.0.1:70000", "h:" + "9" * 400])
def test_an_address_whose_port_is_no_port_is_refused_when_validated(
    cli: CliRunner, tmp_path: Path, address: str
) -> None:
    """'²' passed str.isdigit(); 70000 is past the last port."""
    executor = f'{{use: ray, with: {{address: "{address}"}}}}'
    code, output = invoke(cli, tmp_path, "validate", executor=executor)
    assert code == 2, output
    assert "is not a Ray address" in output


@pytest.mark.parametrize(
    ("setting", "said"),
    [
        ("cpus_per_actor: .inf", "run.executor.with.cpus_per_actor: Input should be a finite"),
        ("cpus_per_actor: 1e400", "run.executor.with.cpus_per_actor: Input should be a finite"),
        ("gpus_per_actor: .nan", "run.executor.with.gpus_per_actor: Input should be a finite"),
        ("cpus_per_actor: 5000", "run.executor.with.cpus_per_actor: Input should be less than"),
        ("max_restarts: 100000000000000000000", "run.executor.with.max_restarts: Input should"),
        ("retries: 1001", "run.executor.with.retries: Input should be less than or equal to 1000"),
    ],
)
def test_a_setting_the_run_cannot_use_is_refused_when_validated(
    cli: CliRunner, tmp_path: Path, setting: str, said: str
) -> None:
    # `.inf` and a 20-digit max_restarts validated, then failed the run with an
    # OverflowError: exit code 1, no place in the file.
    code, output = invoke(cli, tmp_path, "validate", executor=f"{{use: ray, with: {{{setting}}}}}")
    assert code == 2, output
    assert f"{tmp_path / 'p.yaml'}:7:" in output
    assert said in output, output


@pytest.mark.parametrize("command", ["run", "validate"])
def test_ray_not_installed_says_how_to_install_it(
    cli: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    """``validate`` passed such a pipeline (exit 0), which the run then refused."""
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    code, output = invoke(cli, tmp_path, command, executor="{use: ray}")
    assert code == 2, output
    assert f"error: {tmp_path / 'p.yaml'}:7:" in output  # the run line, where the executor is
    assert "the ray executor needs Ray, which is not installed" in output
    assert "pip install 'seamline-adapters[ray]'" in output
    assert "Traceback" not in output


def test_a_shard_that_fails_exits_1_with_the_shard_component_and_reason(
    cli: CliRunner, tmp_path: Path
) -> None:
    code, output = invoke(cli, tmp_path, "run", "--no-compile-cache", loader={"raise_at": "d3"})
    assert code == 1, output
    assert (
        "failed: the run failed in loader 'lines' (read, from seamline-fixture-scale 0.1.0): "
        "OSError: cannot read d3" in output
    )
    assert "nothing was published" in output
    assert "Traceback" not in output
    assert not (tmp_path / "emb.manifest.json").exists()


def test_thread_caps_follow_the_cpu_allotment() -> None:
    one = thread_caps(1, {"XLA_FLAGS": "--xla_dump_to=/tmp/x", "PYTHONPATH": "/plugins"})
    assert one["XLA_FLAGS"] == "--xla_dump_to=/tmp/x --xla_cpu_multi_thread_eigen=false"
    assert one["OMP_NUM_THREADS"] == one["OPENBLAS_NUM_THREADS"] == one["RAYON_NUM_THREADS"] == "1"
    # Not set over the cluster's own: the actor merges the driver's (driver_paths).
    assert "PYTHONPATH" not in one
    four = thread_caps(4.5, {})
    assert four["MKL_NUM_THREADS"] == four["NUMEXPR_NUM_THREADS"] == "4"
    assert "XLA_FLAGS" not in four  # XLA's pool follows the CPUs the process may use
    assert "PYTHONPATH" not in four


def test_the_driver_paths_are_absolute_and_go_before_the_actors_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert driver_paths({}) == ()
    got = driver_paths({"PYTHONPATH": os.pathsep.join(["plugins", "/abs/p", "", "plugins"])})
    assert got == (str(tmp_path / "plugins"), "/abs/p", str(tmp_path))
    monkeypatch.setattr(sys, "path", ["/worker/script", "/cluster/own", "/abs/p", "/site"])
    merge_paths(got)
    assert sys.path == [
        "/worker/script",
        str(tmp_path / "plugins"),
        str(tmp_path),
        "/cluster/own",  # the cluster's own entry is kept
        "/abs/p",  # already there: where it was
        "/site",
    ]


def test_every_flag_an_actor_gets_is_one_xla_accepts(tmp_path: Path) -> None:
    """XLA aborts the process on a flag it does not know: start JAX with the caps."""
    env = {**os.environ, **thread_caps(1, {})}
    code = "import jax, jax.numpy as jnp; print(float(jnp.ones((4, 4)).sum()))"
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "16.0"


class _Cluster:
    """What fitting_actors asks of Ray: the cluster's total resources."""

    def __init__(self, **resources: float) -> None:
        self.resources = resources

    def cluster_resources(self) -> dict[str, float]:
        return dict(self.resources)


class _Job:
    def where(self, field_name: str) -> str:
        return f"p.yaml:9:5 (run.executor.with.{field_name})"


def test_a_pool_larger_than_the_cluster_is_cut_to_what_fits_not_left_waiting() -> None:
    """8 actors on a 2-CPU machine: six were never placed, and the shards handed to them
    waited forever, without a word."""
    import structlog

    from seamline.adapters.executors.ray_actors import RayExecutorConfig, fitting_actors
    from seamline.contracts import UserError

    config = RayExecutorConfig(actors=8)
    with structlog.testing.capture_logs() as logs:
        assert fitting_actors(_Cluster(CPU=2.0), config, 8, _Job()) == 2  # type: ignore[arg-type]
    (warning,) = [e for e in logs if e["log_level"] == "warning"]
    assert (warning["asked"], warning["actors"]) == (8, 2)
    assert fitting_actors(_Cluster(CPU=16.0), config, 8, _Job()) == 8  # type: ignore[arg-type]
    halves = RayExecutorConfig(actors=8, cpus_per_actor=0.5)
    assert fitting_actors(_Cluster(CPU=2.0), halves, 8, _Job()) == 4  # type: ignore[arg-type]
    gpus = RayExecutorConfig(actors=4, gpus_per_actor=1.0)
    with pytest.raises(UserError, match=r"p\.yaml:9:5 .*: not one actor fits"):
        fitting_actors(_Cluster(CPU=8.0), gpus, 4, _Job())  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("home", "written", "said"),
    [
        ("/", "/.ray", "Ray writes its authentication token in $HOME/.ray (HOME='/'): set HOME"),
        (None, "{ray_tmpdir}/ray", "Ray writes its session files in $RAY_TMPDIR/ray"),
    ],
    ids=["home", "ray_tmpdir"],
)
def test_a_folder_a_local_ray_cannot_write_names_the_variable_to_set(
    cli: CliRunner,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    home: str | None,
    written: str,
    said: str,
) -> None:
    # A container with a read-only root: ray.init's mkdir of ~/.ray (HOME=/) or of its
    # session folder failed, and the run said "what the sink last committed is kept: ...
    # run again with --resume" of a run that had not begun, naming neither HOME nor RAY_TMPDIR.
    import errno

    import ray

    ray_tmpdir = str(tmp_path / "read-only")
    monkeypatch.setenv("RAY_TMPDIR", ray_tmpdir)
    if home is not None:
        monkeypatch.setenv("HOME", home)
    path = written.format(ray_tmpdir=ray_tmpdir)

    def read_only(**_: object) -> None:
        raise OSError(errno.EROFS, "Read-only file system", path)

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", read_only)
    code, output = invoke(cli, tmp_path, "run", "--set", "run.executor.use=ray")
    assert code == 2, output
    assert output.startswith(f"error: {tmp_path / 'p.yaml'}:7:")  # the run's executor
    assert (
        f": Ray could not start on this machine: Read-only file system ({path}). {said}" in output
    )
    assert output.endswith(
        "then run again. The run had not begun, so it committed nothing and its output is as it was"
    )
    assert "--resume" not in output
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.yaml"], "nothing written"
