"""``ray``: a run's shards over a pool of Ray actors, on this machine or a cluster.

Each actor is a process that builds the pipeline once — from the driver's
validated spec, through :meth:`Job.worker_factory` — and then runs shard after
shard with it, so the model is loaded and every shape compiled once per actor. The
driver hands the shards out (one at a time per actor, the next to whichever
finishes first) and collects one report per shard; the host publishes the run only
then (see :mod:`seamline.core.job`).

Faults, and why the output stays exactly once:

- an actor process that dies (killed, out of memory, its node lost) is restarted by
  Ray (``max_restarts``) and its task retried there; the retried shard *recovers*
  its part, continuing after its last commit, so nothing committed is written
  twice and nothing written after it survives;
- a shard whose task raises is run again ``retries`` times (each resumes the same
  way), then the run stops with the shard, the component and the reason, and
  nothing is published;
- the driver itself dying leaves the staged parts; ``seamline run --resume``
  continues them, and finished shards are not redone. A Ray the driver started
  itself (``address`` unset) goes with it: its own processes die with their parent,
  and a reaper (:mod:`._ray_reaper`) ends the agents that Ray leaves behind.

Each actor's CPU allotment (``cpus_per_actor``) is also the number of threads its
libraries may start (OpenMP, OpenBLAS, MKL, the tokenizers' Rayon pool; XLA's matrix
products on one thread for one CPU), set in the actor's runtime environment (see
:func:`thread_caps`): N actors on N cores do not fight for them. The driver's
``PYTHONPATH`` is merged into each actor's module path, not set over the cluster's
(:func:`driver_paths`): a plugin the cluster finds on its own path is still found. Spans from every
actor join the driver's trace (the task carries its context) and go where the
pipeline's ``telemetry`` section says.

Progress (executor contract 1.2): each actor has two concurrency slots, one for
``run``, one to answer the driver's ``progress`` questions meanwhile; the driver
forwards the answers, then each finished shard's counts, to ``job.progress``, so the
application's monitors (the CLI's progress bar) see the run move (see
:mod:`._ray_progress`).
"""

from __future__ import annotations

import collections
import contextlib
import importlib
import importlib.util
import json
import math
import os
import re
import socket
import sys
import time
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, ClassVar

from pydantic import Field, field_validator

from seamline.adapters.executors._ray_folders import start_refused
from seamline.adapters.executors._ray_progress import ProgressPoller
from seamline.adapters.executors._ray_quiet import ray_start_quiet
from seamline.adapters.executors._ray_reaper import RayReaper
from seamline.adapters.executors._sigterm import sigterm_kept
from seamline.contracts import (
    ComponentConfig,
    ExecutionReport,
    Executor,
    Job,
    LeavesMachine,
    ShardFailed,
    ShardProgress,
    ShardReport,
    ShardTask,
    UserError,
)
from seamline.contracts.logs import get_logger
from seamline.contracts.untrusted import is_count, visible

log = get_logger("seamline.adapters.ray")

