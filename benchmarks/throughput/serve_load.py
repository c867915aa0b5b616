"""``seamline serve`` under load: N concurrent clients against the offline run, in one run.

::

    .venv/bin/python -m benchmarks.throughput.serve_load [--texts 400] [--chars 600]
        [--clients 1,8,64] [--seconds 15] [--max-wait-ms 2] [--out benchmarks/results]

The texts are the first ``--texts`` documents of the benchmark corpus (repeated past
its 2,252), each cut to its first ``--chars`` characters (at a space), so most fit the
model's 256-token window (``seamline serve`` embeds the first window of a text, a run
every window: tokens/s is the fair comparison). One pipeline (the ``make run`` model,
attention and ``batch_tokens: 512``; a jsonl loader and sink) serves every side:

* ``offline``: ``seamline run`` of the pipeline over the same texts, run twice (the
  first fills the compile cache); the second run's own tokens/s;
* ``encode``: ``Embedder.encode`` of one text at a time in this process (the bare
  single-text latency the 1-client server is compared with), before the server starts;
* ``serve``: ``seamline serve`` of the pipeline, every text sent once to compile every
  shape, then for each number of clients, ``--seconds`` of clients each sending one
  text per request (``httpx``, one connection each) and waiting for its answer:
  texts/s, tokens/s (the answers' ``usage``), p50 and p99 latency;
* ``reference``: the do-it-yourself server (sentence-transformers behind FastAPI, one
  ``encode`` per request, :mod:`._reference_server`) under the same load, when the
  reference venv has torch, sentence-transformers, fastapi and uvicorn; else skipped,
  and the report says so.

The clients run in this process, on the same CPUs as the server: on a small machine
they take a share of it (the report records the load average). Results go to
``results/serve_load.json`` and ``results/serve_load.png``.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import corpus_texts
from benchmarks.common.options import int_list, require_folder
from benchmarks.common.paths import (
    REFERENCE_PYTHON,
    RESULTS,
    ROOT,
    SEAMLINE,
    module_command,
    reference_env,
)
from benchmarks.common.seamline_work import RUN_FORMAT, run_figures, texts_pipeline
from benchmarks.common.tables import print_table, run_context
from seamline.adapters.measure.load import LoadAverages


def offline(pipeline: Path) -> dict[str, Any]:
    """``seamline run`` twice (compile cache warm for the second); its own figures."""
    for _ in range(2):
        done = subprocess.run(
            [str(SEAMLINE), "run", str(pipeline), "--log-level", "warning", *RUN_FORMAT],
            capture_output=True,
            text=True,
            timeout=3600,
            check=True,
            cwd=pipeline.parent,
        )
    figures = run_figures(done.stdout)
    documents, tokens, seconds = figures["documents"], figures["tokens"], figures["seconds"]
    return {
        "documents": documents,
        "tokens": tokens,
        "seconds": seconds,
        "texts_per_s": documents / seconds,
        "tokens_per_s": tokens / seconds,
    }


def bare_encode(pipeline: Path, texts: list[str]) -> dict[str, Any]:
    """One text at a time through ``Embedder.encode``, every shape compiled first; and
    every text in one call (the steady state of a run's batching, without its start)."""
    from seamline.core import Embedder

    with Embedder.from_pipeline(pipeline) as embedder:
        embedder.encode(texts)  # every shape compiled
        started = time.perf_counter()
        bulk = embedder.submit(texts)
        bulk.result()
        bulk_seconds = time.perf_counter() - started
        for text in texts[:5]:
            embedder.encode([text])
        seconds = []
        for text in texts[:50]:
            started = time.perf_counter()
            embedder.encode([text])
            seconds.append(time.perf_counter() - started)
    return {
        "calls": len(seconds),
        "p50_ms": 1000 * statistics.median(seconds),
        "bulk_texts_per_s": len(texts) / bulk_seconds,
        "bulk_tokens_per_s": bulk.tokens / bulk_seconds,
    }


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def one_level(url: str, texts: list[str], clients: int, seconds: float) -> dict[str, Any]:
    """``clients`` clients, each sending one text per request for ``seconds``."""
    import httpx

    latencies: list[float] = []
    tokens = 0
    failures = 0
    deadline = time.perf_counter() + seconds

    async def client(first: int) -> None:
        nonlocal tokens, failures
        async with httpx.AsyncClient(base_url=url, timeout=120) as http:
            k = first
            while time.perf_counter() < deadline:
                started = time.perf_counter()
                answer = await http.post("/v1/embeddings", json={"input": [texts[k % len(texts)]]})
                latencies.append(time.perf_counter() - started)
                if answer.status_code == 200:
                    tokens += answer.json()["usage"]["prompt_tokens"]
                else:
                    failures += 1
                k += clients

    started = time.perf_counter()
    await asyncio.gather(*(client(n) for n in range(clients)))
    elapsed = time.perf_counter() - started
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "failures": failures,
        "seconds": elapsed,
        "texts_per_s": len(latencies) / elapsed,
        "tokens_per_s": tokens / elapsed,
        "p50_ms": 1000 * ordered[len(ordered) // 2],
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }


def wait_ready(url: str, process: subprocess.Popen[str], health: str, timeout: float = 600) -> None:
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            if httpx.get(f"{url}{health}", timeout=5).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise TimeoutError(f"{url} not ready after {timeout} s")


def load_server(
    command: list[str],
    url: str,
    texts: list[str],
    args: argparse.Namespace,
    health: str = "/healthz",
    **popen: Any,
) -> list[dict[str, Any]]:
    """Start a server, send every text once (every shape compiled), then each load level."""
    import httpx

    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True, **popen)
    try:
        wait_ready(url, process, health)
        with httpx.Client(base_url=url, timeout=600) as http:
            for start in range(0, len(texts), 16):
                http.post("/v1/embeddings", json={"input": texts[start : start + 16]})
        levels = []
        for clients in args.clients:
            level = asyncio.run(one_level(url, texts, clients, args.seconds))
            print(f"  {clients} clients: {level}", file=sys.stderr)
            levels.append(level)
        return levels
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)


