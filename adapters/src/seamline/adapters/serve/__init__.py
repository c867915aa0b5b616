"""``seamline serve``: a pipeline's model over HTTP, OpenAI-compatible, batched across clients.

One process, one pipeline. The model side is an in-process
:class:`~seamline.core.embedder.Embedder` (the same registry, trust, negotiation,
verification, seams and telemetry as ``seamline run``); one thread of the server
leads every pass of it, so concurrent requests are packed into the run's token-budget
batches together (dynamic batching), each answered with exactly its own rows.

* :mod:`.limits`: every bound the server keeps, each named in the error it gives;
* :mod:`.errors`: errors in OpenAI's shape (``{"error": {message, type, param, code}}``);
* :mod:`.bodies`: request bodies read (bounded) and validated;
* :mod:`.checking`: where a body is parsed and validated (a large one: off the event loop);
* :mod:`.engine`: the embedder, its leading thread, warm-up and the bounded queue;
* :mod:`.metrics`: the Prometheus instruments, and the monitor that feeds batch sizes;
* :mod:`.index`: ``/v1/search`` over the output the pipeline wrote (``open_index``);
* :mod:`.app`: the routes (Starlette);
* :mod:`.access`: the access log's line of a request in that request's trace;
* :mod:`.open_files`: the limit on open files, raised to fit ``--max-connections``;
* :mod:`.server`: uvicorn on a socket of our own, signals, graceful drain.

See docs/serving.md.
"""

from __future__ import annotations

from seamline.adapters.serve.limits import Limits

__all__ = ["Limits"]