INSTALL_HINT = "pip install 'seamline-adapters[ray]'"
NOT_INSTALLED = (
    f"the ray executor needs Ray, which is not installed: {INSTALL_HINT} (or choose "
    "run.executor.use: local)"
)
CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a cluster's address to answer before saying it cannot be reached
(Ray itself would keep trying for minutes)."""


MOST_PER_ACTOR = 4096
"""The most CPUs or GPUs one actor may reserve (a machine has fewer)."""
MOST_TRIES = 1000
"""The most restarts or retries: Ray takes a C long, and a billion tries never end."""


class RayExecutorConfig(ComponentConfig):
    """The ``with:`` block of the ``ray`` executor."""

    address: Annotated[str | None, LeavesMachine("a Ray cluster's address")] = Field(
        default=None,
        description="The Ray cluster to run on: 'auto' (the cluster this machine belongs to, "
        "as `ray start` made it, or RAY_ADDRESS), 'HOST:PORT' of a head node's GCS, or "
        "'ray://HOST:10001' (Ray Client). Null starts Ray on this machine for the run (or uses "
        "the Ray this process has already started), never one named elsewhere, and ends it "
        "with the run, even when the run is killed.",
    )
    actors: int = Field(default=2, ge=1, le=100_000, description="Actors in the pool.")
    # Bounded above (and finite): `.inf` passed validation and the run then failed in
    # math.floor with an OverflowError, unplaced, exit code 1.
    cpus_per_actor: float = Field(
        default=1.0,
        gt=0,
        le=MOST_PER_ACTOR,
        allow_inf_nan=False,
        description="CPUs Ray reserves for each actor; also the threads its libraries may use.",
    )
    gpus_per_actor: float = Field(
        default=0.0,
        ge=0,
        le=MOST_PER_ACTOR,
        allow_inf_nan=False,
        description="GPUs (or fractions of one) Ray reserves for each actor.",
    )
    shards: int | None = Field(
        default=None,
        ge=1,
        le=100_000,
        description="Shards the input is split into; more shards than actors balance uneven "
        "work and make a retried shard smaller. Default: one per actor.",
    )
    max_restarts: int = Field(
        default=3,
        ge=0,
        le=MOST_TRIES,
        description="Times Ray restarts an actor whose process died, retrying its shard there "
        "(the shard resumes from its last commit).",
    )
    retries: int = Field(
        default=1,
        ge=0,
        le=MOST_TRIES,
        description="Times a shard whose run raised is run again (resuming) before the run "
        "stops; 0 stops at the first failure.",
    )

    @field_validator("address")
    @classmethod
    def _an_address(cls, value: str | None) -> str | None:
        if value in (None, "auto"):
            return value
        host, _, port = value.removeprefix("ray://").rpartition(":")
        if not host or not is_count(port, 5) or not 0 < int(port) < 65536:
            raise ValueError(
                f"{value!r} is not a Ray address: use 'auto', 'HOST:PORT' (a head node's GCS, "
                "port 6379 by default) or 'ray://HOST:PORT' (Ray Client, 10001), or leave it unset"
            )
        return value


def thread_caps(cpus: float, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """An actor's environment: its libraries' compute threads capped at ``cpus`` (at least 1).

    OpenMP, OpenBLAS, MKL, numexpr and Rayon (the tokenizer's pool) take a thread count
    from their variables. XLA has no flag for the size of its CPU thread pool (it
    follows the CPUs the process may run on); with one CPU,
    ``--xla_cpu_multi_thread_eigen=false`` keeps its matrix products, most of the
    work, on the calling thread. The driver's ``XLA_FLAGS`` are kept. ``PYTHONPATH``
    is not set here: a value in the runtime environment would replace the one the
    cluster's processes were started with (see :func:`driver_paths`).
    """
    env = os.environ if environ is None else environ
    threads = max(1, math.floor(cpus))
    caps = {variable: str(threads) for variable in THREAD_VARIABLES}
    flags = env.get("XLA_FLAGS", "").strip()
    if threads == 1:
        flags = f"{flags} --xla_cpu_multi_thread_eigen=false".strip()
    if flags:
        caps["XLA_FLAGS"] = flags
    return caps


def local_resources(environ: Mapping[str, str] | None = None) -> dict[str, int]:
    """What a Ray this run starts on this machine is given: the CPUs this process may use.

    Ray counts the machine's CPUs (or a container's CPU quota), not the process's
    affinity: under ``taskset -c 0`` on 2 CPUs it offered ``CPU: 2`` and ran 2 actors
    (about 510 MB each) on the one CPU, without a word, while the run's own XLA threads
    and the tuning key followed the affinity. Given the CPUs the process may use (never
    more than Ray counts: a quota stays), the pool is cut to fit, with the warning of
    :func:`fitting_actors`. ``RAY_OVERRIDE_RESOURCES`` naming ``CPU`` is the user's
    choice, which Ray applies over any argument: then nothing is given.
    """
    from seamline.core import usable_cpus

    env = os.environ if environ is None else environ
    if _overrides_cpus(env.get("RAY_OVERRIDE_RESOURCES", "")):
        return {}
    cpus = usable_cpus()
    counted = _ray_cpu_count()
    return {"num_cpus": cpus if counted is None else max(1, min(cpus, counted))}


def _overrides_cpus(text: str) -> bool:
    try:
        resources = json.loads(text) if text.strip() else {}
    except ValueError:  # Ray refuses it in its own words
        return False
    return isinstance(resources, dict) and "CPU" in resources


def _ray_cpu_count() -> int | None:
    """The CPUs Ray would count here (the machine's, or a container's quota), None if Ray
    cannot say (its helper is not public: it may move)."""
    try:
        from ray._private.utils import get_num_cpus

        return int(get_num_cpus(override_docker_cpu_warning=True))
    except Exception:  # an older or newer Ray: the affinity alone, as above
        return None


def driver_paths(environ: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The driver's ``PYTHONPATH``, each entry absolute (an empty one is its working folder).

    Each actor puts them on its module path ahead of the cluster's own (see
    :func:`merge_paths`), so actors import what the driver imports (a plugin under
    development) and what the cluster's nodes were started to find: setting
    ``PYTHONPATH`` in the runtime environment instead would replace the cluster's.
    A relative entry means what it meant to the driver, as a relative path in the
    pipeline does.
    """
    env = os.environ if environ is None else environ
    entries = env.get("PYTHONPATH", "")
    if not entries:
        return ()
    return tuple(dict.fromkeys(os.path.abspath(entry) for entry in entries.split(os.pathsep)))


