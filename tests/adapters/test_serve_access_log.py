"""``seamline serve --access-log``: a request's line carries its trace, with tracing on.

uvicorn logged the line after the request's span had ended, so it carried no
``trace_id``: an operator could not go from a slow request in the access log to its
trace. A real server (the ``tiny`` model, spans to a JSON-lines file, JSON log lines),
started from a folder of its own with a relative pipeline path.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.adapters.serving import pipeline_text, serving
from tests.adapters.test_serve import read_spans

TRACE = "trace.jsonl"
CALLER_TRACE, CALLER_SPAN = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"


def access_lines(log: Path) -> list[dict[str, Any]]:
    lines = [json.loads(line) for line in log.read_text().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("logger") == "uvicorn.access"]


def test_an_access_line_carries_its_requests_trace_and_span(tmp_path: Path) -> None:
    telemetry = f"telemetry: {{traces: [jsonl], traces_file: {TRACE}}}\n"
    (tmp_path / "pipeline.yaml").write_text(pipeline_text(extra=telemetry), encoding="utf-8")
    options = ["--access-log", "--log-format", "json"]
    with serving(tmp_path, Path("pipeline.yaml"), options) as server:
        server.wait_ready()
        with server.client() as client:
            traced = client.post(
                "/v1/embeddings",
                json={"input": ["followed from the log"]},
                headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
            )
            refused = client.post("/v1/embeddings", json={"input": []})
        assert traced.status_code == 200, traced.text
        assert refused.status_code == 400
        spans = read_spans(
            tmp_path / TRACE,
            {"POST /v1/embeddings"},
            complete=lambda spans: sum(s["name"] == "POST /v1/embeddings" for s in spans) >= 2,
        )
        assert server.stop() == 0
    requests = {s["span_id"]: s for s in spans if s["name"] == "POST /v1/embeddings"}
    lines = access_lines(server.log)
    posts = [line for line in lines if "POST /v1/embeddings" in line["event"]]
    assert len(posts) == 2, lines
    for line in posts:
        assert line["span_id"] in requests, line
        assert line["trace_id"] == requests[line["span_id"]]["trace_id"], line
    assert posts[0]["trace_id"] == CALLER_TRACE  # the caller's trace, as its span's
    assert '" 400' in posts[1]["event"]  # a refusal is traced too
    health = [line for line in lines if "GET /healthz" in line["event"]]
    assert health, lines
    assert all("trace_id" not in line for line in health), "no span: no ids, as before"
