"""``seamline serve`` over its life: warming up, a full queue, clients that leave, SIGTERM.

Each server here makes its passes wait (``--max-wait-ms 1000``), so that requests
are reliably still queued when the test acts: the queue is full, a client has gone,
a SIGTERM arrives with requests in flight. The model is slow to load (``tiny`` with
``load_seconds``), so that ``/healthz`` is seen saying "not yet".
"""

from __future__ import annotations

import json
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.adapters.serving import (
    SEAMLINE,
    TEXTS,
    Server,
    environment,
    error_of,
    pipeline_text,
    serving,
)
from tests.docs.workdir import ROOT

SLOW_LOAD = "{use: tiny, with: {load_seconds: 3}}"
PATIENT = ["--max-wait-ms", "1000", "--max-queue-texts", "4", "--max-inputs", "4"]


def sample(client: httpx.Client, name: str) -> float:
    """One unlabelled sample of /metrics (0 if absent)."""
    for family in text_string_to_metric_families(client.get("/metrics").text):
        for found in family.samples:
            if found.name == name and not found.labels:
                return float(found.value)
    return 0.0


def wait_until(check: Callable[[], bool], timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


@pytest.fixture(scope="module")
def slow(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server whose model takes 3 s to load and whose passes wait 1 s; not yet ready."""
    folder = tmp_path_factory.mktemp("serve-slow")
    (folder / "slow.yaml").write_text(pipeline_text("slow", SLOW_LOAD), encoding="utf-8")
    with serving(folder, Path("slow.yaml"), PATIENT) as running:
        yield running


def test_healthz_is_503_until_the_model_is_warm_then_200(slow: Server) -> None:
    with slow.client() as client:
        loading = client.get("/healthz")
        early = client.post("/v1/embeddings", json={"input": "too early"})
    assert loading.status_code == 503
    assert loading.json()["status"] == "loading"
    # serving.md showed {"status": "loading"}; the body names the model too
    assert set(loading.json()) == {"status", "model"}
    page = (ROOT / "docs" / "serving.md").read_text(encoding="utf-8")
    assert '`503 {"status": "loading", "model": ...}`' in page
    assert loading.headers["retry-after"] == "1"
    assert early.status_code == 503
    assert error_of(early)["code"] == "not_ready"
    slow.wait_ready()
    with slow.client() as client:
        assert client.get("/healthz").json()["status"] == "ready"
        assert sample(client, "seamline_serve_ready") == 1


def test_past_the_queue_bound_requests_get_429_with_retry_after(slow: Server) -> None:
    slow.wait_ready()
    answers: list[httpx.Response] = []

    def fill_the_queue() -> None:
        with slow.client() as client:
            answers.append(client.post("/v1/embeddings", json={"input": TEXTS[:4]}))

    with slow.client() as watcher:
        first = threading.Thread(target=fill_the_queue)
        first.start()
        wait_until(lambda: sample(watcher, "seamline_serve_queue_texts") == 4)
        refused = watcher.post("/v1/embeddings", json={"input": "one more"})
        first.join(timeout=30)
    assert refused.status_code == 429
    assert refused.headers["retry-after"] == "1"
    error = error_of(refused)
    assert error["code"] == "queue_full"
    assert "--max-queue-texts" in error["message"]
    assert [a.status_code for a in answers] == [200], "what was queued is answered"
    assert len(answers[0].json()["data"]) == 4


def test_a_client_that_leaves_takes_no_batch_slot(slow: Server) -> None:
    slow.wait_ready()
    with slow.client() as watcher:
        batches = sample(watcher, "seamline_serve_batch_examples_count")
        cancelled = sample(watcher, "seamline_serve_cancelled_total")
        with pytest.raises(httpx.ReadTimeout), slow.client(timeout=0.3) as impatient:
            impatient.post("/v1/embeddings", json={"input": ["gone before its batch"]})
        wait_until(lambda: sample(watcher, "seamline_serve_cancelled_total") == cancelled + 1)
        time.sleep(1.5)  # longer than a pass would have waited for it
        assert sample(watcher, "seamline_serve_batch_examples_count") == batches
        assert sample(watcher, "seamline_serve_queue_texts") == 0
        assert watcher.post("/v1/embeddings", json={"input": "still serving"}).status_code == 200


def test_sigterm_answers_the_requests_in_flight_then_exits_0(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pipeline_text("drain"), encoding="utf-8")
    with serving(tmp_path, tmp_path / "p.yaml", ["--max-wait-ms", "1000"]) as server:
        server.wait_ready()
        answers: dict[int, httpx.Response] = {}

        def client_thread(k: int) -> None:
            with server.client() as client:
                answers[k] = client.post("/v1/embeddings", json={"input": TEXTS[k : k + 2]})

        threads = [threading.Thread(target=client_thread, args=(k,)) for k in range(3)]
        for thread in threads:
            thread.start()
        with server.client() as watcher:
            wait_until(lambda: sample(watcher, "seamline_serve_queue_texts") == 6)
        code = server.stop()  # SIGTERM while all three wait for their pass
        for thread in threads:
            thread.join(timeout=30)
    assert code == 0, server.log.read_text()
    assert sorted(answers) == [0, 1, 2]
    for k, answer in answers.items():
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["data"]) == 2, k
    with pytest.raises(httpx.ConnectError), httpx.Client(base_url=server.url) as late:
        late.get("/healthz")


def test_past_the_graceful_timeout_the_request_gets_a_503_and_the_server_exits(
    tmp_path: Path,
) -> None:
    # With --graceful-timeout 2 and a long pass under way, the request was cut with a
    # plain-text 500 and the process ran 70 s more (waiting for the whole pass, the event
    # loop blocked), then exited with a CancelledError traceback in its log. A fraction of
    # a second (1.5) was refused: "Input should be a valid integer", exit 2.
    slow = "{use: tiny, with: {collate_seconds: 0.2}}"
    (tmp_path / "p.yaml").write_text(pipeline_text("long", slow), encoding="utf-8")
    with serving(tmp_path, tmp_path / "p.yaml", ["--graceful-timeout", "1.5"]) as server:
        server.wait_ready()
        thread, answers = long_pass_under_way(server)
        stopped = time.monotonic()
        code = server.stop(timeout=30)
        took = time.monotonic() - stopped
        thread.join(timeout=30)
    log = server.log.read_text()
    assert code == 0, log
    # 1.5-3 s here on 2 CPUs, 5.5 s at load 10; the bug it guards ran 70 s more.
    assert took < 1.5 + 15, f"exited {took:.1f} s after SIGTERM:\n{log}"
    assert "Traceback" not in log, log
    assert len(answers) == 1
    assert answers[0].status_code == 503, answers[0].text
    error = error_of(answers[0])
    assert error["code"] == "not_ready"
    assert "--graceful-timeout" in error["message"]
    # uvicorn's "Cancel 1 running task(s), timeout graceful shutdown exceeded" was logged at
    # error level at every such stop, a designed outcome paging who alerts on level=error.
    lines = [json.loads(line) for line in log.splitlines() if line.startswith("{")]
    assert not [line for line in lines if line["level"] in ("error", "critical")], log
    [cut] = [line for line in lines if line["event"].startswith("--graceful-timeout passed")]
    assert cut["level"] == "warning"
    assert cut["requests_cut_off"] == 1
    assert cut["graceful_timeout_s"] == 1.5


def long_pass_under_way(server: Server) -> tuple[threading.Thread, list[httpx.Response]]:
    """A request of 400 texts (about 100 batches of a slow model: 20 s and more) sent from
    a thread; returns once its first batch has run, with the thread and where its answer
    will be."""
    texts = [f"{TEXTS[6]} {k}" for k in range(400)]
    answers: list[httpx.Response] = []

    def long_request() -> None:
        with server.client() as client:
            answers.append(client.post("/v1/embeddings", json={"input": texts}))

    thread = threading.Thread(target=long_request)
    thread.start()
    with server.client() as watcher:
        wait_until(lambda: sample(watcher, "seamline_serve_batch_examples_count") > 0)
    return thread, answers


def run_serve(folder: Path, *options: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SEAMLINE), "serve", "p.yaml", "--no-compile-cache", *options],
        cwd=folder,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_bad_options_and_a_busy_port_exit_2_with_one_line(tmp_path: Path) -> None:
    (tmp_path / "p.yaml").write_text(pipeline_text("refused"), encoding="utf-8")
    bad = run_serve(tmp_path, "--max-wait-ms", "5000", "--max-inputs", "0")
    assert bad.returncode == 2, bad.stderr
    assert "--max-inputs must be at least 1" in bad.stderr
    assert "--max-wait-ms must be from 0 to 1000" in bad.stderr
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        busy = run_serve(tmp_path, "--port", str(taken.getsockname()[1]))
    assert busy.returncode == 2, busy.stderr
    assert "cannot listen on 127.0.0.1:" in busy.stderr
    assert "Traceback" not in busy.stderr
    assert busy.stdout == "", "nothing announced: it never listened"


@pytest.mark.parametrize(
    ("options", "refusal"),
    [
        (["--port", "99999"], "--port must be from 0 to 65535 (0: any free port), not 99999"),
        (["--port", "65536"], "--port must be from 0 to 65535 (0: any free port), not 65536"),
        (["--port", "-1"], "--port must be from 0 to 65535 (0: any free port), not -1"),
        (["--graceful-timeout", "-5"], "--graceful-timeout must be 0 seconds or more, not -5"),
        (["--graceful-timeout", "nan"], "--graceful-timeout must be 0 seconds or more, not nan"),
    ],
    ids=["99999", "65536", "negative-port", "negative-graceful-timeout", "nan-graceful-timeout"],
)
def test_a_port_out_of_range_or_a_negative_timeout_exits_2(
    tmp_path: Path, options: list[str], refusal: str
) -> None:
    # --port 99999 listened on 34463 (the kernel takes a port modulo 65,536), silently;
    # --graceful-timeout -5 was accepted.
    (tmp_path / "p.yaml").write_text(pipeline_text("refused"), encoding="utf-8")
    refused = run_serve(tmp_path, *options)
    assert refused.returncode == 2, refused.stderr
    assert refused.stderr.strip() == f"error: {refusal}"
    assert refused.stdout == "", "nothing announced: it never listened"


@pytest.mark.parametrize("port", [65_536, 99_999, -1])
def test_bind_refuses_a_port_the_kernel_would_wrap(port: int) -> None:
    from seamline.adapters.serve.server import bind
    from seamline.contracts import UserError

    with pytest.raises(UserError, match=rf"the port must be from 0 to 65535 .*not {port}"):
        bind("127.0.0.1", port).close()