def merge_paths(paths: Sequence[str]) -> None:
    """Put ``paths`` on this process's module path, before its own ``PYTHONPATH``'s entries.

    ``sys.path[0]`` (the worker script's folder) stays first; an entry already there
    stays where it is. Called before the pipeline is built, so entry points and
    modules under ``paths`` are found.
    """
    missing = [path for path in dict.fromkeys(paths) if path not in sys.path]
    if missing:
        sys.path[1:1] = missing
        importlib.invalidate_caches()


THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "RAYON_NUM_THREADS",
)


class ShardActor:
    """The body of one Ray actor: a worker built once, then one shard per call."""

    def __init__(
        self, factory: Any, telemetry: Mapping[str, Any], paths: Sequence[str] = ()
    ) -> None:
        from seamline.adapters.logging_setup import configure_logging

        merge_paths(paths)  # before anything finds a plugin
        # Ray forwards an actor's output to the driver's console: warnings and errors only.
        configure_logging(json=False, level="warning")
        _worker_telemetry(telemetry)
        self.unbuilt: Exception | None = None
        try:
            self.worker = factory()
        except Exception as err:  # kept, and raised by the shard's run
            # Raised here, Ray's actor died in its creation task: pages of Ray's tracebacks,
            # a message blaming max_restarts, exit code 1 for a user's mistake (a missing
            # key file), and the cause only in Ray's output. Raised from run(), it reaches
            # the driver as a shard's failure does: one line, the shard named.
            self.unbuilt = err

    def run(self, task: ShardTask) -> ShardReport:
        from seamline.adapters.telemetry_setup import flush_telemetry

        if self.unbuilt is not None:
            raise _not_built(self.unbuilt, task)
        try:
            report: ShardReport = self.worker.run(task)
            return report
        finally:
            flush_telemetry()  # the driver may end this process as soon as it has the report

    def progress(self) -> ShardProgress | None:
        """How far the running shard has got (asked on the actor's second slot, never
        waiting for the shard)."""
        if self.unbuilt is not None:
            return None
        progress: ShardProgress | None = self.worker.progress()
        return progress

    def ready(self) -> str:
        from seamline.core import worker_name

        return worker_name()


class NotBuilt(ShardFailed):
    """The actor's worker could not be built (a component's constructor failed): the same
    on every try, so the shard is not retried."""


def _not_built(error: Exception, task: ShardTask) -> Exception:
    """What the shard's run raises on an actor whose worker could not be built: a user's
    mistake as it is; a component's failure as the shard's, not the whole run's."""
    if isinstance(error, UserError):
        return error
    shard = task.shard
    if isinstance(error, ShardFailed):  # the worker's own: "the run failed in monitor 'x'"
        return NotBuilt(shard.index, shard.count, error.component, error.reason)
    return NotBuilt(shard.index, shard.count, "a Ray actor", _first_line(error))


def _worker_telemetry(settings: Mapping[str, Any]) -> None:
    """Send this actor's spans where the pipeline says (appending to a shared jsonl file)."""
    from seamline.adapters.telemetry_setup import configure_telemetry
    from seamline.core import TelemetrySettings

    configure_telemetry(TelemetrySettings.model_validate(dict(settings)), worker=True)