def reference_ready() -> str | None:
    """Why the do-it-yourself server cannot run here (None: it can)."""
    if not REFERENCE_PYTHON.exists():
        return f"{REFERENCE_PYTHON} is missing (bash tests/golden/make_golden.sh --setup-only)"
    probe = "import fastapi, uvicorn, sentence_transformers, torch"
    done = subprocess.run([str(REFERENCE_PYTHON), "-c", probe], capture_output=True, check=False)
    if done.returncode:
        return f"{REFERENCE_PYTHON} lacks fastapi, uvicorn or sentence-transformers"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--texts", type=int, default=400)
    parser.add_argument("--chars", type=int, default=600)
    parser.add_argument(
        "--clients", type=int_list(1), metavar="N[,N...]", default=[1, 8, 64], help="default 1,8,64"
    )
    parser.add_argument("--seconds", type=float, default=15.0)
    parser.add_argument("--max-wait-ms", type=float, default=2.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    require_folder(args.out)
    started_at, started, load = (
        datetime.datetime.now(datetime.UTC),
        time.perf_counter(),
        LoadAverages(),
    )
    texts = corpus_texts(args.texts, args.chars)
    with tempfile.TemporaryDirectory(prefix="serve-load-") as work:
        folder = Path(work)
        (folder / "texts.jsonl").write_text(
            "".join(json.dumps({"id": f"t{k}", "text": t}) + "\n" for k, t in enumerate(texts)),
            encoding="utf-8",
        )
        pipeline = folder / "pipeline.yaml"
        pipeline.write_text(
            texts_pipeline("serve-load", "texts.jsonl", "out/emb.jsonl"), encoding="utf-8"
        )
        print("offline run...", file=sys.stderr)
        report: dict[str, Any] = {"offline": offline(pipeline)}
        print("bare encode...", file=sys.stderr)
        report["encode"] = bare_encode(pipeline, texts)
        port = free_port()
        command = [str(SEAMLINE), "serve", str(pipeline), "--port", str(port),
                   "--max-wait-ms", str(args.max_wait_ms), "--log-level", "warning"]  # fmt: skip
        print("seamline serve...", file=sys.stderr)
        report["serve"] = load_server(command, f"http://127.0.0.1:{port}", texts, args, cwd=folder)
        why = reference_ready()
        if why is None:
            port = free_port()
            command = module_command(
                "benchmarks.throughput._reference_server", str(port), python=REFERENCE_PYTHON
            )
            env = {**os.environ, **reference_env()}
            print("reference server...", file=sys.stderr)
            report["reference"] = load_server(
                command, f"http://127.0.0.1:{port}", texts, args, "/openapi.json", cwd=ROOT, env=env
            )
        else:
            report["reference"] = None
            report["reference_skipped"] = why
    report["settings"] = {**vars(args), "out": str(args.out), "texts_loaded": len(texts)}
    load.finish()
    report["context"] = run_context(started_at, started, load)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "serve_load.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
    show(report)
    plot(report, args.out / "serve_load.png")
    return 0


def show(report: dict[str, Any]) -> None:
    off = report["offline"]
    rows = [
        [
            "offline seamline run",
            "-",
            f"{off['texts_per_s']:.1f}",
            f"{off['tokens_per_s']:,.0f}",
            "-",
            "-",
        ]
    ]
    encode = report["encode"]
    rows.append(
        ["Embedder.encode, all texts in one call", "-", f"{encode['bulk_texts_per_s']:.1f}",
         f"{encode['bulk_tokens_per_s']:,.0f}", "-", "-"]
    )  # fmt: skip
    rows.append(["Embedder.encode, one text a call", "1", "-", "-", f"{encode['p50_ms']:.1f}", "-"])
    for side in ("serve", "reference"):
        for level in report.get(side) or []:
            rows.append(
                [
                    side,
                    str(level["clients"]),
                    f"{level['texts_per_s']:.1f}",
                    f"{level['tokens_per_s']:,.0f}",
                    f"{level['p50_ms']:.1f}",
                    f"{level['p99_ms']:.1f}",
                ]
            )
    print_table(
        "seamline serve under load",
        ["side", "clients", "texts/s", "tokens/s", "p50 ms", "p99 ms"],
        rows,
    )
    if report.get("reference_skipped"):
        print(f"reference server not measured: {report['reference_skipped']}")


def plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    for side in ("serve", "reference"):
        levels = report.get(side) or []
        if levels:
            clients = [lv["clients"] for lv in levels]
            left.plot(clients, [lv["tokens_per_s"] for lv in levels], marker="o", label=side)
            right.plot(clients, [lv["p99_ms"] for lv in levels], marker="o", label=side)
    left.axhline(
        report["offline"]["tokens_per_s"], linestyle="--", color="gray", label="offline run"
    )
    left.set(xscale="log", xlabel="concurrent clients", ylabel="tokens/s", title="throughput")
    right.set(
        xscale="log",
        yscale="log",
        xlabel="concurrent clients",
        ylabel="p99 latency (ms)",
        title="p99 latency",
    )
    left.legend()
    right.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)


if __name__ == "__main__":
    sys.exit(main())
