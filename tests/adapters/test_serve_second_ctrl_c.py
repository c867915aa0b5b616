"""A second Ctrl-C while ``seamline serve`` drains: cut short, yet still released.

uvicorn's answer to a second SIGINT skipped the application's lifespan end: the engine
was never stopped nor the index closed ("Application shutdown complete" never came),
and the lifespan, cancelled as the event loop closed, logged a ``CancelledError``
traceback at error level. The server here has a long pass under way (slow batches)
when the two signals come.
"""

from __future__ import annotations

import signal
import time
from pathlib import Path

from tests.adapters.serving import error_of, pipeline_text, serving
from tests.adapters.test_serve_lifecycle import long_pass_under_way, wait_until


def test_a_second_ctrl_c_cuts_the_wait_short_and_still_releases_the_model(
    tmp_path: Path,
) -> None:
    slow = "{use: tiny, with: {collate_seconds: 0.2}}"
    (tmp_path / "p.yaml").write_text(pipeline_text("long", slow), encoding="utf-8")
    with serving(tmp_path, tmp_path / "p.yaml") as server:
        server.wait_ready()
        thread, answers = long_pass_under_way(server)
        server.process.send_signal(signal.SIGINT)
        wait_until(lambda: "Waiting for connections to close" in server.log.read_text())
        stopped = time.monotonic()
        server.process.send_signal(signal.SIGINT)
        code = server.process.wait(30)
        took = time.monotonic() - stopped
        thread.join(timeout=30)
    log = server.log.read_text()
    assert code == 0, log
    assert "Traceback" not in log, log
    assert "CancelledError" not in log, log
    assert "Application shutdown complete" in log, "the engine stopped, the index closed"
    assert "stopping at once (a second Ctrl-C)" in log, log
    assert took < 5 + 3, f"exited {took:.1f} s after the second Ctrl-C:\n{log}"
    assert len(answers) == 1
    assert answers[0].status_code == 503, answers[0].text
    assert error_of(answers[0])["code"] == "not_ready"