class RayExecutor(Executor[RayExecutorConfig]):
    """Runs a job's shards on a pool of Ray actors."""

    name: ClassVar[str] = "ray"
    contract_version: ClassVar[str] = "1.2"
    Config = RayExecutorConfig

    @classmethod
    def unavailable(cls) -> str | None:
        """Without Ray, for ``seamline components`` (found, not imported: seconds)."""
        if importlib.util.find_spec("ray") is None:
            return f"Ray is not installed: {INSTALL_HINT}"
        return None

    def __init__(self, config: RayExecutorConfig) -> None:
        if importlib.util.find_spec("ray") is None:
            # Found, not imported (seconds): built by `seamline validate` as by a run, so a
            # pipeline validate passes is not refused for it when run.
            raise UserError(NOT_INSTALLED)
        super().__init__(config)
        self._started_ray = False
        self._reaper: RayReaper | None = None

    def execute(self, job: Job) -> ExecutionReport:
        started = time.perf_counter()
        ray = _import_ray(job)
        self._connect(ray, job)
        config = self.config
        tasks = list(job.plan(config.shards or config.actors))
        if not tasks:  # a resumed run whose every shard was finished already
            return ExecutionReport(self.name, (), 0, time.perf_counter() - started)
        actor_class = ray.remote(ShardActor)
        options = {
            "num_cpus": config.cpus_per_actor,
            "num_gpus": config.gpus_per_actor,
            "max_restarts": config.max_restarts,
            "max_task_retries": config.max_restarts,
            "max_concurrency": 2,  # a shard's run, and the driver's progress questions
            "runtime_env": {"env_vars": thread_caps(config.cpus_per_actor)},
        }
        factory = job.worker_factory()
        telemetry = dict(job.telemetry())
        paths = driver_paths()
        actors = [
            actor_class.options(**options).remote(factory, telemetry, paths)
            for _ in range(fitting_actors(ray, config, min(config.actors, len(tasks)), job))
        ]
        try:
            reports = self._drive(ray, actors, tasks, job)
        finally:
            for actor in actors:
                ray.kill(actor)
        workers = len({report.worker for report in reports})
        return ExecutionReport(
            self.name,
            tuple(sorted(reports, key=lambda r: r.shard.index)),
            workers,
            time.perf_counter() - started,
        )

    def _drive(
        self, ray: Any, actors: list[Any], tasks: Sequence[ShardTask], job: Job
    ) -> list[ShardReport]:
        """Give each idle actor the next shard until every shard has a report; meanwhile,
        forward the busy actors' progress to the job."""
        poller = ProgressPoller(ray, job)
        queue = collections.deque(tasks)
        idle = list(actors)
        running: dict[Any, tuple[Any, ShardTask]] = {}
        tries: dict[int, int] = collections.Counter()
        reports: list[ShardReport] = []
        try:
            while queue or running:
                while queue and idle:
                    actor, task = idle.pop(), queue.popleft()
                    running[actor.run.remote(task)] = (actor, task)
                done, _ = ray.wait(list(running), num_returns=1, timeout=poller.wait_seconds())
                poller.poll(running)
                for ref in done:
                    actor, task = running.pop(ref)
                    try:
                        report: ShardReport = ray.get(ref)
                        reports.append(report)
                        job.progress(ShardProgress(report.shard, report.counts))
                    except ray.exceptions.RayTaskError as err:
                        cause = getattr(err, "cause", None) or err
                        if isinstance(cause, UserError | NotBuilt):
                            raise cause from None
                        failure = _as_failure(task, cause)
                        tries[task.shard.index] += 1
                        if tries[task.shard.index] > self.config.retries:
                            raise failure from None
                        log.warning(
                            "shard failed; running it again from its last commit",
                            shard=task.shard.index,
                            attempt=tries[task.shard.index] + 1,
                            error=str(failure),
                        )
                        queue.append(task)
                    except ray.exceptions.RayActorError as err:
                        raise ShardFailed(
                            task.shard.index,
                            task.shard.count,
                            "a Ray actor",
                            f"its process died more often than max_restarts "
                            f"({self.config.max_restarts}) allows: {_first_line(err)}",
                        ) from None
                    idle.append(actor)
        finally:  # a deliberate stop (SIGTERM, a user error, a shard failed for good)
            _cancel(ray, [*running, *poller.questions])
        return reports

    def _connect(self, ray: Any, job: Job) -> None:
        address = self.config.address
        if address not in (None, "auto"):
            _check_reachable(address, job)
        if ray.is_initialized():  # the Ray this process started or joined already
            return
        try:
            # Unset, Ray is started here ("local"), never a cluster found through
            # RAY_ADDRESS or `ray start`: that is what `address: auto` is for, and a Ray
            # this run starts is one it may end.
            # The application's SIGTERM handling stays (see _sigterm); two lines of no
            # concern to the user (JAX's fork warning, Ray's token note) are not printed.
            with sigterm_kept(), ray_start_quiet():
                context = ray.init(
                    address=address or "local",
                    include_dashboard=False,
                    logging_level="warning",
                    log_to_driver=True,
                    **({} if address is not None else local_resources()),
                )
        except OSError as err:  # a folder a local Ray may not write, or a cluster not reached
            refused = start_refused(err, job.where(""), os.environ) if address is None else None
            if refused is not None:
                raise refused from err
            if not isinstance(err, ConnectionError):
                raise
            raise UserError(
                f"{job.where('address')}: cannot reach a Ray cluster at {address!r}: "
                f"{_first_line(err)}; start one (`ray start --head`), set "
                "run.executor.with.address to its head's HOST:PORT (or ray://HOST:10001), or "
                "leave address unset to start Ray on this machine"
            ) from None
        self._started_ray = True
        if address is None:  # ours: its processes must not outlive this one, however it ends
            self._reaper = RayReaper.start(str(context.address_info["session_dir"]))

    def close(self) -> None:
        if self._started_ray:
            import ray

            ray.shutdown()
            self._started_ray = False
        if self._reaper is not None:
            self._reaper.release()
            self._reaper = None


def _cancel(ray: Any, refs: Sequence[Any]) -> None:
    """Cancel the tasks still pending when the run stops, before their actors are killed.

    Killing an actor under a task it may retry (``max_task_retries``) had Ray's raylet print
    ``Task ShardActor.run failed. There are 3 retries remaining, so the task will be
    retried ...`` after seamline's own ``interrupted (SIGTERM)`` line; a cancelled task is
    not retried, and says nothing. Best effort: the actors are killed next anyway."""
    for ref in refs:
        with contextlib.suppress(Exception):
            ray.cancel(ref)


def _as_failure(task: ShardTask, cause: BaseException) -> ShardFailed:
    if isinstance(cause, ShardFailed):
        return cause
    shard = task.shard
    reason = f"{type(cause).__name__}: {_first_line(cause)}"
    return ShardFailed(shard.index, shard.count, "a Ray actor", reason)


ANSI_COLOUR = re.compile(r"\x1b\[[0-9;]*m")
"""Ray colours the names in its messages (``\x1b[36mray::ShardActor.__init__()\x1b[39m``)."""


def _first_line(error: BaseException) -> str:
    """``error``'s first line, without Ray's colours and with any other control character
    shown (it goes to a log file as often as to a terminal)."""
    text = ANSI_COLOUR.sub("", str(error)).strip()
    return visible(text.splitlines()[0]) if text else type(error).__name__


def _check_reachable(address: str, job: Job) -> None:
    """Fail in seconds, with the place and the fix, when nothing listens at ``address``."""
    host, _, port_text = address.removeprefix("ray://").rpartition(":")  # checked by Config
    try:
        with socket.create_connection((host, int(port_text)), timeout=CONNECT_TIMEOUT):
            pass
    except OSError as err:
        raise UserError(
            f"{job.where('address')}: cannot reach a Ray cluster at {address!r} ({err}); start "
            "one (`ray start --head`) or correct run.executor.with.address; leave it unset to "
            "start Ray on this machine"
        ) from None


def _import_ray(job: Job) -> Any:
    try:
        import ray
    except ImportError:
        raise UserError(f"{job.where('')}: {NOT_INSTALLED}") from None
    return ray


__all__ = [
    "RayExecutor",
    "RayExecutorConfig",
    "ShardActor",
    "driver_paths",
    "merge_paths",
    "thread_caps",
]


def fitting_actors(ray: Any, config: RayExecutorConfig, wanted: int, job: Job) -> int:
    """How many of the ``wanted`` actors the cluster has the CPUs and GPUs for, now.

    An actor Ray cannot place waits for resources that may never come, and the shard it
    was handed waits with it: 8 actors on a 2-CPU machine hung the run forever, without
    a word. The pool is cut to what fits, saying so (a cluster that grows later is not
    waited for); one where not even one actor fits is refused.
    """
    total = ray.cluster_resources()
    fits = [wanted]
    for resource, each in (("CPU", config.cpus_per_actor), ("GPU", config.gpus_per_actor)):
        if each > 0:
            fits.append(int(float(total.get(resource, 0.0)) // each + 1e-9))
    fitting = min(fits)
    if fitting < 1:
        raise UserError(
            f"{job.where('cpus_per_actor')}: the ray executor reserves {config.cpus_per_actor:g} "
            f"CPU and {config.gpus_per_actor:g} GPU per actor, and the Ray cluster has "
            f"{float(total.get('CPU', 0.0)):g} CPUs and {float(total.get('GPU', 0.0)):g} GPUs: "
            "not one actor fits. Lower cpus_per_actor or gpus_per_actor, or give the "
            "cluster more"
        )
    if fitting < wanted:
        log.warning(
            "the Ray cluster has room for fewer actors than asked; running with those",
            asked=wanted,
            actors=fitting,
            cluster_cpus=float(total.get("CPU", 0.0)),
            cpus_per_actor=config.cpus_per_actor,
        )
    return fitting
